//! Starting a collective: a `Plan` stages the user's input and builds the
//! schedule; a nonblocking call runs its plan once, a persistent one
//! (MPI_Bcast_init & co.) keeps it and runs it at every MPI_Start.

use std::ops::Range;
use std::sync::Arc;

use wanmpi_engine::coll::sched::{self, Block, Run, Schedule};
use wanmpi_engine::coll::{TAG_ALLREDUCE, TAG_BARRIER, TAG_BCAST, TAG_REDUCE, TAG_REDUCE_SCATTER};
use wanmpi_engine::datatype::Datatype;
use wanmpi_engine::op::Op;
use wanmpi_engine::{error::err, ErrorClass, MpiError, MpiResult};

use super::{advance, start_error, CollReq, Sink};
use crate::collectives::{reduction_buf, root_index, Buf};
use crate::comm::CommId;
use crate::p2p::{check_datatype, live_comm};
use crate::reqtable::{Entry, PersistentSpec, Req};
use crate::runtime::{Runtime, State};
use crate::staged::{reduction_view, Staged};

/// A built schedule and where its result goes.
pub type Built = (Schedule, Vec<(Range<usize>, Sink)>);

/// Where a collective runs: this rank, the number of peers it exchanges
/// with (the remote group's size on an inter-communicator) and which kind.
#[derive(Debug, Clone)]
pub struct Shape {
    pub rank: usize,
    pub size: usize,
    pub inter: bool,
    /// The site of every rank of an intra-communicator whose processes are
    /// all of this job (as the blocking collectives see them,
    /// `coll_adapter.rs`); empty otherwise (the flat algorithms).
    pub sites: Arc<[usize]>,
}

/// Stages input and builds the schedule for a shape and collective number.
pub type Plan = Arc<dyn Fn(&Shape, u32) -> MpiResult<Built> + Send + Sync>;

/// MPI_ROOT: the root's own group of an inter-communicator collective.
pub const ROOT: i32 = -3;

/// A rank's part in a rooted collective.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Root,
    /// Sends to or receives from the root, an index among the peers.
    Leaf(usize),
    /// The root's group other than the root on an inter-communicator.
    Idle,
}

/// `root` as the caller gave it: a rank of the communicator, or on an
/// inter-communicator MPI_ROOT, MPI_PROC_NULL or a rank of the remote group.
pub fn role(root: i32, sh: &Shape) -> MpiResult<Role> {
    if sh.inter {
        return match root {
            ROOT => Ok(Role::Root),
            crate::reqtable::PROC_NULL => Ok(Role::Idle),
            r => root_index(r, sh.size).map(Role::Leaf),
        };
    }
    let r = root_index(root, sh.size)?;
    Ok(if r == sh.rank { Role::Root } else { Role::Leaf(r) })
}

/// A collective that moves nothing (the idle side of an inter-communicator one).
pub fn nothing() -> Built {
    (Schedule::new(vec![vec![]]), vec![])
}

/// The error of a collective MPI does not define on inter-communicators.
pub fn intra_only(what: &str) -> MpiResult<Built> {
    err(ErrorClass::Comm, format!("{what} is not defined on inter-communicators"))
}

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

    /// The buffer's data, packed (a collective's input, read when it starts).
    pub fn packed(&self) -> MpiResult<Vec<u8>> {
        // SAFETY: the starting call's contract keeps the buffer valid.
        Ok(unsafe { Staged::input(self.addr as *const u8, self.count, &self.dt)? }.bytes().to_vec())
    }
}

/// Starts `plan` on `comm` under the lock: the next collective number,
/// the schedule's first round posted.
/// Starts `plan` on `comm` under the lock, its first round posted. A
/// nonblocking collective takes the communicator's next number (`seq`
/// None); a persistent one keeps the number it got at its `_init`, since
/// MPI matches persistent collectives in the order of their
/// initialisations, whatever order they are started in.
pub(crate) fn launch(st: &mut State, comm: CommId, plan: &Plan, seq: Option<u32>, sites: &SiteView<'_>) -> MpiResult<Entry> {
    let c = live_comm(st, comm)?;
    // The schedule's peers: the remote group on an inter-communicator.
    let group = Arc::clone(c.peer_group());
    let inter = c.is_inter();
    let sites: Arc<[usize]> = match sites {
        Some((map, job)) if !inter && group.within(*job) => group.members().iter().map(|&w| map.site_of(w)).collect(),
        _ => Arc::from([]),
    };
    let (shape, ctx) = (Shape { rank: c.rank, size: group.size(), inter, sites }, c.coll_ctx());
    let seq = match seq {
        Some(s) => s,
        None => next_seq(st, comm)?,
    };
    let (s, sinks) = plan(&shape, seq)?;
    Ok(Entry::Coll(Box::new(CollReq::new(Run::new(s), ctx, group, sinks))))
}

