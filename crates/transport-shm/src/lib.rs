//! The shm transport of wanmpi: ranks of one job on one host exchange frames
//! through shared memory instead of loopback TCP.
//!
//! - **Rings** (`ring`): one single-producer/single-consumer ring per ordered
//!   pair of ranks, carrying every channel in send order (so per-channel
//!   order holds, and more). Frames are whole records, never split; the
//!   reader hands them to the engine in place.
//! - **Memory** (`inbound`, `slot`): each rank owns one memfd, its inbound
//!   memory, with a slot (a 512-byte header, packed with the others, and a
//!   ring) per local sender; a sender maps only its own slot. Nothing is
//!   reserved: a page costs memory once written, so idle pairs cost their
//!   header's share of a page and a pair of short messages a page or two
//!   per direction (the ring's reader does not even read a ring's data
//!   before its first record). The ring size shrinks as the host fills
//!   (`ShmOptions::ring_for`: 32 MiB of rings into a rank at most, 4 MiB to
//!   64 KiB per ring), which bounds the worst case, every ring full.
//! - **No names** (`setup`, `endpoint`, `proc_fd`): a rank publishes its
//!   pid, fd numbers and a random token through the job's authenticated
//!   key/value service; peers open `/proc/<pid>/fd/<n>`, which the kernel
//!   allows the same user only, and check owner, kind, size, seals and
//!   token before use. Nothing exists in /dev/shm or any directory for
//!   another user to pre-create, find or open, and nothing outlives the
//!   job's processes, however they end.
//! - **Wake-up** (`wake`, protocol in `transport`): one pipe "doorbell" per
//!   rank, its readiness fd. Writers ring it only when the reader armed
//!   (said it may sleep); `ShmOptions::arm_after` trades that syscall per
//!   message of a busy-polling reader against waking raw-fd sleepers.
//! - **Liveness** (`liveness`): the peers' pids (from their endpoints),
//!   watched through pidfds; `shutdown` sets a closed flag first, so a peer
//!   tells a finished rank from a crashed one. Corrupt ring content is a
//!   lost peer, not a crash.
//!
//! - **Single copy** (`Transport::local_process`): the pid each peer's
//!   setup checked, while the peer is up. With it the runtime reads long
//!   messages (from 1 MiB on a host with more ranks than cores, by default) straight out of the sender's
//!   memory with `process_vm_readv` (the engine's `single_copy.rs`, the
//!   runtime's `local_read.rs`): one copy instead of two through a ring;
//!   where the kernel refuses, the ring carries them (docs/transports.md
//!   "Long messages: one copy").
//!
//! What it is not: it serves only the peers on this host (combine it with
//! tcp in a composite for the others); a frame it carries is copied twice
//! (into the ring, and out of it by the engine), which is why long
//! messages skip it when they can; it trusts the peers' *content* (same job, same user) but
//! not their lengths, which are checked before any read. The ranks of a
//! host must share a pid namespace and see it in /proc (liveness and
//! set-up by pid).

mod barrier;
mod endpoint;
#[doc(hidden)]
pub mod fuzzing;
mod inbound;
mod liveness;
mod options;
pub mod proc_fd;
mod ring;
mod setup;
mod slot;
mod transport;
mod wake;

pub use options::{ShmOptions, DEFAULT_MAX_FRAME, DEFAULT_RING, DEFAULT_RING_BUDGET, ENV_ARM_AFTER, ENV_RING};
pub use ring::RingError;
pub use setup::{setup, setup_elsewhere};
pub use transport::ShmTransport;
pub use wanmpi_transport::{Caps, Incoming, PeerId, SendStatus, Transport, TransportError};
