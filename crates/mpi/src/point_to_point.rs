//! Point-to-point communication (MPI-3.1 chapter 3).

use wanmpi_runtime::{Datatype, Message, MpiResult, SendMode};

use crate::communicator::Communicator;
use crate::datatype::Equivalence;
use crate::request::Request;
use crate::Result;

/// What a completed receive or probe reports (MPI_Status).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Status {
    /// Rank of the sender in the communicator (MPI_PROC_NULL for null ops).
    pub source: i32,
    pub tag: i32,
    /// Bytes received.
    pub bytes: usize,
    /// MPI_Test_cancelled.
    pub cancelled: bool,
}

impl Status {
    pub(crate) fn empty() -> Status {
        Status { source: crate::PROC_NULL, tag: crate::ANY_TAG, bytes: 0, cancelled: false }
    }
    /// A runtime status, or its error.
    pub(crate) fn from_runtime(s: wanmpi_runtime::Status) -> MpiResult<Status> {
        if let Some(e) = s.error {
            return Err(e);
        }
        Ok(Status { source: s.source, tag: s.tag, bytes: s.bytes, cancelled: s.cancelled })
    }
    /// MPI_Get_count for elements of `T` (`None` = MPI_UNDEFINED).
    pub fn count<T: Equivalence>(&self) -> Option<usize> {
        T::datatype().count_in(self.bytes)
    }
}

/// A message taken by a matched probe, to be received with `matched_receive_into`.
pub struct MatchedMessage {
    msg: Message,
    pub status: Status,
}

fn send_parts<T: Equivalence>(buf: &[T]) -> (*const u8, usize, Datatype) {
    (buf.as_ptr() as *const u8, buf.len(), T::datatype())
}

impl Communicator {
    fn send_mode<T: Equivalence>(&self, buf: &[T], dest: i32, tag: i32, mode: SendMode) -> Result<()> {
        let (p, n, dt) = send_parts(buf);
        // SAFETY: `buf` outlives the wait below.
        let r = self.check(unsafe { self.rt.isend(p, n, &dt, dest, tag, self.id, mode) })?;
        self.check(self.rt.wait(r)).map(|_| ())
    }

    /// MPI_Send.
    pub fn send<T: Equivalence>(&self, buf: &[T], dest: i32, tag: i32) -> Result<()> {
        self.send_mode(buf, dest, tag, SendMode::Standard)
    }
    /// MPI_Ssend: returns once the receiver has matched the message.
    pub fn synchronous_send<T: Equivalence>(&self, buf: &[T], dest: i32, tag: i32) -> Result<()> {
        self.send_mode(buf, dest, tag, SendMode::Synchronous)
    }
    /// MPI_Rsend.
    pub fn ready_send<T: Equivalence>(&self, buf: &[T], dest: i32, tag: i32) -> Result<()> {
        self.send_mode(buf, dest, tag, SendMode::Ready)
    }
    /// MPI_Bsend (needs `buffer_attach`).
    pub fn buffered_send<T: Equivalence>(&self, buf: &[T], dest: i32, tag: i32) -> Result<()> {
        self.send_mode(buf, dest, tag, SendMode::Buffered)
    }
    /// MPI_Buffer_attach of `size` bytes for buffered sends.
    pub fn buffer_attach(&self, size: usize) -> Result<()> {
        self.check(self.rt.buffer_attach(0, size))
    }
    /// MPI_Buffer_detach: waits for buffered messages to leave.
    pub fn buffer_detach(&self) -> Result<usize> {
        self.check(self.rt.buffer_detach()).map(|(_, s)| s)
    }

