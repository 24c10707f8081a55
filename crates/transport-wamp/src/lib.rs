//! The wamp transport of wanmpi: the WAMP paper's user-level reliable
//! protocol over UDP, made fit for today's wide-area networks.
//!
//! As in the paper: one UDP socket per rank; each frame the engine sends is
//! kept whole until acknowledged and cut into numbered chunks that the
//! receiver places straight at their offset, in any order; the receiver
//! acknowledges with a bitmap and the sender resends only what the bitmap
//! lacks. Beyond the paper (docs/wamp.md): channels (a loss delays only its
//! own channel, as on sctp's streams), time-based loss detection and a probe
//! timeout instead of a fixed retransmission timer, a rate-based congestion
//! control that ignores isolated random loss, optional Reed-Solomon repair
//! packets so most losses cost no round trip, and every datagram sealed
//! with AES-GCM under keys derived from the job secret.
//!
//! Layout: `packet` (wire format), `seal` (keys, AEAD), the per-peer
//! protocol as a sans-IO state machine in `conn` (built from `sendbuf`,
//! `ackgen`, `reasm`, `rtt`, `rate`, `fec`), and the socket side in
//! `transport` (with `setup` and `poller`).
//!
//! What this crate is not: it does not look inside frames (the engine
//! fragments messages into frames of at most `Caps::max_frame`).

pub mod ackgen;
pub mod conn;
pub mod fec;
mod gso;
mod options;
pub mod packet;
mod poller;
pub mod rate;
pub mod reasm;
pub mod rtt;
pub mod seal;
pub mod sendbuf;
mod setup;
mod stats;
mod transport;

pub use options::{Fec, WampOptions};
pub use transport::{Refusals, WampTransport};
