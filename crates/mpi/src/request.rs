//! Nonblocking requests (MPI-3.1 §3.7). A request borrows the buffer of its
//! operation for `'b`; dropping an unfinished request waits for it, so the
//! buffer is never released while MPI may still touch it.

use std::marker::PhantomData;

use wanmpi_runtime::Req;

use crate::communicator::Communicator;
use crate::point_to_point::Status;
use crate::Result;

#[must_use = "a request must be waited for or tested"]
pub struct Request<'b> {
    comm: Communicator,
    req: Option<Req>,
    _buf: PhantomData<&'b mut [u8]>,
}

impl<'b> Request<'b> {
    pub(crate) fn new(comm: &Communicator, req: Req) -> Request<'b> {
        Request { comm: comm.clone(), req: Some(req), _buf: PhantomData }
    }

    /// MPI_Wait.
    pub fn wait(mut self) -> Result<Status> {
        self.wait_inner()
    }

    fn wait_inner(&mut self) -> Result<Status> {
        let Some(r) = self.req.take() else { return Ok(Status::empty()) };
        let c = self.comm.check(self.comm.rt.wait(r))?;
        self.comm.check(Status::from_runtime(c.status))
    }

    /// MPI_Test: `Ok(Ok(status))` when done, `Ok(Err(self))` to try again.
    pub fn test(mut self) -> Result<std::result::Result<Status, Self>> {
        let Some(r) = self.req else { return Ok(Ok(Status::empty())) };
        match self.comm.check(self.comm.rt.test(r))? {
            Some(c) => {
                self.req = None;
                Ok(Ok(self.comm.check(Status::from_runtime(c.status))?))
            }
            None => Ok(Err(self)),
        }
    }

    /// MPI_Cancel, then wait: the status says whether it was cancelled.
    pub fn cancel(self) -> Result<Status> {
        if let Some(r) = self.req {
            self.comm.check(self.comm.rt.cancel(r))?;
        }
        self.wait()
    }

    pub(crate) fn handle(&self) -> Option<Req> {
        self.req
    }
    pub(crate) fn forget(&mut self) {
        self.req = None;
    }
}

impl Drop for Request<'_> {
    fn drop(&mut self) {
        if self.req.is_some() {
            let _ = self.wait_inner();
        }
    }
}

/// MPI_Waitall over requests of any buffers; statuses in order.
pub fn wait_all(reqs: Vec<Request<'_>>) -> Result<Vec<Status>> {
    let Some(first) = reqs.first() else { return Ok(vec![]) };
    let comm = first.comm.clone();
    let handles: Vec<Option<Req>> = reqs.iter().map(|r| r.handle()).collect();
    let done = comm.check(comm.rt.waitall(&handles))?;
    let mut out = vec![];
    for (mut r, c) in reqs.into_iter().zip(done) {
        r.forget();
        out.push(match c {
            Some(c) => r.comm.check(Status::from_runtime(c.status))?,
            None => Status::empty(),
        });
    }
    Ok(out)
}

/// MPI_Waitany: completes one request, returns its index and status; the
/// completed request is removed from `reqs`.
pub fn wait_any(reqs: &mut Vec<Request<'_>>) -> Result<Option<(usize, Status)>> {
    let Some(first) = reqs.first() else { return Ok(None) };
    let comm = first.comm.clone();
    let handles: Vec<Option<Req>> = reqs.iter().map(|r| r.handle()).collect();
    match comm.check(comm.rt.waitany(&handles))? {
        None => Ok(None),
        Some((i, c)) => {
            let mut r = reqs.remove(i);
            r.forget();
            Ok(Some((i, r.comm.check(Status::from_runtime(c.status))?)))
        }
    }
}

/// MPI_Testsome / MPI_Waitsome: completes what is done (at least one when
/// `block`), removing those requests; returns their former indices.
pub fn some(reqs: &mut Vec<Request<'_>>, block: bool) -> Result<Vec<(usize, Status)>> {
    let Some(first) = reqs.first() else { return Ok(vec![]) };
    let comm = first.comm.clone();
    let handles: Vec<Option<Req>> = reqs.iter().map(|r| r.handle()).collect();
    let done = if block { comm.rt.waitsome(&handles) } else { comm.rt.testsome(&handles) };
    let done = comm.check(done)?.unwrap_or_default();
    let mut out = vec![];
    for (i, c) in &done {
        reqs[*i].forget();
        out.push((*i, comm.check(Status::from_runtime(c.status.clone()))?));
    }
    let gone: Vec<usize> = done.iter().map(|(i, _)| *i).collect();
    let mut idx = 0;
    reqs.retain(|_| {
        let keep = !gone.contains(&idx);
        idx += 1;
        keep
    });
    Ok(out)
}

/// MPI_Testall: `true` (and all completed) or `false` (none touched).
pub fn test_all(reqs: &mut Vec<Request<'_>>) -> Result<Option<Vec<Status>>> {
    let Some(first) = reqs.first() else { return Ok(Some(vec![])) };
    let comm = first.comm.clone();
    let handles: Vec<Option<Req>> = reqs.iter().map(|r| r.handle()).collect();
    match comm.check(comm.rt.testall(&handles))? {
        None => Ok(None),
        Some(done) => {
            let mut out = vec![];
            for (r, c) in reqs.iter_mut().zip(done) {
                r.forget();
                out.push(match c {
                    Some(c) => comm.check(Status::from_runtime(c.status))?,
                    None => Status::empty(),
                });
            }
            reqs.clear();
            Ok(Some(out))
        }
    }
}
