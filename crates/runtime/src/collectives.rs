//! Collective operations (MPI-3.1 chapter 5) over user buffers and
//! datatypes: argument checks, staging, then the algorithms of
//! `wanmpi_engine::coll` on the communicator's collective context.

use wanmpi_engine::coll::{self, Blocks};
use wanmpi_engine::datatype::{Combiner, Datatype};
use wanmpi_engine::op::Op;
use wanmpi_engine::{error::err, ErrorClass, MpiResult};

use crate::coll_adapter::{coll_error, CollAdapter};
use crate::comm::CommId;
use crate::icoll::equal_blocks;
use crate::p2p::{check_datatype, comm_ref};
use crate::runtime::Runtime;
use crate::staged::{reduction_view, Staged, StagedBlocks};

/// A user buffer argument: address, element count, datatype.
#[derive(Clone, Copy)]
pub struct Buf<'a> {
    pub ptr: *mut u8,
    pub count: usize,
    pub dt: &'a Datatype,
}

impl<'a> Buf<'a> {
    pub fn new(ptr: *mut u8, count: usize, dt: &'a Datatype) -> Buf<'a> {
        Buf { ptr, count, dt }
    }
}

/// A v-variant buffer: per-rank counts and displacements in elements.
#[derive(Clone, Copy)]
pub struct VBuf<'a> {
    pub ptr: *mut u8,
    pub counts: &'a [usize],
    pub displs: &'a [isize],
    pub dt: &'a Datatype,
}

pub(crate) fn root_index(root: i32, size: usize) -> MpiResult<usize> {
    usize::try_from(root)
        .ok()
        .filter(|r| *r < size)
        .map_or_else(|| err(ErrorClass::Root, format!("root {root} is not a rank of a communicator of size {size}")), Ok)
}

/// The bytes a reduction works on: predefined types in their C layout,
/// derived ones staged.
pub(crate) unsafe fn reduction_buf(b: Buf<'_>) -> MpiResult<Staged> {
    if b.dt.combiner() == Combiner::Named {
        let len =
            b.count.checked_mul(b.dt.extent().max(0) as usize).ok_or_else(|| wanmpi_engine::MpiError::new(ErrorClass::Count, "count overflows"))?;
        Ok(Staged::raw(b.ptr, len))
    } else {
        Staged::output(b.ptr, b.count, b.dt)
    }
}

impl Runtime {
    /// The remote group's size when `comm` is an inter-communicator: its
    /// collectives run as schedules (`icoll`), the blocking ones started
    /// and waited for.
    pub(crate) fn inter_peers(&self, comm: CommId) -> MpiResult<Option<usize>> {
        let st = self.lock();
        let c = comm_ref(&st, comm)?;
        Ok(c.remote.as_ref().map(|g| g.size()))
    }

    /// Waits for a collective request; its error is the call's.
    pub(crate) fn wait_coll(&self, r: crate::reqtable::Req) -> MpiResult<()> {
        self.wait(r)?.status.error.map_or(Ok(()), Err)
    }

