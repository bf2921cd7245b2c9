//! The engine's XDP program on one device (`engine/bpf/steer.c`): loaded from the object
//! compiled at build time, attached in the profile's mode, detached when dropped. Its maps
//! are the queues' sockets and the addresses the engine owns.

use std::collections::HashSet;
use std::ffi::CString;
use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, FromRawFd, RawFd};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use libbpf_sys::{
    BPF_ANY, XDP_FLAGS_DRV_MODE, XDP_FLAGS_SKB_MODE, XDP_FLAGS_UPDATE_IF_NOEXIST,
    bpf_map_delete_elem, bpf_map_update_elem, bpf_object, bpf_object__close,
    bpf_object__find_map_fd_by_name, bpf_object__find_program_by_name, bpf_object__load,
    bpf_object__open_mem, bpf_program__fd, bpf_set_link_xdp_fd, libbpf_get_error,
};
use libbpf_sys::{
    bpf_get_link_xdp_id, bpf_obj_get_info_by_fd, bpf_prog_get_fd_by_id, bpf_prog_info,
};

/// The object clang built from `bpf/steer.c`.
static OBJECT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/steer.o"));
/// The program's name in `steer.c` (the kernel keeps its first 15 bytes).
const PROGRAM_NAME: &std::ffi::CStr = c"fulcrum_steer";
/// As in `steer.c`.
pub const MAX_QUEUES: u32 = 256;
pub const MAX_OWNED: usize = 4096;

/// Where the program runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Attach {
    /// Generic XDP, in the kernel's receive path after the skb is built: any device.
    Generic,
    /// In the driver, before an skb exists: drivers with XDP support (veth has it).
    Driver,
}

impl Attach {
    fn flags(self) -> u32 {
        match self {
            Self::Generic => XDP_FLAGS_SKB_MODE,
            Self::Driver => XDP_FLAGS_DRV_MODE,
        }
    }
}

/// What an owned address is, as the program's map records it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Owned {
    Snip = 1,
    Vip = 2,
    /// A service that sees clients' own addresses (USIP): its replies, addressed to
    /// clients, are the engine's too (matched on their source).
    UsipSource = 3,
}

/// Why the program is not running.
#[derive(Debug)]
pub struct ProgramError {
    pub what: &'static str,
    pub detail: std::io::Error,
}

impl std::fmt::Display for ProgramError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.what, self.detail)
    }
}

fn fail(what: &'static str, rc: i64) -> ProgramError {
    ProgramError {
        what,
        detail: std::io::Error::from_raw_os_error(rc.unsigned_abs() as i32),
    }
}

/// The program attached to one device.
#[derive(Debug)]
pub struct Program {
    ifname: String,
    ifindex: i32,
    attach: Attach,
    attached: AtomicBool,
    object: *mut bpf_object,
    xsks: RawFd,
    owned_map: RawFd,
    /// What the map holds (the map itself is only written here).
    owned: Mutex<HashSet<(u32, Owned)>>,
}

// SAFETY: libbpf's object is only closed on drop; the maps are written through their fds
// (system calls, safe from any thread) under `owned`'s lock.
unsafe impl Send for Program {}
// SAFETY: as above: no method touches the object but `drop`.
unsafe impl Sync for Program {}

pub fn ifindex(ifname: &str) -> Option<i32> {
    let name = CString::new(ifname).ok()?;
    // SAFETY: `name` is a valid NUL-terminated string that outlives the call.
    let index = unsafe { libc::if_nametoindex(name.as_ptr()) };
    (index != 0).then_some(index as i32)
}