/// The job's site map and size, once sites are settled (`Runtime::site_view`).
pub(crate) type SiteView<'a> = Option<(&'a crate::sites::SiteMap, u32)>;

/// Takes `comm`'s next collective number.
pub(crate) fn next_seq(st: &mut State, comm: CommId) -> MpiResult<u32> {
    let c = st.comms.get_mut(comm).ok_or_else(|| wanmpi_engine::MpiError::new(ErrorClass::Comm, "communicator is not valid"))?;
    let seq = c.coll_seq;
    c.coll_seq = c.coll_seq.wrapping_add(1);
    Ok(seq)
}

impl Runtime {
    /// A nonblocking collective: started now, advanced by every progress step.
    pub(crate) fn start_coll(&self, comm: CommId, plan: Plan) -> MpiResult<Req> {
        let mut st = self.lock();
        let e = launch(&mut st, comm, &plan, None, &self.site_view())?;
        let r = st.reqs.insert(e);
        st.colls.track(r);
        advance(&mut st);
        self.progress(&mut st)?;
        Ok(r)
    }

    /// A persistent collective: checked now, started by MPI_Start.
    pub(crate) fn init_coll(&self, comm: CommId, plan: Plan) -> MpiResult<Req> {
        let mut st = self.lock();
        let seq = next_seq(&mut st, comm)?;
        Ok(st.reqs.insert(Entry::Persistent { spec: PersistentSpec::Coll { comm, plan, seq }, active: None }))
    }

