//! UDP-ECV: the send string in one datagram; a datagram back holding the receive string
//! passes (others are ignored until the timeout).

use super::{Outcome, contains};

#[derive(Debug)]
pub struct UdpEcvProbe {
    send: Vec<u8>,
    recv: Vec<u8>,
    started: u64,
}

impl UdpEcvProbe {
    pub fn new(send: &[u8], recv: &[u8], now: u64) -> Self {
        Self {
            send: send.to_vec(),
            recv: recv.to_vec(),
            started: now,
        }
    }

    pub fn request(&self) -> &[u8] {
        &self.send
    }

    pub fn on_datagram(&mut self, data: &[u8], now: u64) -> Option<Outcome> {
        contains(data, &self.recv).then(|| Outcome::passed(self.started, now))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_matching_datagram_decides() {
        let mut p = UdpEcvProbe::new(b"hello", b"backend-", 10);
        assert_eq!(p.request(), b"hello");
        assert_eq!(p.on_datagram(b"nope", 20), None);
        assert_eq!(
            p.on_datagram(b"backend-1\n", 30),
            Some(Outcome::Passed { response_us: 20 })
        );
    }
}