impl Program {
    /// Loads the program and attaches it to `ifname`; EBUSY when a program is attached
    /// already (another fulcrumd, or an AF_XDP program of someone else).
    pub fn attach(ifname: &str, attach: Attach) -> Result<Self, ProgramError> {
        let ifindex =
            ifindex(ifname).ok_or_else(|| fail("no such interface", libc::ENODEV.into()))?;
        // libelf reads the object in place: give it an aligned copy.
        let mut aligned = vec![0u64; OBJECT.len().div_ceil(8)];
        // SAFETY: `aligned` holds at least `OBJECT.len()` bytes; the regions do not overlap.
        unsafe {
            std::ptr::copy_nonoverlapping(
                OBJECT.as_ptr(),
                aligned.as_mut_ptr().cast::<u8>(),
                OBJECT.len(),
            )
        };
        // SAFETY: the buffer is alive for the call (libbpf copies what it keeps); no options.
        let object = unsafe {
            bpf_object__open_mem(
                aligned.as_ptr().cast(),
                OBJECT.len() as u64,
                std::ptr::null(),
            )
        };
        // SAFETY: libbpf's way to read an error out of a returned pointer.
        let rc = unsafe { libbpf_get_error(object.cast()) };
        if rc != 0 || object.is_null() {
            return Err(fail("cannot open the XDP object", rc));
        }
        let mut program = Self {
            ifname: ifname.to_owned(),
            ifindex,
            attach,
            attached: AtomicBool::new(false),
            object,
            xsks: -1,
            owned_map: -1,
            owned: Mutex::new(HashSet::new()),
        };
        // SAFETY: `object` is the object just opened.
        let rc = unsafe { bpf_object__load(object) };
        if rc != 0 {
            return Err(fail("the kernel refused the XDP program", rc.into()));
        }
        let find = |name: &str| -> Result<RawFd, ProgramError> {
            let name = CString::new(name).map_err(|_| fail("bad map name", libc::EINVAL.into()))?;
            // SAFETY: a loaded object and a NUL-terminated name.
            let fd = unsafe { bpf_object__find_map_fd_by_name(object, name.as_ptr()) };
            if fd < 0 {
                return Err(fail("the XDP object lacks a map", fd.into()));
            }
            Ok(fd)
        };
        program.xsks = find("fulcrum_xsks")?;
        program.owned_map = find("fulcrum_owned")?;
        let name = PROGRAM_NAME;
        // SAFETY: a loaded object and a NUL-terminated name.
        let prog = unsafe { bpf_object__find_program_by_name(object, name.as_ptr()) };
        if prog.is_null() {
            return Err(fail(
                "the XDP object lacks its program",
                libc::ENOENT.into(),
            ));
        }
        // SAFETY: `prog` belongs to the loaded object.
        let fd = unsafe { bpf_program__fd(prog) };
        // SAFETY: a netlink request naming our device and program fd; no memory is shared.
        let mut rc = unsafe {
            bpf_set_link_xdp_fd(ifindex, fd, attach.flags() | XDP_FLAGS_UPDATE_IF_NOEXIST)
        };
        if (rc == -libc::EBUSY || rc == -libc::EEXIST) && attached_is_ours(ifindex, attach) {
            // A fulcrumd that was killed left its program behind (nothing detaches a netlink
            // attachment when its process dies); the caller holds the port's lock, so no
            // other fulcrumd uses it: replace it.
            log::warn!(target: "xdp",
                "{ifname}: replacing the XDP program a previous fulcrumd left attached"
            );
            // SAFETY: as above; without UPDATE_IF_NOEXIST the kernel swaps the programs.
            rc = unsafe { bpf_set_link_xdp_fd(ifindex, fd, attach.flags()) };
        }
        if rc != 0 {
            return Err(fail("cannot attach the XDP program", rc.into()));
        }
        program.attached.store(true, Ordering::Relaxed);
        Ok(program)
    }

    pub fn ifname(&self) -> &str {
        &self.ifname
    }

    /// Frames of `queue` the engine owns go to the socket `fd` from now on.
    pub fn add_socket(&self, queue: u32, fd: RawFd) -> Result<(), ProgramError> {
        if queue >= MAX_QUEUES {
            return Err(fail(
                "queue beyond the XDP program's socket map",
                libc::E2BIG.into(),
            ));
        }
        // SAFETY: key and value are live u32s of the map's sizes.
        let rc = unsafe {
            bpf_map_update_elem(
                self.xsks,
                (&raw const queue).cast(),
                (&raw const fd).cast(),
                BPF_ANY.into(),
            )
        };
        if rc != 0 {
            return Err(fail("cannot add the socket to the XDP program", rc.into()));
        }
        Ok(())
    }

