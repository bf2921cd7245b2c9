//! Fulcrum's AF_XDP layer, over libbpf's `xsk.c` for setup only (UMEM registration, socket
//! creation and binding, ring mapping) and its own code for everything per packet:
//!
//! * `ring` — the fill, completion, RX and TX rings (acquire/release atomics, batches);
//! * `umem` — the frames' memory, one per worker, shared by its ports' sockets;
//! * `socket` — a socket on one queue, the TX kick and RX wakeup with every errno sorted
//!   into "retry", "busy" or "broken" (never a panic);
//! * `program` — the engine's own XDP program (`engine/bpf/steer.c`): frames to the
//!   engine's addresses go to its sockets, everything else to the kernel.

pub mod program;
pub mod ring;
pub mod socket;
pub mod umem;

pub use program::{Attach, Owned, Program, ProgramError};
pub use socket::{Copying, Kick, Socket, classify};
pub use umem::{Frame, Umem};
