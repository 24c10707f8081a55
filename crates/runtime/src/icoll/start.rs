//! Starting a collective: a `Plan` stages the user's input and builds the
//! schedule; a nonblocking call runs its plan once, a persistent one
//! (MPI_Bcast_init & co.) keeps it and runs it at every MPI_Start.

use std::ops::Range;
use std::sync::Arc;

use wanmpi_engine::coll::sched::{self, Run, Schedule};
use wanmpi_engine::datatype::Datatype;
use wanmpi_engine::op::Op;
use wanmpi_engine::{error::err, ErrorClass, MpiResult};

use super::{advance, start_error, CollReq, Sink};
use crate::collectives::{reduction_buf, root_index, Buf};
use crate::comm::CommId;
use crate::p2p::{check_datatype, comm_ref};
use crate::reqtable::{Entry, PersistentSpec, Req};
use crate::runtime::{Runtime, State};
use crate::staged::{reduction_view, Staged};

/// A built schedule and where its result goes.
pub type Built = (Schedule, Vec<(Range<usize>, Sink)>);

/// Stages input and builds the schedule for (rank, size, seq).
pub type Plan = Arc<dyn Fn(usize, usize, u32) -> MpiResult<Built> + Send + Sync>;

/// A user buffer captured by a plan: its address, count and datatype.
#[derive(Clone)]
pub struct UBuf {
    pub addr: usize,
    pub count: usize,
    pub dt: Datatype,
}

impl UBuf {
    pub fn of(b: Buf<'_>) -> UBuf {
        UBuf { addr: b.ptr as usize, count: b.count, dt: b.dt.clone() }
    }
    pub fn buf(&self) -> Buf<'_> {
        Buf::new(self.addr as *mut u8, self.count, &self.dt)
    }
}

/// Starts `plan` on `comm` under the lock: the next collective number,
/// the schedule's first round posted.
pub(crate) fn launch(st: &mut State, comm: CommId, plan: &Plan) -> MpiResult<Entry> {
    let c = comm_ref(st, comm)?;
    if c.is_inter() {
        return err(ErrorClass::Comm, "collectives on inter-communicators are not supported");
    }
    let (rank, size, ctx, group, seq) = (c.rank, c.size(), c.coll_ctx(), Arc::clone(&c.group), c.coll_seq);
    let (s, sinks) = plan(rank, size, seq)?;
    if let Some(c) = st.comms.get_mut(comm) {
        c.coll_seq = c.coll_seq.wrapping_add(1);
    }
    Ok(Entry::Coll(Box::new(CollReq::new(Run::new(s), ctx, group, sinks))))
}

impl Runtime {
    /// A nonblocking collective: started now, advanced by every progress step.
    pub(crate) fn start_coll(&self, comm: CommId, plan: Plan) -> MpiResult<Req> {
        let mut st = self.lock();
        let e = launch(&mut st, comm, &plan)?;
        let r = st.reqs.insert(e);
        st.colls.track(r);
        advance(&mut st);
        self.progress(&mut st)?;
        Ok(r)
    }

    /// A persistent collective: checked now, started by MPI_Start.
    pub(crate) fn init_coll(&self, comm: CommId, plan: Plan) -> MpiResult<Req> {
        let mut st = self.lock();
        let c = comm_ref(&st, comm)?;
        if c.is_inter() {
            return err(ErrorClass::Comm, "collectives on inter-communicators are not supported");
        }
        Ok(st.reqs.insert(Entry::Persistent { spec: PersistentSpec::Coll { comm, plan }, active: None }))
    }

    /// Nonblocking (`persistent == false`) or persistent start of `plan`.
    pub(crate) fn coll_request(&self, comm: CommId, plan: Plan, persistent: bool) -> MpiResult<Req> {
        if persistent {
            self.init_coll(comm, plan)
        } else {
            self.start_coll(comm, plan)
        }
    }

    /// MPI_Ibarrier / MPI_Barrier_init.
    pub fn ibarrier(&self, comm: CommId, persistent: bool) -> MpiResult<Req> {
        self.coll_request(comm, Arc::new(|rank, size, seq| Ok((sched::barrier(rank, size, seq), vec![]))), persistent)
    }

    /// MPI_Ibcast / MPI_Bcast_init.
    ///
    /// # Safety
    /// `b` must stay valid until the collective completes (persistent: while the request lives).
    pub unsafe fn ibcast(&self, b: Buf<'_>, root: i32, comm: CommId, persistent: bool) -> MpiResult<Req> {
        check_datatype(b.dt)?;
        let b = UBuf::of(b);
        self.coll_request(
            comm,
            Arc::new(move |rank, size, seq| {
                let root = root_index(root, size)?;
                // SAFETY: the caller's contract.
                let stage = unsafe { Staged::output(b.addr as *mut u8, b.count, &b.dt)? };
                let len = stage.bytes().len();
                let data = if rank == root { stage.bytes().to_vec() } else { vec![0; len] };
                let s = sched::bcast(rank, size, data, root, seq).map_err(start_error)?;
                let sinks = if rank == root { vec![] } else { vec![(0..len, Sink::Whole(stage))] };
                Ok((s, sinks))
            }),
            persistent,
        )
    }

    /// MPI_Iallreduce / MPI_Allreduce_init (`send == None`: MPI_IN_PLACE).
    ///
    /// # Safety
    /// As `ibcast`, for both buffers.
    pub unsafe fn iallreduce(&self, send: Option<*const u8>, recv: Buf<'_>, op: &Op, comm: CommId, persistent: bool) -> MpiResult<Req> {
        check_datatype(recv.dt)?;
        let (recv, op, send) = (UBuf::of(recv), op.clone(), send.map(|p| p as usize));
        self.coll_request(
            comm,
            Arc::new(move |rank, size, seq| {
                let (ty, n, input, out) = reduction_args(send, &recv, &op)?;
                let len = out.bytes().len();
                let s = sched::allreduce(rank, size, input, n, ty, &op, seq).map_err(start_error)?;
                Ok((s, vec![(0..len, Sink::Whole(out))]))
            }),
            persistent,
        )
    }

