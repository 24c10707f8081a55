//! Ports for joining jobs (MPI_Open_port, MPI_Comm_accept/connect, and
//! MPI_Comm_spawn, whose children connect back to a port of their parent).
//!
//! A port is a TCP listener with a fresh secret. Its name carries both:
//! `wanmpi-port:1:<host>:<port>:<secret hex>`, so whoever holds the name
//! may connect and nobody else can (`name.rs`; messages show only
//! `host:port`). Only the two groups' roots talk here:
//!
//! ```text
//! acceptor:  wanmpi-port 1 <nonce-a>                  | busy
//! connector: join <nonce-c> <proof-c> <group size>   | fail <nonce-c> <proof-c> <text>
//! acceptor:  ok <proof-a> <group size>                | refused <why> | busy
//! then sealed blobs both ways (link.rs)
//! ```
//!
//! Proofs are the key/value service's (HMAC of the port secret over the
//! other side's nonce); the two groups' joint key is derived from the
//! secret and both nonces, so it never travels. `fail` is the launcher's:
//! a spawn whose processes could not start tells the waiting parent so.
//! `busy`: the acceptor had more unproven connections than it keeps
//! (`accept.rs`) and dropped this one; the connector tries again.

mod accept;
mod connect;
mod link;
mod name;

pub use accept::{AcceptError, Port, GREETING_LIMIT, MAX_WAITING};
pub use connect::{connect, report_failure, ConnectError};
pub use link::{RootLink, MAX_BLOB};
pub use name::{redact, PortName};

/// What the other root said about its group.
#[derive(Debug)]
pub struct Peer {
    /// The sealed connection to the other root.
    pub link: RootLink,
    pub size: u32,
    /// The joint key of both groups (see the module doc).
    pub key: [u8; 32],
}

#[cfg(test)]
mod tests;
