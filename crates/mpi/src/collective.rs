//! Collective communication (MPI-3.1 chapter 5). Algorithms are chosen to
//! keep wide-area round trips few (see `wanmpi_engine::coll`).

use wanmpi_runtime::{Buf, Op, VBuf};

use crate::communicator::Communicator;
use crate::datatype::Equivalence;
use crate::Result;

fn buf<'d, T: Equivalence>(b: &[T], dt: &'d wanmpi_runtime::Datatype) -> Buf<'d> {
    Buf::new(b.as_ptr() as *mut u8, b.len(), dt)
}

impl Communicator {
    /// MPI_Barrier.
    pub fn barrier(&self) -> Result<()> {
        self.check(self.rt.barrier(self.id))
    }

    /// MPI_Bcast.
    pub fn broadcast_into<T: Equivalence>(&self, data: &mut [T], root: i32) -> Result<()> {
        let dt = T::datatype();
        // SAFETY: `data` is a valid, exclusively borrowed buffer.
        self.check(unsafe { self.rt.bcast(buf(data, &dt), root, self.id) })
    }

    /// MPI_Reduce: `recv` significant at the root only (may be empty elsewhere).
    pub fn reduce_into<T: Equivalence>(&self, send: &[T], recv: &mut [T], op: &Op, root: i32) -> Result<()> {
        let dt = T::datatype();
        let r = Buf::new(recv.as_mut_ptr() as *mut u8, send.len(), &dt);
        if self.rank() == root && recv.len() < send.len() {
            return self
                .check(Err(wanmpi_runtime::MpiError::new(wanmpi_runtime::ErrorClass::Count, "reduce receive buffer shorter than send buffer")));
        }
        // SAFETY: buffers valid for `send.len()` elements (checked at the root).
        self.check(unsafe { self.rt.reduce(Some(send.as_ptr() as *const u8), r, op, root, self.id) })
    }

    /// MPI_Allreduce.
    pub fn all_reduce_into<T: Equivalence>(&self, send: &[T], recv: &mut [T], op: &Op) -> Result<()> {
        let dt = T::datatype();
        self.length_check(send.len(), recv.len())?;
        // SAFETY: both buffers hold `send.len()` elements.
        self.check(unsafe { self.rt.allreduce(Some(send.as_ptr() as *const u8), buf(recv, &dt), op, self.id) })
    }

    /// MPI_Allreduce with MPI_IN_PLACE.
    pub fn all_reduce_in_place<T: Equivalence>(&self, data: &mut [T], op: &Op) -> Result<()> {
        let dt = T::datatype();
        // SAFETY: `data` is valid.
        self.check(unsafe { self.rt.allreduce(None, buf(data, &dt), op, self.id) })
    }

    /// MPI_Scan (inclusive) or MPI_Exscan (`exclusive`).
    pub fn scan_into<T: Equivalence>(&self, send: &[T], recv: &mut [T], op: &Op, exclusive: bool) -> Result<()> {
        let dt = T::datatype();
        self.length_check(send.len(), recv.len())?;
        // SAFETY: both buffers hold `send.len()` elements.
        self.check(unsafe { self.rt.scan(Some(send.as_ptr() as *const u8), buf(recv, &dt), op, self.id, exclusive) })
    }

    /// MPI_Gather: `recv` (size * send.len()) significant at the root only.
    pub fn gather_into<T: Equivalence>(&self, send: &[T], recv: &mut [T], root: i32) -> Result<()> {
        let dt = T::datatype();
        if self.rank() == root {
            self.length_check(send.len() * self.size() as usize, recv.len())?;
        }
        // SAFETY: lengths checked.
        self.check(unsafe { self.rt.gather(Some(buf(send, &dt)), Buf::new(recv.as_mut_ptr() as *mut u8, send.len(), &dt), root, self.id) })
    }

    /// MPI_Gatherv: at the root, rank i's elements land at `displs[i]`.
    pub fn gather_varcount_into<T: Equivalence>(&self, send: &[T], recv: &mut [T], counts: &[usize], displs: &[isize], root: i32) -> Result<()> {
        let dt = T::datatype();
        if self.rank() == root {
            check_blocks(self, recv.len(), counts, displs)?;
        }
        let v = VBuf { ptr: recv.as_mut_ptr() as *mut u8, counts, displs, dt: &dt };
        // SAFETY: blocks checked against `recv` at the root.
        self.check(unsafe { self.rt.gatherv(Some(buf(send, &dt)), v, root, self.id) })
    }

    /// MPI_Scatter: `send` (size * recv.len()) significant at the root only.
    pub fn scatter_into<T: Equivalence>(&self, send: &[T], recv: &mut [T], root: i32) -> Result<()> {
        let dt = T::datatype();
        if self.rank() == root {
            self.length_check(recv.len() * self.size() as usize, send.len())?;
        }
        // SAFETY: lengths checked.
        self.check(unsafe { self.rt.scatter(Buf::new(send.as_ptr() as *mut u8, recv.len(), &dt), Some(buf(recv, &dt)), root, self.id) })
    }

