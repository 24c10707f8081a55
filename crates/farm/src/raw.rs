//! Nonblocking operations that own their buffers.
//!
//! The farm keeps dozens of receives posted and sends in flight, in
//! collections that change every step. `wanmpi::Request` borrows its buffer,
//! which does not fit a changing collection, so this wraps the runtime's
//! MPI_Isend / MPI_Irecv / MPI_Testsome with requests that own their heap
//! buffers (a `Vec`'s heap block never moves while we do not touch it).
//! Only public MPI operations are used.

use std::sync::Arc;

use wanmpi::{Communicator, MpiError};
use wanmpi_runtime::{BasicType, CommId, Datatype, Req, Runtime, SendMode};

/// How a completed operation ended (MPI_Status, as the farm reads it).
#[derive(Debug, Clone)]
pub struct RawStatus {
    pub source: i32,
    pub tag: i32,
    /// Bytes received (receives) or sent.
    pub bytes: usize,
    pub error: Option<MpiError>,
    pub cancelled: bool,
}

/// The few MPI calls the farm makes on one communicator, with byte buffers
/// and request handles as plain numbers. Implemented over the Rust runtime
/// here ([`RuntimeOps`]) and over a C MPI library by `wanmpi-farm-capi`, so
/// one farm serves both APIs. Errors come back as values (the farm's
/// communicators have MPI_ERRORS_RETURN).
pub trait MpiOps: Send + Sync {
    /// MPI_Isend (`sync`: MPI_Issend) of `len` bytes.
    ///
    /// # Safety
    /// `buf` must stay valid and unmoved until the request completes or is
    /// freed (the farm keeps it in the [`Op`]).
    unsafe fn isend(&self, buf: *const u8, len: usize, dest: i32, tag: i32, sync: bool) -> Result<u64, MpiError>;
    /// MPI_Irecv of up to `len` bytes.
    ///
    /// # Safety
    /// As `isend`, and nothing else may touch `buf` meanwhile.
    unsafe fn irecv(&self, buf: *mut u8, len: usize, source: i32, tag: i32) -> Result<u64, MpiError>;
    /// MPI_Testsome: the indices (into `reqs`) that completed, with status;
    /// `None` entries are inactive. Empty when none did.
    fn testsome(&self, reqs: &[Option<u64>]) -> Result<Vec<(usize, RawStatus)>, MpiError>;
    /// MPI_Test on one request.
    fn test(&self, req: u64) -> Result<Option<RawStatus>, MpiError>;
    fn cancel(&self, req: u64) -> Result<(), MpiError>;
    fn request_free(&self, req: u64) -> Result<(), MpiError>;
}

/// [`MpiOps`] over wanmpi's Rust runtime: a runtime plus a communicator id.
pub struct RuntimeOps {
    rt: Arc<Runtime>,
    id: CommId,
}

fn status(s: wanmpi_runtime::Status) -> RawStatus {
    RawStatus { source: s.source, tag: s.tag, bytes: s.bytes, error: s.error, cancelled: s.cancelled }
}

impl MpiOps for RuntimeOps {
    unsafe fn isend(&self, buf: *const u8, len: usize, dest: i32, tag: i32, sync: bool) -> Result<u64, MpiError> {
        let mode = if sync { SendMode::Synchronous } else { SendMode::Standard };
        Ok(self.rt.isend(buf, len, &bytes(), dest, tag, self.id, mode)?.0)
    }
    unsafe fn irecv(&self, buf: *mut u8, len: usize, source: i32, tag: i32) -> Result<u64, MpiError> {
        Ok(self.rt.irecv(buf, len, &bytes(), source, tag, self.id)?.0)
    }
    fn testsome(&self, reqs: &[Option<u64>]) -> Result<Vec<(usize, RawStatus)>, MpiError> {
        let handles: Vec<Option<Req>> = reqs.iter().map(|r| r.map(Req)).collect();
        let done = self.rt.testsome(&handles)?.unwrap_or_default();
        Ok(done.into_iter().map(|(i, c)| (i, status(c.status))).collect())
    }
    fn test(&self, req: u64) -> Result<Option<RawStatus>, MpiError> {
        Ok(self.rt.test(Req(req))?.map(|c| status(c.status)))
    }
    fn cancel(&self, req: u64) -> Result<(), MpiError> {
        self.rt.cancel(Req(req))
    }
    fn request_free(&self, req: u64) -> Result<(), MpiError> {
        self.rt.request_free(Req(req))
    }
}

/// A communicator as seen by the farm.
#[derive(Clone)]
pub struct RawComm {
    mpi: Arc<dyn MpiOps>,
}

