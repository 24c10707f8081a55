//! The tcp transport: the baseline every MPI has, kept honest and tuned.
//!
//! One TCP connection per pair of ranks (dialled by whichever side can reach
//! the other: `pair`),
//! `TCP_NODELAY`, socket buffers left to the kernel's autotuning unless set
//! (see [`TcpOptions`]), nonblocking sockets and one level-triggered epoll
//! set whose fd is [`Transport::readiness_fd`].
//!
//! - **Setup** (`setup`, `targets`): listen on an ephemeral port of the
//!   wildcard, publish `tcp-ep-<rank>` = `host:port` and the rank's
//!   candidate addresses, fence, then both ranks of each pair dial every
//!   candidate of the other (the higher after `reverse_delay`, unless it
//!   is behind NAT); the first to pass the handshake counts, the pair's
//!   rule (`pair`) keeps one when both get through, and a peer nothing
//!   reaches either way within `path_timeout` (10 s) is an error naming
//!   both ranks and the candidates tried. Each connection first
//!   proves the job secret both ways ([`auth`]); failures are logged to
//!   stderr in one line and setup keeps waiting for the real peer, up to
//!   `setup_timeout`. The listener stays open for redials; a later stray
//!   must pass the same handshake.
//! - **Frames** (`tx`, `rx`): a u32 little-endian length, then the bytes.
//!   One channel per peer. `try_send` is all-or-nothing; a partly written
//!   frame's tail is kept per peer and flushed before anything new.
//! - **Sealing** (`policy`, `seal`, `record`): between hosts, by default,
//!   every frame is encrypted and authenticated with AES-128-GCM in records
//!   of 64 KiB, with keys per connection and direction from the handshake
//!   and a counter per record; not on one host, and with
//!   `WANMPI_INSECURE_LAN=1` only between sites; `WANMPI_TCP_ENCRYPT=1`
//!   forces it, `=0` turns it off.
//! - **Streams that outlive connections** (`stream`, `redial`): frames are
//!   numbered per peer for the job's life and acknowledged; the sender
//!   keeps what is unacknowledged (at most 8 MiB per peer, then it is
//!   refused until acknowledgements come). A connection that breaks under
//!   the job (reset, aborted, silent for `silence`) is redialled by both
//!   ranks and the stream resumes from the resume points both sides
//!   name under the handshake's MACs. A peer without a connection for
//!   `outage_limit` (WANMPI_OUTAGE_LIMIT, default 600 s) is lost.
//! - **Loss**: a clean close (the peer's own), a length over `max_frame`
//!   (a protocol violation), a record that fails to open (altered,
//!   injected, replayed or reordered bytes), the outage limit, or a
//!   refused redial on one host is reported once as `Incoming::PeerLost`
//!   naming the peer and why; nothing after a bad record is delivered.
//! - **Shutdown** (`shutdown`): flush, half-close, wait for the peers' EOF.
//!
//! What it is not: a tampered connection is not resumed (it stays lost),
//! no rekeying (a connection's counter cannot wrap in a job's life), no
//! multiplexing of independent channels (that is what sctp/quic are for).

pub mod auth;
mod handshake;
mod options;
mod pair;
mod path;
pub mod policy;
pub mod record;
mod redial;
mod retry_log;
mod rx;
pub mod seal;
mod setup;
mod shutdown;
pub mod stream;
mod sys;
mod targets;
mod transport;
mod tx;

pub use options::{
    TcpOptions, DEFAULT_MAX_FRAME, DEFAULT_OUTAGE_LIMIT, ENV_OUTAGE_LIMIT, ENV_PATH_TIMEOUT, ENV_RCVBUF, ENV_REVERSE_DELAY, ENV_SETUP_TIMEOUT,
    ENV_SILENCE, ENV_SNDBUF,
};
pub use policy::{Maps, Seal, ENV_ENCRYPT, ENV_INSECURE_LAN};
pub use targets::endpoint_key;
pub use transport::TcpTransport;
pub use wanmpi_transport::{Caps, Incoming, PeerId, SendStatus, Transport, TransportError};
