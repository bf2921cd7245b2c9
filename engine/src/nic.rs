//! What the engine reads of a NIC from the kernel: its MAC address, whether its frames can
//! carry partial checksums, and its RSS (hash fields, Toeplitz key, indirection table)
//! through the ethtool interface.

use crate::error::EngineError;

/// The MAC address of an interface.
pub fn mac_of(ifname: &str) -> Result<crate::wire::Mac, EngineError> {
    let path = format!("/sys/class/net/{ifname}/address");
    let text = std::fs::read_to_string(&path).map_err(|e| EngineError::io(&path, e))?;
    let unreadable = || EngineError::io(&path, std::io::ErrorKind::InvalidData.into());
    let mut mac = [0u8; 6];
    let parts: Vec<&str> = text.trim().split(':').collect();
    if parts.len() != 6 {
        return Err(unreadable());
    }
    for (m, p) in mac.iter_mut().zip(parts) {
        *m = u8::from_str_radix(p, 16).map_err(|_| unreadable())?;
    }
    Ok(mac)
}

/// Whether frames received on `ifname` can hold partial checksums: on virtual devices (veth
/// and the like, which have no `device` in sysfs) a local sender's checksum offload leaves
/// them to the receiver, and so can a virtio host; frames from a physical NIC's wire always
/// carry complete ones.
pub fn may_carry_partial_checksums(ifname: &str) -> bool {
    let driver = std::fs::read_link(format!("/sys/class/net/{ifname}/device/driver"));
    match driver {
        Ok(link) => link.file_name().is_some_and(|d| d == "virtio_net"),
        Err(_) => true,
    }
}

/// How many receive queues `ifname` has now (`/sys/class/net/IF/queues/rx-N`; `ethtool -L`
/// changes it), or `None` if sysfs does not say.
pub fn rx_queues(ifname: &str) -> Option<u32> {
    let dir = std::fs::read_dir(format!("/sys/class/net/{ifname}/queues")).ok()?;
    let n = dir
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with("rx-"))
        .count();
    u32::try_from(n).ok()
}

/// The name of the driver behind `ifname` (`veth`, `ixgbe`, …), for messages.
pub fn driver_of(ifname: &str) -> String {
    let link = std::fs::read_link(format!("/sys/class/net/{ifname}/device/driver"));
    match link {
        Ok(l) => l
            .file_name()
            .map_or_else(|| "unknown".into(), |d| d.to_string_lossy().into_owned()),
        // Virtual devices have no `device`; their kind says what they are.
        Err(_) => std::fs::read_to_string(format!("/sys/class/net/{ifname}/uevent"))
            .ok()
            .and_then(|u| {
                u.lines()
                    .find_map(|l| l.strip_prefix("DEVTYPE=").map(str::to_owned))
            })
            .unwrap_or_else(|| "virtual".into()),
    }
}

/// `ETHTOOL_GRXFH`, `ETHTOOL_GRSSH` and what they carry (linux/ethtool.h).
const ETHTOOL_GRXFH: u32 = 0x29;
const ETHTOOL_GRSSH: u32 = 0x46;
const TCP_V4_FLOW: u32 = 0x01;
const UDP_V4_FLOW: u32 = 0x02;
/// Source and destination address, and both ports: the 4-tuple.
const RXH_FOUR_TUPLE: u64 = (1 << 4) | (1 << 5) | (1 << 6) | (1 << 7);
const ETH_RSS_HASH_TOP: u8 = 1;
/// `struct ethtool_rxfh` up to its `rss_config[]`.
const RXFH_HEADER: usize = 24;

/// One ethtool request on `ifname`; `data` holds the command's struct (its first four bytes
/// the command) and receives the answer.
fn ethtool(ifname: &str, data: &mut [u8]) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let name = ifname.as_bytes();
    if name.len() >= libc::IFNAMSIZ {
        return Err(std::io::ErrorKind::InvalidInput.into());
    }
    // Any socket of the namespace carries ethtool requests; this one sends nothing.
    let socket = std::net::UdpSocket::bind("0.0.0.0:0")?;
    // SAFETY: `ifreq` is plain old data; all zeroes is a valid value.
    let mut request: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, src) in request.ifr_name.iter_mut().zip(name) {
        *dst = *src as libc::c_char;
    }
    request.ifr_ifru.ifru_data = data.as_mut_ptr().cast();
    // SAFETY: SIOCETHTOOL reads `request` and the command struct `ifru_data` points to,
    // which is `data`: alive and exclusively borrowed for the call, as large as the command
    // the caller wrote into it says.
    let rc = unsafe { libc::ioctl(socket.as_raw_fd(), libc::SIOCETHTOOL, &mut request) };
    if rc < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Whether the NIC hashes `flow_type` frames over their 4-tuple.
