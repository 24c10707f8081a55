//! Errors of the sctp transport; they convert into the engine-facing
//! `TransportError`.

use thiserror::Error;
use wanmpi_transport::{PeerId, TransportError};

#[derive(Debug, Error)]
pub enum SctpError {
    #[error("option {var}: {problem}")]
    BadOption { var: String, problem: String },
    #[error("usrsctp {call} failed: {err}")]
    Stack { call: &'static str, err: std::io::Error },
    #[error("bootstrap: {0}")]
    Bootstrap(#[from] wanmpi_bootstrap::BootstrapError),
    #[error("peer {rank} published an sctp endpoint without packet keys: it runs a wanmpi release before sealed packets; every rank of a job must run the same release")]
    OldRelease { rank: PeerId },
    #[error("peer {rank} published a bad endpoint {value:?}")]
    BadEndpoint { rank: PeerId, value: String },
    #[error("association setup timed out after {secs:.1} s; missing peers: {missing:?}")]
    SetupTimeout { secs: f64, missing: Vec<PeerId> },
    #[error("sctp: no path from rank {rank} to ranks {unheard:?}: tried {tried} for {secs:.1} s and no sealed answer came (NATs that open no path: symmetric on both sides, or UDP filtered; no relay yet); rank {rank}'s own candidates: {own}")]
    NoPath { rank: PeerId, unheard: Vec<PeerId>, secs: f64, tried: String, own: String },
    #[error("peer {peer} failed during setup: {reason}")]
    SetupPeerLost { peer: PeerId, reason: String },
    #[error("process-wide usrsctp setting conflicts with a live transport: {0}")]
    GlobalConflict(String),
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
}

impl SctpError {
    /// The error of the usrsctp call that just failed (usrsctp sets errno).
    pub(crate) fn stack(call: &'static str) -> SctpError {
        SctpError::Stack { call, err: std::io::Error::last_os_error() }
    }
}

impl From<SctpError> for TransportError {
    fn from(e: SctpError) -> Self {
        match e {
            SctpError::Io(io) => TransportError::Io(io),
            SctpError::SetupPeerLost { peer, reason } => TransportError::PeerLost { peer, reason },
            other => TransportError::Setup(other.to_string()),
        }
    }
}
