//! # engine — Fulcrum's data plane and daemon
//!
//! Per packet (the workers):
//! * [`wire`] — byte views of Ethernet, ARP, IPv4, TCP, UDP and ICMP (offsets private to each
//!   header), validated parsing, in-place rewrites with incremental checksums, partial
//!   checksums completed, the frames the engine builds (RSTs, probes, ARP requests).
//! * [`flow`] — the flow table (two keys per flow, TCP progress, idle timeouts, sweeps).
//! * [`nat`] — SNAT ports per worker; [`neigh`] — ARP neighbours, one table for all workers;
//!   [`rss`] — the Toeplitz hash and indirection table of RSS-aware steering.
//! * [`worker`] — bursts in stages (parse, look up, select, rewrite), downStateFlush, ARP,
//!   the monitor core's frames; the [`worker::Port`] trait and the run loop `fulcrumd` runs
//!   over AF_XDP and tests run over the in-memory port; every drop counted ([`verdict`]).
//! * [`lb`] — the selection core: NetScaler's methods over immutable pools.
//! * [`persist`] — SOURCEIP persistence sessions shared by the workers.
//! * [`counters`] — per-core, lock-free service and vserver counters with 14-second windows.
//!
//! Around them:
//! * [`tables`] — the control plane's compile step: the configuration (ctl's) becomes the
//!   runtime tables the workers index; service and vserver ids, reused once free;
//!   [`addr_index`] — which addresses are ours, one probe a frame.
//! * [`control`] — the control plane: commands applied atomically and published as
//!   generations, drains, `show`/`stat`, the control socket.
//! * [`drain`] — `disable service` with a delay or `-graceFul`; [`rates`] — `stat` rates.
//! * [`monitoring`] — runs the monitor core (the `monitors` crate) beside the workers,
//!   converting the configuration into its targets.
//! * [`xdp`] — the AF_XDP layer: rings, the UMEM a worker's ports share, sockets whose
//!   errors never panic, and the engine's own XDP program (frames to VIPs and SNIPs to the
//!   engine, the rest to the kernel); [`xsk`] — the AF_XDP [`worker::Port`]; [`portset`] —
//!   the programs of the profile's devices and each worker's ports; [`nic`] — MAC, partial
//!   checksums, RSS read through ethtool.
//! * [`daemon`], [`cli`] (its flags), [`profile`], [`metrics`], [`replay`], [`l2fwd`] (the I/O floor),
//!   [`clock`] (the one clock, passed down), [`isn_secret`] (the sequence-number secret
//!   kept across restarts), [`error`] (the one error type), [`logging`]
//!   (levels, targets, journald priorities), [`notify`] (systemd's readiness protocol).
//!
//! ## Layering (what may depend on what)
//! * The data path — `wire`, `flow`, `nat`, `neigh`, `rss`, `verdict`, `lb`, `counters`,
//!   `persist`, `worker` — knows no command language: it names nothing of `ctl` and takes the engine's
//!   own runtime types. Only `tables` (the compile step), `control`, `monitoring`, `replay`,
//!   `metrics` and `daemon` read `ctl`'s configuration.
//! * No module outside `wire` indexes header bytes; everything reads and writes frames
//!   through its views and helpers.
//! * `wire` depends on `verdict` only; `worker` on everything of the data path; `xsk`
//!   implements `worker::Port` over `xdp`, and only `daemon` and `portset` use them.
//!   `unsafe` lives in `xdp` (rings, UMEM, libbpf), `xsk`'s neighbours `nic` (ethtool),
//!   `worker::waker` (eventfd, poll) and `flow` (cache prefetches, huge-page advice for the
//!   table), each block behind a safe API.
//! * Nothing below `daemon` reads a clock: time comes in as numbers from [`clock::Clock`].
//! * `monitors` depends on no other crate of the workspace; `ctl` on none either; `engine`
//!   on both.

pub mod addr_index;
pub mod cli;
pub mod clock;
pub mod control;
pub mod counters;
pub mod daemon;
pub mod drain;
pub mod error;
pub mod flow;
pub mod isn_secret;
/// What the monitor core publishes (lives in the monitors crate).
pub use monitors::publish as health;
pub mod l2fwd;
pub mod lb;
pub mod logging;
pub mod metrics;
pub mod monitoring;
pub mod nat;
pub mod neigh;
pub mod nic;
pub mod notify;
pub mod persist;
pub mod portset;
pub mod profile;
pub mod rates;
pub mod replay;
pub mod rss;
pub mod siphash;
pub mod syncookie;
pub mod tables;
pub mod verdict;
pub mod wire;
pub mod worker;
pub mod xdp;
pub mod xsk;
