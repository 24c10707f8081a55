//! The buffer attached for buffered sends (MPI_Buffer_attach, §3.6). The
//! engine always copies a buffered send's data, so the attached buffer only
//! bounds how much may be outstanding, as the standard requires.

/// Bookkeeping overhead charged per buffered message (MPI_BSEND_OVERHEAD).
pub const BSEND_OVERHEAD: usize = 96;

#[derive(Debug, Default)]
pub struct BsendPool {
    /// The user's attached buffer (address, size), if any.
    pub attached: Option<(usize, usize)>,
    /// Bytes charged by buffered sends not yet completed.
    pub in_use: usize,
    /// Engine sends of buffered messages still leaving, with their charge.
    pub outstanding: Vec<(wanmpi_engine::RequestId, usize)>,
}
