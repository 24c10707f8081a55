//! The shm transport of wanmpi: ranks of one job on one host exchange frames
//! through shared memory instead of loopback TCP.
//!
//! - **Rings** (`ring`): one single-producer/single-consumer ring per ordered
//!   pair of ranks, carrying every channel in send order (so per-channel
//!   order holds, and more). Frames are whole records, never split; the
//!   reader hands them to the engine in place.
//! - **Segments** (`segment`): each ring lives in a file under /dev/shm
//!   (`wanmpi-shm-<job key>-<writer>-<reader>`) that either side may create;
//!   it is unlinked as soon as both sides mapped it, so a killed job leaves
//!   nothing behind.
//! - **Wake-up** (`wake`, protocol in `transport`): one FIFO "doorbell" per
//!   rank, its readiness fd. Writers ring it only when the reader armed
//!   (said it may sleep); `ShmOptions::arm_after` trades that syscall per
//!   message of a busy-polling reader against waking raw-fd sleepers.
//! - **Liveness** (`liveness`): pids in the segment header, watched through
//!   pidfds; `shutdown` sets a closed flag first, so a peer tells a finished
//!   rank from a crashed one. Corrupt ring content is a lost peer, not a
//!   crash.
//! - **Setup** (`setup`): no launcher exchange needed; the job key and the
//!   list of local ranks name everything.
//!
//! What it is not: it serves only the peers on this host (combine it with
//! tcp in a composite for the others); it copies each frame twice (into the
//! ring, and out of it by the engine) — a single-copy path for long messages
//! (`process_vm_readv`, or rendezvous straight into the user buffer) needs
//! engine support; it trusts the peers' *content* (same job, same user) but
//! not their lengths, which are checked before any read. Memory grows with
//! the square of the ranks per host (two rings per pair, `WANMPI_SHM_RING`),
//! and the ranks of a host must share a pid namespace (liveness by pid).

mod barrier;
mod liveness;
mod options;
mod ring;
mod segment;
mod setup;
mod transport;
mod wake;

pub use options::{ShmOptions, DEFAULT_MAX_FRAME, DEFAULT_RING, ENV_ARM_AFTER, ENV_DIR, ENV_RING};
pub use ring::RingError;
pub use setup::setup;
pub use transport::ShmTransport;
pub use wanmpi_transport::{Caps, Incoming, PeerId, SendStatus, Transport, TransportError};