    pub(crate) fn adapter(&self, comm: CommId) -> MpiResult<CollAdapter<'_>> {
        let st = self.lock();
        let c = crate::p2p::live_comm(&st, comm)?;
        if c.is_inter() {
            return err(ErrorClass::Comm, "not available on inter-communicators (scan and exscan are not defined there)");
        }
        Ok(CollAdapter { rt: self, group: c.group.clone(), ctx: c.coll_ctx(), rank: c.rank, size: c.size() })
    }

    /// MPI_Barrier.
    pub fn barrier(&self, comm: CommId) -> MpiResult<()> {
        if self.inter_peers(comm)?.is_some() {
            return self.wait_coll(self.ibarrier(comm, false)?);
        }
        coll::barrier(&mut self.adapter(comm)?).map_err(coll_error)
    }

    /// MPI_Bcast.
    ///
    /// # Safety
    /// `b` must describe valid memory.
    pub unsafe fn bcast(&self, b: Buf<'_>, root: i32, comm: CommId) -> MpiResult<()> {
        if self.inter_peers(comm)?.is_some() {
            return self.wait_coll(self.ibcast(b, root, comm, false)?);
        }
        check_datatype(b.dt)?;
        let mut a = self.adapter(comm)?;
        let root = root_index(root, a.size)?;
        let mut s = Staged::output(b.ptr, b.count, b.dt)?;
        coll::bcast(&mut a, s.bytes_mut(), root).map_err(coll_error)?;
        s.finish();
        Ok(())
    }

    /// MPI_Reduce (`send == None` is MPI_IN_PLACE at the root).
    ///
    /// # Safety
    /// The buffers must describe valid memory.
    pub unsafe fn reduce(&self, send: Option<*const u8>, recv: Buf<'_>, op: &Op, root: i32, comm: CommId) -> MpiResult<()> {
        if self.inter_peers(comm)?.is_some() {
            return self.wait_coll(self.ireduce(send, recv, op, root, comm, false)?);
        }
        check_datatype(recv.dt)?;
        let mut a = self.adapter(comm)?;
        let root = root_index(root, a.size)?;
        let (ty, n) = reduction_view(recv.count, recv.dt, matches!(op, Op::User { .. }))?;
        let input = send.map(|p| reduction_buf(Buf { ptr: p as *mut u8, ..recv })).transpose()?;
        let at_root = a.rank == root;
        let mut out = if at_root { Some(reduction_buf(recv)?) } else { None };
        let mut scratch = Vec::new();
        let out_bytes = match out.as_mut() {
            Some(o) => o.bytes_mut(),
            None => &mut scratch,
        };
        coll::reduce(&mut a, input.as_ref().map(|s| s.bytes()), out_bytes, n, ty, op, root).map_err(coll_error)?;
        if let Some(o) = out {
            o.finish();
        }
        Ok(())
    }

    /// MPI_Allreduce.
    ///
    /// # Safety
    /// The buffers must describe valid memory.
    pub unsafe fn allreduce(&self, send: Option<*const u8>, recv: Buf<'_>, op: &Op, comm: CommId) -> MpiResult<()> {
        if self.inter_peers(comm)?.is_some() {
            return self.wait_coll(self.iallreduce(send, recv, op, comm, false)?);
        }
        check_datatype(recv.dt)?;
        let mut a = self.adapter(comm)?;
        let (ty, n) = reduction_view(recv.count, recv.dt, matches!(op, Op::User { .. }))?;
        let input = send.map(|p| reduction_buf(Buf { ptr: p as *mut u8, ..recv })).transpose()?;
        let mut out = reduction_buf(recv)?;
        coll::allreduce(&mut a, input.as_ref().map(|s| s.bytes()), out.bytes_mut(), n, ty, op).map_err(coll_error)?;
        out.finish();
        Ok(())
    }

    /// MPI_Scan / MPI_Exscan.
    ///
    /// # Safety
    /// The buffers must describe valid memory.
    pub unsafe fn scan(&self, send: Option<*const u8>, recv: Buf<'_>, op: &Op, comm: CommId, exclusive: bool) -> MpiResult<()> {
        check_datatype(recv.dt)?;
        let mut a = self.adapter(comm)?;
        let (ty, n) = reduction_view(recv.count, recv.dt, matches!(op, Op::User { .. }))?;
        let input = send.map(|p| reduction_buf(Buf { ptr: p as *mut u8, ..recv })).transpose()?;
        let mut out = reduction_buf(recv)?;
        let inp = input.as_ref().map(|s| s.bytes());
        if exclusive { coll::exscan(&mut a, inp, out.bytes_mut(), n, ty, op) } else { coll::scan(&mut a, inp, out.bytes_mut(), n, ty, op) }
            .map_err(coll_error)?;
        out.finish();
        Ok(())
    }

    /// MPI_Reduce_scatter (`recvcounts` per rank) and, with equal counts,
    /// MPI_Reduce_scatter_block.
    ///
    /// # Safety
    /// The buffers must describe valid memory.
    pub unsafe fn reduce_scatter(
        &self,
        send: Option<*const u8>,
        recv: *mut u8,
        recvcounts: &[usize],
        dt: &Datatype,
        op: &Op,
        comm: CommId,
    ) -> MpiResult<()> {
        if self.inter_peers(comm)?.is_some() {
            return self.wait_coll(self.ireduce_scatter(send, recv, recvcounts, dt, op, comm, false)?);
        }
        check_datatype(dt)?;
        let mut a = self.adapter(comm)?;
        if recvcounts.len() != a.size {
            return err(ErrorClass::Count, format!("{} receive counts for {} ranks", recvcounts.len(), a.size));
        }
        let total: usize = recvcounts.iter().sum();
        let mine = recvcounts[a.rank];
        let user = matches!(op, Op::User { .. });
        let (ty, per) = reduction_view(1, dt, user)?;
        let counts: Vec<usize> = recvcounts.iter().map(|c| c * per).collect();
        let input = send.map(|p| reduction_buf(Buf::new(p as *mut u8, total, dt))).transpose()?;
        // In place, the whole input is in `recv`; the result lands at its start.
        let mut out = reduction_buf(Buf::new(recv, if send.is_none() { total } else { mine }, dt))?;
        coll::reduce_scatter(&mut a, input.as_ref().map(|s| s.bytes()), out.bytes_mut(), &counts, ty, op).map_err(coll_error)?;
        out.finish();
        Ok(())
    }

    /// MPI_Gather / MPI_Gatherv share this: `send == None` is MPI_IN_PLACE.
    ///
    /// # Safety
    /// The buffers must describe valid memory.
    pub unsafe fn gather(&self, send: Option<Buf<'_>>, recv: Buf<'_>, root: i32, comm: CommId) -> MpiResult<()> {
        if let Some(n) = self.inter_peers(comm)? {
            let (c, d) = equal_blocks(recv.count, n);
            let v = VBuf { ptr: recv.ptr, counts: &c, displs: &d, dt: recv.dt };
            return self.wait_coll(self.igatherv(send, v, root, comm, false)?);
        }
        let mut a = self.adapter(comm)?;
        let root = root_index(root, a.size)?;
        let at_root = a.rank == root;
        if at_root {
            check_datatype(recv.dt)?;
        }
        let input = send.map(|s| Staged::input(s.ptr, s.count, s.dt)).transpose()?;
        let block = if at_root { recv.count * recv.dt.size() } else { input.as_ref().map_or(0, |s| s.bytes().len()) };
        let mut out = if at_root { Some(Staged::output(recv.ptr, recv.count * a.size, recv.dt)?) } else { None };
        let mut none = Vec::new();
        let ob = out.as_mut().map_or(&mut none[..], |o| o.bytes_mut());
        coll::gather(&mut a, input.as_ref().map(|s| s.bytes()), ob, block, root).map_err(coll_error)?;
        if let Some(o) = out {
            o.finish();
        }
        Ok(())
    }

    /// MPI_Gatherv.
    ///
    /// # Safety
    /// The buffers must describe valid memory.
    pub unsafe fn gatherv(&self, send: Option<Buf<'_>>, recv: VBuf<'_>, root: i32, comm: CommId) -> MpiResult<()> {
        if self.inter_peers(comm)?.is_some() {
            return self.wait_coll(self.igatherv(send, recv, root, comm, false)?);
        }
        let mut a = self.adapter(comm)?;
        let root = root_index(root, a.size)?;
        let input = send.map(|s| Staged::input(s.ptr, s.count, s.dt)).transpose()?;
        if a.rank != root {
            let mut none = Vec::new();
            return coll::gatherv(&mut a, input.as_ref().map(|s| s.bytes()), &mut none, Blocks::new(&[], &[]), root).map_err(coll_error);
        }
        check_datatype(recv.dt)?;
        let mut out = StagedBlocks::new(recv.ptr, recv.counts, recv.displs, recv.dt)?;
        let (bc, bd) = (out.byte_counts.clone(), out.byte_displs.clone());
        coll::gatherv(&mut a, input.as_ref().map(|s| s.bytes()), out.bytes_mut(), Blocks::new(&bc, &bd), root).map_err(coll_error)?;
        out.finish();
        Ok(())
    }

    /// MPI_Scatter: `recv == None` is MPI_IN_PLACE at the root.
    ///
    /// # Safety
    /// The buffers must describe valid memory.
    pub unsafe fn scatter(&self, send: Buf<'_>, recv: Option<Buf<'_>>, root: i32, comm: CommId) -> MpiResult<()> {
        if let Some(n) = self.inter_peers(comm)? {
            let (c, d) = equal_blocks(send.count, n);
            let v = VBuf { ptr: send.ptr, counts: &c, displs: &d, dt: send.dt };
            return self.wait_coll(self.iscatterv(v, recv, root, comm, false)?);
        }
        let mut a = self.adapter(comm)?;
        let root = root_index(root, a.size)?;
        let at_root = a.rank == root;
        let input = if at_root { Some(Staged::input(send.ptr, send.count * a.size, send.dt)?) } else { None };
        let mut out = recv.map(|r| Staged::output(r.ptr, r.count, r.dt)).transpose()?;
        let block = if at_root { send.count * send.dt.size() } else { out.as_ref().map_or(0, |o| o.bytes().len()) };
        coll::scatter(&mut a, input.as_ref().map_or(&[][..], |s| s.bytes()), out.as_mut().map(|o| o.bytes_mut()), block, root).map_err(coll_error)?;
        if let Some(o) = out {
            o.finish();
        }
        Ok(())
    }

    /// MPI_Scatterv.
    ///
    /// # Safety
    /// The buffers must describe valid memory.
    pub unsafe fn scatterv(&self, send: VBuf<'_>, recv: Option<Buf<'_>>, root: i32, comm: CommId) -> MpiResult<()> {
        if self.inter_peers(comm)?.is_some() {
            return self.wait_coll(self.iscatterv(send, recv, root, comm, false)?);
        }
        let mut a = self.adapter(comm)?;
        let root = root_index(root, a.size)?;
        let input = if a.rank == root { Some(StagedBlocks::new(send.ptr, send.counts, send.displs, send.dt)?) } else { None };
        let mut out = recv.map(|r| Staged::output(r.ptr, r.count, r.dt)).transpose()?;
        let (bc, bd) = input.as_ref().map_or((vec![], vec![]), |i| (i.byte_counts.clone(), i.byte_displs.clone()));
        coll::scatterv(&mut a, input.as_ref().map_or(&[][..], |s| s.bytes()), Blocks::new(&bc, &bd), out.as_mut().map(|o| o.bytes_mut()), root)
            .map_err(coll_error)?;
        if let Some(o) = out {
            o.finish();
        }
        Ok(())
    }

    /// MPI_Allgather (`send == None` is MPI_IN_PLACE).
    ///
    /// # Safety
    /// The buffers must describe valid memory.
    pub unsafe fn allgather(&self, send: Option<Buf<'_>>, recv: Buf<'_>, comm: CommId) -> MpiResult<()> {
        if let Some(n) = self.inter_peers(comm)? {
            let (c, d) = equal_blocks(recv.count, n);
            let v = VBuf { ptr: recv.ptr, counts: &c, displs: &d, dt: recv.dt };
            return self.wait_coll(self.iallgatherv(send, v, comm, false)?);
        }
        check_datatype(recv.dt)?;
        let mut a = self.adapter(comm)?;
        let input = send.map(|s| Staged::input(s.ptr, s.count, s.dt)).transpose()?;
        let mut out = Staged::output(recv.ptr, recv.count * a.size, recv.dt)?;
        let block = recv.count * recv.dt.size();
        coll::allgather(&mut a, input.as_ref().map(|s| s.bytes()), out.bytes_mut(), block).map_err(coll_error)?;
        out.finish();
        Ok(())
    }

    /// MPI_Allgatherv.
    ///
    /// # Safety
    /// The buffers must describe valid memory.
    pub unsafe fn allgatherv(&self, send: Option<Buf<'_>>, recv: VBuf<'_>, comm: CommId) -> MpiResult<()> {
        if self.inter_peers(comm)?.is_some() {
            return self.wait_coll(self.iallgatherv(send, recv, comm, false)?);
        }
        check_datatype(recv.dt)?;
        let mut a = self.adapter(comm)?;
        let input = send.map(|s| Staged::input(s.ptr, s.count, s.dt)).transpose()?;
        let mut out = StagedBlocks::new(recv.ptr, recv.counts, recv.displs, recv.dt)?;
        let (bc, bd) = (out.byte_counts.clone(), out.byte_displs.clone());
        coll::allgatherv(&mut a, input.as_ref().map(|s| s.bytes()), out.bytes_mut(), Blocks::new(&bc, &bd)).map_err(coll_error)?;
        out.finish();
        Ok(())
    }

    /// MPI_Alltoall (`send == None` is MPI_IN_PLACE).
    ///
    /// # Safety
    /// The buffers must describe valid memory.
    pub unsafe fn alltoall(&self, send: Option<Buf<'_>>, recv: Buf<'_>, comm: CommId) -> MpiResult<()> {
        if let Some(n) = self.inter_peers(comm)? {
            let (rc, rd) = equal_blocks(recv.count, n);
            let (sc, sd) = equal_blocks(send.map_or(0, |b| b.count), n);
            let sv = send.map(|b| VBuf { ptr: b.ptr, counts: &sc, displs: &sd, dt: b.dt });
            return self.wait_coll(self.ialltoallv(sv, VBuf { ptr: recv.ptr, counts: &rc, displs: &rd, dt: recv.dt }, comm, false)?);
        }
        check_datatype(recv.dt)?;
        let mut a = self.adapter(comm)?;
        let input = send.map(|s| Staged::input(s.ptr, s.count * a.size, s.dt)).transpose()?;
        let mut out = Staged::output(recv.ptr, recv.count * a.size, recv.dt)?;
        let block = recv.count * recv.dt.size();
        coll::alltoall(&mut a, input.as_ref().map(|s| s.bytes()), out.bytes_mut(), block).map_err(coll_error)?;
        out.finish();
        Ok(())
    }

    /// MPI_Alltoallv (`send == None` is MPI_IN_PLACE).
    ///
    /// # Safety
    /// The buffers must describe valid memory.
    pub unsafe fn alltoallv(&self, send: Option<VBuf<'_>>, recv: VBuf<'_>, comm: CommId) -> MpiResult<()> {
        if self.inter_peers(comm)?.is_some() {
            return self.wait_coll(self.ialltoallv(send, recv, comm, false)?);
        }
        check_datatype(recv.dt)?;
        let mut a = self.adapter(comm)?;
        let input = send.map(|s| StagedBlocks::new(s.ptr, s.counts, s.displs, s.dt)).transpose()?;
        let mut out = StagedBlocks::new(recv.ptr, recv.counts, recv.displs, recv.dt)?;
        let (bc, bd) = (out.byte_counts.clone(), out.byte_displs.clone());
        let (sc, sd) = input.as_ref().map_or((vec![], vec![]), |i| (i.byte_counts.clone(), i.byte_displs.clone()));
        let send_arg = input.as_ref().map(|i| (i.bytes(), Blocks::new(&sc, &sd)));
        coll::alltoallv(&mut a, send_arg, out.bytes_mut(), Blocks::new(&bc, &bd)).map_err(coll_error)?;
        out.finish();
        Ok(())
    }
}