/// A posted receive or a send in flight, with its buffer.
pub struct Op {
    req: Option<u64>,
    buf: Vec<u8>,
    mpi: Arc<dyn MpiOps>,
}

/// A completed operation: its buffer (cut to the bytes received) and status.
pub struct Done {
    pub buf: Vec<u8>,
    pub source: i32,
    pub tag: i32,
    pub error: Option<MpiError>,
    pub cancelled: bool,
}

fn bytes() -> Datatype {
    Datatype::basic(BasicType::Uint8)
}

impl RawComm {
    pub fn new(c: &Communicator) -> RawComm {
        RawComm::from_ops(Arc::new(RuntimeOps { rt: c.runtime().clone(), id: c.id() }))
    }

    /// A communicator reached through other MPI bindings (the C API).
    pub fn from_ops(mpi: Arc<dyn MpiOps>) -> RawComm {
        RawComm { mpi }
    }

    pub fn isend(&self, buf: Vec<u8>, dest: i32, tag: i32) -> Result<Op, MpiError> {
        self.isend_mode(buf, dest, tag, false)
    }

    /// MPI_Issend: completes only once the receiver has matched it.
    pub fn issend(&self, buf: Vec<u8>, dest: i32, tag: i32) -> Result<Op, MpiError> {
        self.isend_mode(buf, dest, tag, true)
    }

    fn isend_mode(&self, buf: Vec<u8>, dest: i32, tag: i32, sync: bool) -> Result<Op, MpiError> {
        // SAFETY: `buf` is moved into the Op, which keeps it (unmoved, unread
        // by us) until the request completes or is freed with the buffer leaked.
        let req = unsafe { self.mpi.isend(buf.as_ptr(), buf.len(), dest, tag, sync)? };
        Ok(Op { req: Some(req), buf, mpi: self.mpi.clone() })
    }

    pub fn irecv(&self, capacity: usize, source: i32, tag: i32) -> Result<Op, MpiError> {
        let mut buf = vec![0u8; capacity];
        // SAFETY: as in `isend_mode`; the Op owns `buf` until completion.
        let req = unsafe { self.mpi.irecv(buf.as_mut_ptr(), buf.len(), source, tag)? };
        Ok(Op { req: Some(req), buf, mpi: self.mpi.clone() })
    }

    /// MPI_Testsome over `ops`: removes and returns those completed (with
    /// their former index), in index order.
    pub fn test_some<T>(&self, ops: &mut Vec<(Op, T)>) -> Result<Vec<(Done, T)>, MpiError> {
        let handles: Vec<Option<u64>> = ops.iter().map(|(o, _)| o.req).collect();
        let mut idx = self.mpi.testsome(&handles)?;
        if idx.is_empty() {
            return Ok(vec![]);
        }
        idx.sort_by_key(|(i, _)| *i);
        let mut out = Vec::with_capacity(idx.len());
        for (i, st) in idx.into_iter().rev() {
            if i >= ops.len() {
                continue; // a backend bug; never index out of range
            }
            let (mut op, t) = ops.swap_remove(i);
            op.req = None;
            let mut buf = std::mem::take(&mut op.buf);
            buf.truncate(st.bytes);
            out.push((Done { buf, source: st.source, tag: st.tag, error: st.error, cancelled: st.cancelled }, t));
        }
        out.reverse();
        Ok(out)
    }

    /// Waits for every op, at most `limit`; returns how many did not finish.
    pub fn drain(&self, ops: &mut Vec<(Op, ())>, limit: std::time::Duration) -> usize {
        let start = std::time::Instant::now();
        let mut backoff = crate::poll::Backoff::new();
        while !ops.is_empty() && start.elapsed() < limit {
            match self.test_some(ops) {
                Ok(d) if !d.is_empty() => backoff.reset(),
                Ok(_) => backoff.snooze(),
                Err(_) => break,
            }
        }
        ops.len()
    }
}

impl Op {
    /// MPI_Cancel on a posted receive; the Op completes (cancelled) later.
    pub fn cancel(&self) {
        if let Some(r) = self.req {
            let _ = self.mpi.cancel(r);
        }
    }
}

impl Drop for Op {
    fn drop(&mut self) {
        let Some(r) = self.req.take() else { return };
        // Unfinished: try to finish or cancel; if MPI may still touch the
        // buffer, free the request and leak the buffer rather than risk it.
        if let Ok(Some(_)) = self.mpi.test(r) {
            return;
        }
        let _ = self.mpi.cancel(r);
        if let Ok(Some(_)) = self.mpi.test(r) {
            return;
        }
        let _ = self.mpi.request_free(r);
        std::mem::forget(std::mem::take(&mut self.buf));
    }
}