    /// MPI_Ireduce / MPI_Reduce_init (`send == None`: MPI_IN_PLACE at the root).
    ///
    /// # Safety
    /// As `ibcast`, for both buffers.
    pub unsafe fn ireduce(&self, send: Option<*const u8>, recv: Buf<'_>, op: &Op, root: i32, comm: CommId, persistent: bool) -> MpiResult<Req> {
        check_datatype(recv.dt)?;
        let (recv, op, send) = (UBuf::of(recv), op.clone(), send.map(|p| p as usize));
        self.coll_request(
            comm,
            Arc::new(move |rank, size, seq| {
                let root = root_index(root, size)?;
                if rank != root && send.is_none() {
                    return err(ErrorClass::Arg, "MPI_IN_PLACE in reduce is only allowed at the root");
                }
                let (ty, n) = reduction_view(recv.count, &recv.dt, matches!(op, Op::User { .. }))?;
                // SAFETY: the caller's contract.
                let input = match send {
                    Some(p) => unsafe { reduction_buf(Buf::new(p as *mut u8, recv.count, &recv.dt))? }.bytes().to_vec(),
                    None => unsafe { reduction_buf(recv.buf())? }.bytes().to_vec(),
                };
                let s = sched::reduce(rank, size, input, n, ty, &op, root, seq).map_err(start_error)?;
                let sinks = if rank == root {
                    // SAFETY: the caller's contract.
                    let out = unsafe { reduction_buf(recv.buf())? };
                    vec![(0..out.bytes().len(), Sink::Whole(out))]
                } else {
                    vec![]
                };
                Ok((s, sinks))
            }),
            persistent,
        )
    }

    /// MPI_Iscan / MPI_Iexscan and their persistent forms.
    ///
    /// # Safety
    /// As `ibcast`, for both buffers.
    pub unsafe fn iscan(&self, send: Option<*const u8>, recv: Buf<'_>, op: &Op, comm: CommId, exclusive: bool, persistent: bool) -> MpiResult<Req> {
        check_datatype(recv.dt)?;
        let (recv, op, send) = (UBuf::of(recv), op.clone(), send.map(|p| p as usize));
        self.coll_request(
            comm,
            Arc::new(move |rank, size, seq| {
                let (ty, n, input, out) = reduction_args(send, &recv, &op)?;
                let prefix = out.bytes().to_vec();
                let len = prefix.len();
                let s = sched::scan(rank, size, input, prefix, !exclusive, n, ty, &op, seq).map_err(start_error)?;
                Ok((s, vec![(0..len, Sink::Whole(out))]))
            }),
            persistent,
        )
    }

    /// MPI_Ireduce_scatter(_block) and their persistent forms: an allreduce
    /// of the whole vector, of which each rank keeps its block.
    ///
    /// # Safety
    /// As `ibcast`, for both buffers.
    // MPI_Ireduce_scatter's arguments plus the persistence flag.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn ireduce_scatter(
        &self,
        send: Option<*const u8>,
        recv: *mut u8,
        recvcounts: &[usize],
        dt: &Datatype,
        op: &Op,
        comm: CommId,
        persistent: bool,
    ) -> MpiResult<Req> {
        check_datatype(dt)?;
        let size = self.comm_size(comm)?;
        if recvcounts.len() != size {
            return err(ErrorClass::Count, format!("{} receive counts for {} ranks", recvcounts.len(), size));
        }
        let (counts, op, send, recv, dt) = (recvcounts.to_vec(), op.clone(), send.map(|p| p as usize), recv as usize, dt.clone());
        self.coll_request(
            comm,
            Arc::new(move |rank, size, seq| {
                let total: usize = counts.iter().sum();
                let all = UBuf { addr: recv, count: total, dt: dt.clone() };
                let (ty, n, input, _) = reduction_args(send, &all, &op)?;
                // Bytes per element in the reduction's view of the buffer.
                let unit = input.len().checked_div(total).unwrap_or(0);
                let before: usize = counts[..rank].iter().sum();
                // SAFETY: the caller's contract.
                let mine = unsafe { reduction_buf(Buf::new(recv as *mut u8, counts[rank], &dt))? };
                let s = sched::allreduce(rank, size, input, n, ty, &op, seq).map_err(start_error)?;
                let at = before * unit;
                Ok((s, vec![(at..at + counts[rank] * unit, Sink::Whole(mine))]))
            }),
            persistent,
        )
    }
}

/// A reduction's view of its buffers: basic type, element count, the
/// input bytes (the send buffer, or the receive buffer's for
/// MPI_IN_PLACE) and the output.
fn reduction_args(send: Option<usize>, recv: &UBuf, op: &Op) -> MpiResult<(wanmpi_engine::datatype::BasicType, usize, Vec<u8>, Staged)> {
    let (ty, n) = reduction_view(recv.count, &recv.dt, matches!(op, Op::User { .. }))?;
    // SAFETY: the starting call's contract keeps both buffers valid.
    let out = unsafe { reduction_buf(recv.buf())? };
    let input = match send {
        Some(p) => unsafe { reduction_buf(Buf::new(p as *mut u8, recv.count, &recv.dt))? }.bytes().to_vec(),
        None => out.bytes().to_vec(),
    };
    Ok((ty, n, input, out))
}
