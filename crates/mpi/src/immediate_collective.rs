//! Nonblocking collectives (MPI-4.0 §5.12): the same operations as
//! `collective.rs`, started now and completed through the returned
//! `Request`, which borrows the buffers until then (and waits on drop).
//! Several may be outstanding on one communicator; every rank must start
//! them in the same order.

use wanmpi_runtime::{equal_blocks, Buf, ErrorClass, MpiError, Op, VBuf};

use crate::communicator::Communicator;
use crate::datatype::Equivalence;
use crate::request::Request;
use crate::Result;

impl Communicator {
    /// MPI_Ibarrier.
    pub fn immediate_barrier(&self) -> Result<Request<'static>> {
        let r = self.check(self.rt.ibarrier(self.id, false))?;
        Ok(Request::new(self, r))
    }

    /// MPI_Ibcast.
    pub fn immediate_broadcast_into<'b, T: Equivalence>(&self, data: &'b mut [T], root: i32) -> Result<Request<'b>> {
        let dt = T::datatype();
        // SAFETY: the request borrows `data` until it completes.
        let r = self.check(unsafe { self.rt.ibcast(Buf::new(data.as_mut_ptr() as *mut u8, data.len(), &dt), root, self.id, false) })?;
        Ok(Request::new(self, r))
    }

    /// MPI_Ireduce: `recv` significant at the root only.
    pub fn immediate_reduce_into<'b, T: Equivalence>(&self, send: &'b [T], recv: &'b mut [T], op: &Op, root: i32) -> Result<Request<'b>> {
        let dt = T::datatype();
        if self.rank() == root && recv.len() < send.len() {
            return self.check(Err(MpiError::new(ErrorClass::Count, "reduce receive buffer shorter than send buffer")));
        }
        let out = Buf::new(recv.as_mut_ptr() as *mut u8, send.len(), &dt);
        // SAFETY: both buffers hold `send.len()` elements (checked at the root) and stay borrowed.
        let r = self.check(unsafe { self.rt.ireduce(Some(send.as_ptr() as *const u8), out, op, root, self.id, false) })?;
        Ok(Request::new(self, r))
    }

    /// MPI_Iallreduce.
    pub fn immediate_all_reduce_into<'b, T: Equivalence>(&self, send: &'b [T], recv: &'b mut [T], op: &Op) -> Result<Request<'b>> {
        let dt = T::datatype();
        self.length_check(send.len(), recv.len())?;
        let out = Buf::new(recv.as_mut_ptr() as *mut u8, recv.len(), &dt);
        // SAFETY: lengths checked; the request borrows both buffers.
        let r = self.check(unsafe { self.rt.iallreduce(Some(send.as_ptr() as *const u8), out, op, self.id, false) })?;
        Ok(Request::new(self, r))
    }

    /// MPI_Iallgather: `recv` holds size blocks of `send.len()`.
    pub fn immediate_all_gather_into<'b, T: Equivalence>(&self, send: &'b [T], recv: &'b mut [T]) -> Result<Request<'b>> {
        let dt = T::datatype();
        let n = self.size() as usize;
        self.length_check(send.len() * n, recv.len())?;
        let (counts, displs) = equal_blocks(send.len(), n);
        let v = VBuf { ptr: recv.as_mut_ptr() as *mut u8, counts: &counts, displs: &displs, dt: &dt };
        // SAFETY: lengths checked; the request borrows both buffers.
        let r = self.check(unsafe { self.rt.iallgatherv(Some(Buf::new(send.as_ptr() as *mut u8, send.len(), &dt)), v, self.id, false) })?;
        Ok(Request::new(self, r))
    }

    /// MPI_Ialltoall: `send` and `recv` hold size blocks of equal length.
    pub fn immediate_all_to_all_into<'b, T: Equivalence>(&self, send: &'b [T], recv: &'b mut [T]) -> Result<Request<'b>> {
        let dt = T::datatype();
        self.length_check(send.len(), recv.len())?;
        let n = self.size() as usize;
        if !send.len().is_multiple_of(n) {
            return self.check(Err(MpiError::new(ErrorClass::Count, "alltoall buffer is not size equal blocks")));
        }
        let (counts, displs) = equal_blocks(send.len() / n, n);
        let s = VBuf { ptr: send.as_ptr() as *mut u8, counts: &counts, displs: &displs, dt: &dt };
        let v = VBuf { ptr: recv.as_mut_ptr() as *mut u8, counts: &counts, displs: &displs, dt: &dt };
        // SAFETY: lengths checked; the request borrows both buffers.
        let r = self.check(unsafe { self.rt.ialltoallv(Some(s), v, self.id, false) })?;
        Ok(Request::new(self, r))
    }
}
