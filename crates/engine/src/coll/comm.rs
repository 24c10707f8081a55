//! The point-to-point contract the collective algorithms are written against.

use crate::op::OpError;

/// One message of an exchange. Buffers are plain bytes; datatype handling
/// happens above.
pub struct SendItem<'a> {
    pub buf: &'a [u8],
    pub peer: usize,
    pub tag: i32,
}

/// One receive of an exchange; it must get exactly `buf.len()` bytes.
pub struct RecvItem<'a> {
    pub buf: &'a mut [u8],
    pub peer: usize,
    pub tag: i32,
}

/// What a collective algorithm needs from point-to-point on the
/// communicator's collective context.
///
/// The algorithms rely on MPI's ordering: messages with the same (source,
/// tag) are matched in the order they were sent, and every rank calls the
/// collectives of a communicator in the same order. Sends may complete
/// before they are matched (buffered) or not (synchronous); the algorithms
/// never need one or the other, because everything that could wait on a
/// peer is posted in one `exchange`.
pub trait CollComm {
    fn rank(&self) -> usize;
    fn size(&self) -> usize;
    /// Posts all sends and receives at once, then waits for all of them.
    /// Each receive must get exactly `buf.len()` bytes (else
    /// `CollError::LengthMismatch`).
    fn exchange(&mut self, sends: &[SendItem<'_>], recvs: &mut [RecvItem<'_>]) -> Result<(), CollError>;

    /// The site of `rank` (sites are joined by slow links; `sites.rs`).
    /// Every rank of the communicator must give the same answers. One site
    /// for all (the default) means the flat algorithms.
    fn site_of(&self, _rank: usize) -> usize {
        0
    }

    fn send(&mut self, buf: &[u8], peer: usize, tag: i32) -> Result<(), CollError> {
        self.exchange(&[SendItem { buf, peer, tag }], &mut [])
    }

    fn recv(&mut self, buf: &mut [u8], peer: usize, tag: i32) -> Result<(), CollError> {
        self.exchange(&[], &mut [RecvItem { buf, peer, tag }])
    }

    /// Sends `send` to `peer` and receives `recv` from it, both posted at
    /// once (one round trip).
    fn sendrecv(&mut self, send: &[u8], recv: &mut [u8], peer: usize, tag: i32) -> Result<(), CollError> {
        self.exchange(&[SendItem { buf: send, peer, tag }], &mut [RecvItem { buf: recv, peer, tag }])
    }
}

/// `comm.exchange`, skipped when there is nothing to post (leaf ranks of a
/// tree, a communicator of one), so a step that moves nothing costs nothing.
pub(super) fn post(comm: &mut dyn CollComm, sends: &[SendItem<'_>], recvs: &mut [RecvItem<'_>]) -> Result<(), CollError> {
    if sends.is_empty() && recvs.is_empty() {
        return Ok(());
    }
    comm.exchange(sends, recvs)
}

/// Why a collective failed. `BadArgument` is found before any message moves,
/// identically on every rank that got the same arguments.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CollError {
    #[error("collective message from rank {peer} has {got} bytes, expected {expected}")]
    LengthMismatch { peer: usize, expected: usize, got: usize },
    #[error(transparent)]
    Op(#[from] OpError),
    /// An error from the point-to-point layer, already formatted.
    #[error("point-to-point failure inside a collective: {0}")]
    Comm(String),
    #[error("invalid collective argument: {0}")]
    BadArgument(String),
}
