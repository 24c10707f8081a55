//! The sctp transport of wanmpi: the papers' design on user-space SCTP.
//!
//! SCTP runs in usrsctp (the FreeBSD/KAME stack, through `usrsctp-sys`) in
//! AF_CONN mode with no threads of its own: each transport owns one UDP
//! socket, hands received datagrams to usrsctp (`usrsctp_conninput`), sends
//! what usrsctp's output callback gives it, and advances usrsctp's clock
//! (`usrsctp_handle_timers`) on every call. One one-to-many SCTP socket per
//! transport, one association per other rank (the lower rank initiates),
//! streams as the transport's channels. Every association first proves the
//! job secret (auth.rs) before any of its frames reach the engine; until
//! then a peer may make us hold only `HANDSHAKE_ALLOWANCE` bytes, and after
//! it no message over the frame limit (pump.rs). Between hosts (the job's
//! sealing rule, `WANMPI_SCTP_ENCRYPT`) every UDP datagram of a link — each
//! SCTP packet, control chunks included — travels sealed with AES-128-GCM
//! under keys from the job secret and both ranks' published salts
//! (seal.rs, endpoint.rs), from the first INIT on; a datagram that does
//! not open or comes twice is dropped and counted before usrsctp sees it,
//! so a forged packet cannot end an association.
//!
//! Several transports may live in one process (tests run ranks as threads):
//! usrsctp is process-wide (stack.rs holds the one global), each transport
//! has its own UDP socket, SCTP port and AF_CONN addresses.
//!
//! What this crate is not: it does not fragment (frames up to
//! `Caps::max_frame`; the engine fragments), it does not look inside frames,
//! and it does not do SCTP's own multihoming (AF_CONN addresses never go on
//! the wire). Instead, with several local addresses (`more_addrs`), the
//! glue keeps several UDP paths per peer, probes them and moves the
//! association to a live path when the active one dies (path.rs,
//! docs/sctp.md "Multihoming").

mod auth;
mod close;
mod counters;
mod crc32c;
mod endpoint;
mod error;
mod link;
use wanmpi_transport::path_mtu as mtu;
mod netif;
mod notify;
mod options;
mod path;
mod poller;
mod pump;
mod replay;
mod seal;
mod setup;
mod sock;
mod stack;
mod tamper;
mod transport;
mod wire;

pub use auth::HANDSHAKE_ALLOWANCE;
pub use counters::{Counters, PathCounters, PeerCounters, StackCounters, StreamCounters};
pub use error::SctpError;
pub use options::{Checksum, CongestionControl, PathCut, SctpOptions, Tamper, ENV_ENCRYPT};
pub use transport::SctpTransport;
pub use wanmpi_bootstrap::seal_policy::{Maps, Seal};

/// The parsers that read what arrives from the network, for the fuzz
/// targets (`fuzz/`). Not an API: nothing else may use it.
#[doc(hidden)]
pub mod fuzzing {
    pub use crate::auth::{classify, hello, proof, verify, Hellos, Message, HELLO_LEN};
    pub use crate::endpoint::{sealed_link, Endpoint};
    pub use crate::path::{is_glue, Probe};
    pub use crate::seal::{derive, Dropped, Opener, Sealer, OVERHEAD, SALT_LEN};

    /// Parses the bytes of a notification as usrsctp delivers them; true
    /// if they read as one.
    pub fn notification(bytes: &[u8]) -> bool {
        crate::notify::parse(bytes).is_some()
    }
}