    pub(crate) fn site_view(&self) -> SiteView<'_> {
        self.sites.get().map(|m| (m, self.size()))
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
        self.coll_request(
            comm,
            Arc::new(|sh: &Shape, seq| {
                if !sh.inter {
                    let s = sched::sites::barrier(sh.rank, &sh.sites, seq).unwrap_or_else(|| sched::barrier(sh.rank, sh.size, seq));
                    return Ok((s, vec![]));
                }
                // Every rank hears from every rank of the other group.
                let all: Vec<Block> = (0..sh.size).map(|peer| Block { peer, at: 0, len: 0, family: TAG_BARRIER }).collect();
                Ok((sched::direct(vec![], vec![], &all, &all, &[], seq).map_err(start_error)?, vec![]))
            }),
            persistent,
        )
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
            Arc::new(move |sh: &Shape, seq| {
                let role = role(root, sh)?;
                if role == Role::Idle {
                    return Ok(nothing());
                }
                // SAFETY: the caller's contract.
                let stage = unsafe { Staged::output(b.addr as *mut u8, b.count, &b.dt)? };
                let len = stage.bytes().len();
                let sinks = if role == Role::Root { vec![] } else { vec![(0..len, Sink::Whole(stage))] };
                let s = match (sh.inter, role) {
                    // The root sends the other group its data, all at once.
                    (true, Role::Root) => {
                        let all: Vec<Block> = (0..sh.size).map(|peer| Block { peer, at: 0, len, family: TAG_BCAST }).collect();
                        sched::direct(vec![], b.packed()?, &all, &[], &[], seq)
                    }
                    (true, Role::Leaf(r)) => sched::direct(vec![0; len], vec![], &[], &[Block { peer: r, at: 0, len, family: TAG_BCAST }], &[], seq),
                    (_, role) => {
                        let root = if let Role::Leaf(r) = role { r } else { sh.rank };
                        let data = if role == Role::Root { b.packed()? } else { vec![0; len] };
                        if sched::sites::spans_sites(&sh.sites) {
                            sched::sites::bcast(sh.rank, &sh.sites, data, root, seq).map(|s| s.expect("several sites"))
                        } else {
                            sched::bcast(sh.rank, sh.size, data, root, seq)
                        }
                    }
                };
                Ok((s.map_err(start_error)?, sinks))
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
            Arc::new(move |sh: &Shape, seq| {
                if sh.inter && send.is_none() {
                    return err(ErrorClass::Buffer, "MPI_IN_PLACE is not allowed on inter-communicators");
                }
                let (ty, n, input, out) = reduction_args(send, &recv, &op)?;
                let len = out.bytes().len();
                let s = if sh.inter {
                    // Each group gets the other group's reduction.
                    let all: Vec<usize> = (0..sh.size).collect();
                    sched::fold(out.bytes().to_vec(), input, &all, &all, n, ty, &op, TAG_ALLREDUCE, seq)
                } else {
                    if sched::sites::allreduce_fits(&sh.sites, &op) {
                        sched::sites::allreduce(sh.rank, &sh.sites, input, n, ty, &op, seq).map(|s| s.expect("checked above"))
                    } else {
                        sched::allreduce(sh.rank, sh.size, input, n, ty, &op, seq)
                    }
                };
                Ok((s.map_err(start_error)?, vec![(0..len, Sink::Whole(out))]))
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
            Arc::new(move |sh: &Shape, seq| {
                let role = role(root, sh)?;
                if role == Role::Idle {
                    return Ok(nothing());
                }
                // The root of an inter-communicator reduce sends nothing.
                let sends = !(sh.inter && role == Role::Root);
                if send.is_none() && sends && role != Role::Root {
                    return err(ErrorClass::Arg, "MPI_IN_PLACE in reduce is only allowed at the root of an intra-communicator");
                }
                let (ty, n) = reduction_view(recv.count, &recv.dt, matches!(op, Op::User { .. }))?;
                // SAFETY: the caller's contract.
                let input = match send {
                    _ if !sends => vec![],
                    Some(p) => unsafe { reduction_buf(Buf::new(p as *mut u8, recv.count, &recv.dt))? }.bytes().to_vec(),
                    None => unsafe { reduction_buf(recv.buf())? }.bytes().to_vec(),
                };
                let s = match (sh.inter, role) {
                    (true, Role::Root) => {
                        let all: Vec<usize> = (0..sh.size).collect();
                        let len = unsafe { reduction_buf(recv.buf())? }.bytes().len();
                        sched::fold(vec![0; len], vec![], &[], &all, n, ty, &op, TAG_REDUCE, seq)
                    }
                    (true, Role::Leaf(r)) => sched::fold(vec![], input, &[r], &[], n, ty, &op, TAG_REDUCE, seq),
                    (_, role) => sched::reduce(sh.rank, sh.size, input, n, ty, &op, if let Role::Leaf(r) = role { r } else { sh.rank }, seq),
                }
                .map_err(start_error)?;
                let sinks = if role == Role::Root {
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
            Arc::new(move |sh: &Shape, seq| {
                if sh.inter {
                    return intra_only("a scan");
                }
                let (ty, n, input, out) = reduction_args(send, &recv, &op)?;
                let prefix = out.bytes().to_vec();
                let len = prefix.len();
                let s = sched::scan(sh.rank, sh.size, input, prefix, !exclusive, n, ty, &op, seq).map_err(start_error)?;
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
            Arc::new(move |sh: &Shape, seq| {
                let (rank, size, inter) = (sh.rank, sh.size, sh.inter);
                let total: usize = counts.iter().sum();
                if inter {
                    let send = send.ok_or_else(|| MpiError::new(ErrorClass::Buffer, "MPI_IN_PLACE is not allowed on inter-communicators"))?;
                    return inter_reduce_scatter(send, recv, &counts, rank, size, &dt, &op, seq);
                }
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

/// Reduce-scatter on an inter-communicator (MPI-4.0 §6.11): this group's
/// ranks get the blocks (this group's `counts`) of the reduction of the
/// other group's vectors. Every rank sends its whole vector to every
/// remote rank, which folds them in rank order and keeps its own block:
/// one round, at the price of every vector crossing once per remote rank.
// The call's buffers and counts, this rank's place, and the sequence number.
#[allow(clippy::too_many_arguments)]
fn inter_reduce_scatter(
    send: usize,
    recv: usize,
    counts: &[usize],
    rank: usize,
    remote: usize,
    dt: &Datatype,
    op: &Op,
    seq: u32,
) -> MpiResult<Built> {
    let total: usize = counts.iter().sum();
    let (ty, n) = reduction_view(total, dt, matches!(op, Op::User { .. }))?;
    // SAFETY: the starting call's contract keeps both buffers valid.
    let input = unsafe { reduction_buf(Buf::new(send as *mut u8, total, dt))? }.bytes().to_vec();
    let mine = unsafe { reduction_buf(Buf::new(recv as *mut u8, counts[rank], dt))? };
    // Bytes per element in the reduction's view of the buffer.
    let unit = input.len().checked_div(total).unwrap_or(0);
    let at = counts[..rank].iter().sum::<usize>() * unit;
    let peers: Vec<usize> = (0..remote).collect();
    let s = sched::fold(vec![0; input.len()], input, &peers, &peers, n, ty, op, TAG_REDUCE_SCATTER, seq).map_err(start_error)?;
    Ok((s, vec![(at..at + counts[rank] * unit, Sink::Whole(mine))]))
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
