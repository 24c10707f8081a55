//! A transport made of several transports, for the two places where one
//! peer may be reached more than one way: the adaptive transport of the
//! WAMP paper (tcp and wamp to every peer, each frame on whichever the
//! measured path favours) and the transport per peer (shared memory to this
//! host's ranks, the LAN transport in this site, the WAN transport to other
//! sites: `per_peer.rs`).
//!
//! Every frame gets a 6-byte prefix: its channel and its sequence number on
//! that (peer, channel). The receiver delivers each channel's frames in
//! that order whatever transport carried them, so a switch between
//! transports, at any frame, keeps the order the engine relies on
//! (`composite.rs`). Which transport carries a frame is a `Route`'s choice,
//! re-evaluated from the transports' path measurements at most every
//! `EVALUATE_EVERY` per peer (`route.rs`; the adaptive rule is
//! `adaptive.rs`).
//!
//! A third use: processes of other jobs joined to this one
//! (MPI_Comm_spawn, MPI_Comm_accept/connect) reached over their own
//! transport, next to the job's, without touching its frames (`joined.rs`).
//!
//! What this crate is not: it opens no sockets; its parts are transports
//! already connected.

mod adaptive;
mod composite;
mod joined;
mod per_peer;
mod route;

pub use adaptive::{decide, AdaptiveRoute, Choice};
pub use composite::{Composite, PREFIX_LEN};
pub use joined::Joined;
pub use per_peer::{PerPeerRoute, Reach};
pub use route::{Pick, Route, EVALUATE_EVERY};