    /// MPI_Scatterv.
    pub fn scatter_varcount_into<T: Equivalence>(&self, send: &[T], counts: &[usize], displs: &[isize], recv: &mut [T], root: i32) -> Result<()> {
        let dt = T::datatype();
        if self.rank() == root {
            check_blocks(self, send.len(), counts, displs)?;
        }
        let v = VBuf { ptr: send.as_ptr() as *mut u8, counts, displs, dt: &dt };
        // SAFETY: blocks checked against `send` at the root.
        self.check(unsafe { self.rt.scatterv(v, Some(buf(recv, &dt)), root, self.id) })
    }

    /// MPI_Allgather.
    pub fn all_gather_into<T: Equivalence>(&self, send: &[T], recv: &mut [T]) -> Result<()> {
        let dt = T::datatype();
        self.length_check(send.len() * self.size() as usize, recv.len())?;
        // SAFETY: lengths checked.
        self.check(unsafe { self.rt.allgather(Some(buf(send, &dt)), Buf::new(recv.as_mut_ptr() as *mut u8, send.len(), &dt), self.id) })
    }

    /// MPI_Allgatherv.
    pub fn all_gather_varcount_into<T: Equivalence>(&self, send: &[T], recv: &mut [T], counts: &[usize], displs: &[isize]) -> Result<()> {
        let dt = T::datatype();
        check_blocks(self, recv.len(), counts, displs)?;
        let v = VBuf { ptr: recv.as_mut_ptr() as *mut u8, counts, displs, dt: &dt };
        // SAFETY: blocks checked.
        self.check(unsafe { self.rt.allgatherv(Some(buf(send, &dt)), v, self.id) })
    }

    /// MPI_Alltoall: `send` and `recv` hold size blocks of equal length.
    pub fn all_to_all_into<T: Equivalence>(&self, send: &[T], recv: &mut [T]) -> Result<()> {
        let dt = T::datatype();
        self.length_check(send.len(), recv.len())?;
        let n = self.size() as usize;
        if !send.len().is_multiple_of(n) {
            return self.check(Err(wanmpi_runtime::MpiError::new(wanmpi_runtime::ErrorClass::Count, "alltoall buffer is not size equal blocks")));
        }
        let b = send.len() / n;
        // SAFETY: lengths checked.
        self.check(unsafe {
            self.rt.alltoall(Some(Buf::new(send.as_ptr() as *mut u8, b, &dt)), Buf::new(recv.as_mut_ptr() as *mut u8, b, &dt), self.id)
        })
    }

    /// MPI_Alltoallv.
    #[allow(clippy::too_many_arguments)]
    pub fn all_to_all_varcount_into<T: Equivalence>(
        &self,
        send: &[T],
        send_counts: &[usize],
        send_displs: &[isize],
        recv: &mut [T],
        recv_counts: &[usize],
        recv_displs: &[isize],
    ) -> Result<()> {
        let dt = T::datatype();
        check_blocks(self, send.len(), send_counts, send_displs)?;
        check_blocks(self, recv.len(), recv_counts, recv_displs)?;
        let s = VBuf { ptr: send.as_ptr() as *mut u8, counts: send_counts, displs: send_displs, dt: &dt };
        let r = VBuf { ptr: recv.as_mut_ptr() as *mut u8, counts: recv_counts, displs: recv_displs, dt: &dt };
        // SAFETY: blocks checked.
        self.check(unsafe { self.rt.alltoallv(Some(s), r, self.id) })
    }

    /// MPI_Reduce_scatter: rank i gets `counts[i]` reduced elements.
    pub fn reduce_scatter_into<T: Equivalence>(&self, send: &[T], recv: &mut [T], counts: &[usize], op: &Op) -> Result<()> {
        let dt = T::datatype();
        let total: usize = counts.iter().sum();
        self.length_check(total, send.len())?;
        let mine = counts.get(self.rank() as usize).copied().unwrap_or(0);
        self.length_check(mine, recv.len())?;
        // SAFETY: lengths checked.
        self.check(unsafe { self.rt.reduce_scatter(Some(send.as_ptr() as *const u8), recv.as_mut_ptr() as *mut u8, counts, &dt, op, self.id) })
    }

    pub(crate) fn length_check(&self, want: usize, have: usize) -> Result<()> {
        if have < want {
            return self.check(Err(wanmpi_runtime::MpiError::new(
                wanmpi_runtime::ErrorClass::Count,
                format!("buffer of {have} elements where {want} are needed"),
            )));
        }
        Ok(())
    }
}

fn check_blocks(c: &Communicator, len: usize, counts: &[usize], displs: &[isize]) -> Result<()> {
    let n = c.size() as usize;
    let ok = counts.len() == n
        && displs.len() == n
        && counts.iter().zip(displs).all(|(&k, &d)| d >= 0 && (d as usize).checked_add(k).is_some_and(|e| e <= len));
    if ok {
        Ok(())
    } else {
        c.check(Err(wanmpi_runtime::MpiError::new(wanmpi_runtime::ErrorClass::Count, "counts/displacements do not fit the buffer")))
    }
}
