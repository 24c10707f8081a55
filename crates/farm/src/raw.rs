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

/// A communicator as seen by the farm: runtime plus id. Errors come back as
/// values (the farm sets MPI_ERRORS_RETURN on its communicators).
#[derive(Clone)]
pub struct RawComm {
    rt: Arc<Runtime>,
    id: CommId,
}

/// A posted receive or a send in flight, with its buffer.
pub struct Op {
    req: Option<Req>,
    buf: Vec<u8>,
    rt: Arc<Runtime>,
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
        RawComm { rt: c.runtime().clone(), id: c.id() }
    }

    pub fn isend(&self, buf: Vec<u8>, dest: i32, tag: i32) -> Result<Op, MpiError> {
        self.isend_mode(buf, dest, tag, SendMode::Standard)
    }

    /// MPI_Issend: completes only once the receiver has matched it.
    pub fn issend(&self, buf: Vec<u8>, dest: i32, tag: i32) -> Result<Op, MpiError> {
        self.isend_mode(buf, dest, tag, SendMode::Synchronous)
    }

    fn isend_mode(&self, buf: Vec<u8>, dest: i32, tag: i32, mode: SendMode) -> Result<Op, MpiError> {
        // SAFETY: `buf` is moved into the Op, which keeps it (unmoved, unread
        // by us) until the request completes or is freed with the buffer leaked.
        let req = unsafe { self.rt.isend(buf.as_ptr(), buf.len(), &bytes(), dest, tag, self.id, mode)? };
        Ok(Op { req: Some(req), buf, rt: self.rt.clone() })
    }

    pub fn irecv(&self, capacity: usize, source: i32, tag: i32) -> Result<Op, MpiError> {
        let mut buf = vec![0u8; capacity];
        // SAFETY: as in `isend`; the Op owns `buf` until completion.
        let req = unsafe { self.rt.irecv(buf.as_mut_ptr(), buf.len(), &bytes(), source, tag, self.id)? };
        Ok(Op { req: Some(req), buf, rt: self.rt.clone() })
    }

    /// MPI_Testsome over `ops`: removes and returns those completed (with
    /// their former index), in index order.
    pub fn test_some<T>(&self, ops: &mut Vec<(Op, T)>) -> Result<Vec<(Done, T)>, MpiError> {
        let handles: Vec<Option<Req>> = ops.iter().map(|(o, _)| o.req).collect();
        let Some(done) = self.rt.testsome(&handles)? else { return Ok(vec![]) };
        let mut idx: Vec<(usize, wanmpi_runtime::Completion)> = done;
        idx.sort_by_key(|(i, _)| *i);
        let mut out = Vec::with_capacity(idx.len());
        for (i, c) in idx.into_iter().rev() {
            let (mut op, t) = ops.swap_remove(i);
            op.req = None;
            let mut buf = std::mem::take(&mut op.buf);
            buf.truncate(c.status.bytes);
            out.push((Done { buf, source: c.status.source, tag: c.status.tag, error: c.status.error, cancelled: c.status.cancelled }, t));
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
            let _ = self.rt.cancel(r);
        }
    }
}

impl Drop for Op {
    fn drop(&mut self) {
        let Some(r) = self.req.take() else { return };
        // Unfinished: try to finish or cancel; if MPI may still touch the
        // buffer, free the request and leak the buffer rather than risk it.
        if let Ok(Some(_)) = self.rt.test(r) {
            return;
        }
        let _ = self.rt.cancel(r);
        if let Ok(Some(_)) = self.rt.test(r) {
            return;
        }
        let _ = self.rt.request_free(r);
        std::mem::forget(std::mem::take(&mut self.buf));
    }
}