fn hashes_four_tuple(ifname: &str, flow_type: u32) -> std::io::Result<bool> {
    // struct ethtool_rxnfc: cmd, flow_type, data (u64), then fields GRXFH leaves alone.
    let mut rxnfc = [0u8; 192];
    rxnfc[..4].copy_from_slice(&ETHTOOL_GRXFH.to_ne_bytes());
    rxnfc[4..8].copy_from_slice(&flow_type.to_ne_bytes());
    ethtool(ifname, &mut rxnfc)?;
    let mut fields = [0u8; 8];
    fields.copy_from_slice(&rxnfc[8..16]);
    Ok(u64::from_ne_bytes(fields) & RXH_FOUR_TUPLE == RXH_FOUR_TUPLE)
}

/// The RSS of an `ETHTOOL_GRSSH` answer: Toeplitz, its indirection table and key.
pub fn rss_from_rxfh(answer: &[u8]) -> Option<crate::rss::Rss> {
    let word = |at: usize| -> Option<u32> {
        Some(u32::from_ne_bytes(answer.get(at..at + 4)?.try_into().ok()?))
    };
    let (indir, key) = (word(8)? as usize, word(12)? as usize);
    if *answer.get(16)? != ETH_RSS_HASH_TOP || indir == 0 {
        return None;
    }
    let table = answer.get(RXFH_HEADER..RXFH_HEADER + indir * 4)?;
    let indirection = table
        .chunks_exact(4)
        .map(|c| u32::from_ne_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    let key = answer.get(RXFH_HEADER + indir * 4..RXFH_HEADER + indir * 4 + key)?;
    Some(crate::rss::Rss {
        toeplitz: crate::rss::Toeplitz::new(key)?,
        indirection,
    })
}

/// The NIC's RSS, when the engine can compute it for every TCP and UDP frame: Toeplitz over
/// the 4-tuple. `Ok(None)` when the device has no RSS (veth) or hashes otherwise.
pub fn read_rss(ifname: &str) -> Result<Option<crate::rss::Rss>, EngineError> {
    let unsupported = |e: &std::io::Error| {
        matches!(
            e.raw_os_error(),
            Some(libc::EOPNOTSUPP) | Some(libc::EINVAL)
        )
    };
    let fail = |e: std::io::Error| EngineError::Xsk {
        ifname: ifname.to_owned(),
        queue: 0,
        what: "cannot read the RSS configuration",
        detail: e.to_string(),
    };
    for flow in [TCP_V4_FLOW, UDP_V4_FLOW] {
        match hashes_four_tuple(ifname, flow) {
            Ok(true) => {}
            Ok(false) => return Ok(None),
            Err(e) if unsupported(&e) => return Ok(None),
            Err(e) => return Err(fail(e)),
        }
    }
    let mut sizes = [0u8; RXFH_HEADER];
    sizes[..4].copy_from_slice(&ETHTOOL_GRSSH.to_ne_bytes());
    match ethtool(ifname, &mut sizes) {
        Ok(()) => {}
        Err(e) if unsupported(&e) => return Ok(None),
        Err(e) => return Err(fail(e)),
    }
    let word =
        |at: usize| u32::from_ne_bytes([sizes[at], sizes[at + 1], sizes[at + 2], sizes[at + 3]]);
    let (indir, key) = (word(8) as usize, word(12) as usize);
    let mut answer = vec![0u8; RXFH_HEADER + indir * 4 + key];
    answer[..4].copy_from_slice(&ETHTOOL_GRSSH.to_ne_bytes());
    answer[8..12].copy_from_slice(&(indir as u32).to_ne_bytes());
    answer[12..16].copy_from_slice(&(key as u32).to_ne_bytes());
    ethtool(ifname, &mut answer).map_err(fail)?;
    Ok(rss_from_rxfh(&answer))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_rxfh_answer_becomes_the_rss() {
        let key = crate::rss::MICROSOFT_KEY;
        let mut answer = vec![0u8; RXFH_HEADER + 4 * 4 + key.len()];
        answer[8..12].copy_from_slice(&4u32.to_ne_bytes());
        answer[12..16].copy_from_slice(&(key.len() as u32).to_ne_bytes());
        answer[16] = ETH_RSS_HASH_TOP;
        for (i, q) in [0u32, 1, 0, 1].iter().enumerate() {
            answer[RXFH_HEADER + i * 4..RXFH_HEADER + i * 4 + 4].copy_from_slice(&q.to_ne_bytes());
        }
        answer[RXFH_HEADER + 16..].copy_from_slice(&key);
        let rss = rss_from_rxfh(&answer).unwrap();
        assert_eq!(rss.indirection, [0, 1, 0, 1]);
        assert_eq!(rss.toeplitz, crate::rss::Toeplitz::new(&key).unwrap());
        answer[16] = 2; // XOR, not Toeplitz
        assert!(rss_from_rxfh(&answer).is_none());
        assert!(rss_from_rxfh(&answer[..20]).is_none(), "truncated");
    }

    #[test]
    fn a_veth_has_no_rss_and_says_so() {
        // The loopback device stands in for any device without RSS.
        assert!(matches!(read_rss("lo"), Ok(None)), "{:?}", read_rss("lo"));
    }
}