    /// Makes the map of owned addresses `wanted`: new ones first, then those gone (a frame
    /// to an address in both configurations always reaches the engine). All or nothing: on
    /// failure the map is as it was.
    pub fn set_owned(&self, wanted: &HashSet<(Ipv4Addr, Owned)>) -> Result<(), ProgramError> {
        if wanted.len() > MAX_OWNED {
            return Err(fail(
                "more addresses than the XDP program holds",
                libc::E2BIG.into(),
            ));
        }
        let wanted: HashSet<(u32, Owned)> = wanted
            .iter()
            .map(|(a, k)| (u32::from_ne_bytes(a.octets()), *k))
            .collect();
        let mut owned = self.owned.lock().unwrap_or_else(|e| e.into_inner());
        let mut added = Vec::new();
        for &(key, kind) in wanted.difference(&owned) {
            let rc = self.insert(key, kind);
            if rc != 0 {
                for &(key, _) in &added {
                    self.remove(key);
                }
                for &(key, kind) in owned.iter() {
                    // Restoring what the map held a moment ago cannot run out of room.
                    let _ = self.insert(key, kind);
                }
                return Err(fail("cannot update the XDP program's addresses", rc.into()));
            }
            added.push((key, kind));
        }
        for &(key, _) in owned.difference(&wanted) {
            if !wanted.iter().any(|(k, _)| *k == key) {
                self.remove(key);
            }
        }
        *owned = wanted;
        Ok(())
    }

    /// Puts `key` in the owned map; the libbpf return code (0: done).
    fn insert(&self, key: u32, kind: Owned) -> i32 {
        let value = kind as u8;
        // SAFETY: key and value are live values of the map's sizes.
        unsafe {
            bpf_map_update_elem(
                self.owned_map,
                (&raw const key).cast(),
                (&raw const value).cast(),
                BPF_ANY.into(),
            )
        }
    }

    fn remove(&self, key: u32) {
        // SAFETY: the key is a live u32 of the map's key size.
        unsafe { bpf_map_delete_elem(self.owned_map, (&raw const key).cast()) };
    }

    /// Detaches the program; frames go to the kernel only.
    pub fn detach(&self) -> Result<(), ProgramError> {
        if !self.attached.swap(false, Ordering::Relaxed) {
            return Ok(());
        }
        // SAFETY: a netlink request naming our device; fd -1 detaches the program attached
        // in our mode.
        let rc = unsafe { bpf_set_link_xdp_fd(self.ifindex, -1, self.attach.flags()) };
        if rc != 0 {
            return Err(fail("cannot detach the XDP program", rc.into()));
        }
        Ok(())
    }
}

/// Whether the XDP program attached to `ifindex` in `attach` mode is the engine's (by name).
fn attached_is_ours(ifindex: i32, attach: Attach) -> bool {
    let mut id = 0u32;
    // SAFETY: a netlink query writing one u32 into `id`, which outlives the call.
    if unsafe { bpf_get_link_xdp_id(ifindex, &mut id, attach.flags()) } != 0 || id == 0 {
        return false;
    }
    // SAFETY: asks the kernel for a descriptor of program `id`; no memory is passed.
    let fd = unsafe { bpf_prog_get_fd_by_id(id) };
    if fd < 0 {
        return false;
    }
    // SAFETY: `fd` is the descriptor just returned, owned here and closed when this drops.
    let fd = unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) };
    // SAFETY: all-zero is a valid `bpf_prog_info` (integers and arrays).
    let mut info: bpf_prog_info = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<bpf_prog_info>() as u32;
    // SAFETY: the kernel writes at most `len` bytes into `info`, exclusively borrowed here.
    let rc = unsafe { bpf_obj_get_info_by_fd(fd.as_raw_fd(), (&raw mut info).cast(), &mut len) };
    if rc != 0 {
        return false;
    }
    let name: Vec<u8> = info
        .name
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    name == PROGRAM_NAME.to_bytes()
}

impl Drop for Program {
    fn drop(&mut self) {
        if let Err(e) = self.detach() {
            log::error!(target: "xdp", "{}: {e}", self.ifname);
        }
        // SAFETY: the object was opened by `attach` and is closed once, here.
        unsafe { bpf_object__close(self.object) };
    }
}