    /// MPI_Isend and modes.
    pub fn immediate_send_mode<'b, T: Equivalence>(&self, buf: &'b [T], dest: i32, tag: i32, mode: SendMode) -> Result<Request<'b>> {
        let (p, n, dt) = send_parts(buf);
        // SAFETY: the request borrows `buf` for 'b and waits on drop.
        let r = self.check(unsafe { self.rt.isend(p, n, &dt, dest, tag, self.id, mode) })?;
        Ok(Request::new(self, r))
    }
    /// MPI_Isend.
    pub fn immediate_send<'b, T: Equivalence>(&self, buf: &'b [T], dest: i32, tag: i32) -> Result<Request<'b>> {
        self.immediate_send_mode(buf, dest, tag, SendMode::Standard)
    }
    /// MPI_Issend.
    pub fn immediate_synchronous_send<'b, T: Equivalence>(&self, buf: &'b [T], dest: i32, tag: i32) -> Result<Request<'b>> {
        self.immediate_send_mode(buf, dest, tag, SendMode::Synchronous)
    }

    /// MPI_Irecv.
    pub fn immediate_receive_into<'b, T: Equivalence>(&self, buf: &'b mut [T], source: i32, tag: i32) -> Result<Request<'b>> {
        let dt = T::datatype();
        // SAFETY: the request borrows `buf` mutably for 'b and waits on drop.
        let r = self.check(unsafe { self.rt.irecv(buf.as_mut_ptr() as *mut u8, buf.len(), &dt, source, tag, self.id) })?;
        Ok(Request::new(self, r))
    }

    /// MPI_Recv.
    pub fn receive_into<T: Equivalence>(&self, buf: &mut [T], source: i32, tag: i32) -> Result<Status> {
        self.immediate_receive_into(buf, source, tag)?.wait()
    }

    /// MPI_Probe then MPI_Mrecv into a vector of the right length.
    pub fn receive_vec<T: Equivalence>(&self, source: i32, tag: i32) -> Result<(Vec<T>, Status)> {
        let m = self.matched_probe(source, tag)?;
        let n = m.status.count::<T>().unwrap_or(0);
        let mut v = vec![T::default(); n];
        let st = self.matched_receive_into(m, &mut v)?;
        Ok((v, st))
    }

    /// MPI_Sendrecv.
    pub fn send_receive_into<S: Equivalence, R: Equivalence>(
        &self,
        send: &[S],
        dest: i32,
        send_tag: i32,
        recv: &mut [R],
        source: i32,
        recv_tag: i32,
    ) -> Result<Status> {
        let r = self.immediate_receive_into(recv, source, recv_tag)?;
        let s = self.immediate_send(send, dest, send_tag)?;
        s.wait()?;
        r.wait()
    }

    /// MPI_Sendrecv_replace.
    pub fn send_receive_replace<T: Equivalence>(&self, buf: &mut [T], dest: i32, send_tag: i32, source: i32, recv_tag: i32) -> Result<Status> {
        let copy = buf.to_vec();
        self.send_receive_into(&copy, dest, send_tag, buf, source, recv_tag)
    }

    /// MPI_Iprobe.
    pub fn immediate_probe(&self, source: i32, tag: i32) -> Result<Option<Status>> {
        let s = self.check(self.rt.iprobe(source, tag, self.id))?;
        s.map(|s| self.check(Status::from_runtime(s))).transpose()
    }
    /// MPI_Probe.
    pub fn probe(&self, source: i32, tag: i32) -> Result<Status> {
        let s = self.check(self.rt.probe(source, tag, self.id))?;
        self.check(Status::from_runtime(s))
    }
    /// MPI_Mprobe.
    pub fn matched_probe(&self, source: i32, tag: i32) -> Result<MatchedMessage> {
        let (msg, s) = self.check(self.rt.mprobe(source, tag, self.id))?;
        Ok(MatchedMessage { msg, status: self.check(Status::from_runtime(s))? })
    }
    /// MPI_Improbe.
    pub fn immediate_matched_probe(&self, source: i32, tag: i32) -> Result<Option<MatchedMessage>> {
        match self.check(self.rt.improbe(source, tag, self.id))? {
            None => Ok(None),
            Some((msg, s)) => Ok(Some(MatchedMessage { msg, status: self.check(Status::from_runtime(s))? })),
        }
    }
    /// MPI_Mrecv.
    pub fn matched_receive_into<T: Equivalence>(&self, m: MatchedMessage, buf: &mut [T]) -> Result<Status> {
        let dt = T::datatype();
        // SAFETY: `buf` outlives the wait below.
        let r = self.check(unsafe { self.rt.imrecv(buf.as_mut_ptr() as *mut u8, buf.len(), &dt, m.msg) })?;
        Request::new(self, r).wait()
    }
}
