//! Communication calls (MPI-4.0 §12.3): put, get, accumulate,
//! get_accumulate, fetch_and_op, compare_and_swap and their request-based
//! forms. The origin's data is packed at the call (its buffer is free at
//! once); the target datatype travels flattened into byte blocks; ranges
//! are checked here when the target's size is known, and again at the
//! target.

use wanmpi_engine::datatype::{BasicType, Datatype};
use wanmpi_engine::op::{Op, PredefOp};
use wanmpi_engine::{ErrorClass, MpiError, MpiResult};

use super::create::{bad_win, Flavor};
use super::memory::Memory;
use super::origin::Sink;
use super::wire::{Place, Request};
use super::WinId;
use crate::p2p::check_datatype;
use crate::reqtable::{Entry, Req, Status, PROC_NULL};
use crate::runtime::{Runtime, State};

/// An origin-side buffer argument.
#[derive(Clone, Copy)]
pub struct OriginBuf<'a> {
    pub ptr: *const u8,
    pub count: usize,
    pub dt: &'a Datatype,
}

/// The target-side arguments of a call.
#[derive(Clone, Copy)]
pub struct TargetSpec<'a> {
    pub rank: i32,
    pub disp: i64,
    pub count: usize,
    pub dt: &'a Datatype,
}

/// What a call does at the target.
enum Kind<'a> {
    Put,
    Get { into: OriginBuf<'a> },
    Acc { op: PredefOp },
    GetAcc { op: PredefOp, into: OriginBuf<'a> },
    Cas { compare: *const u8, into: *mut u8 },
}

fn flatten(dt: &Datatype, count: usize) -> Vec<(i64, u64)> {
    let mut blocks: Vec<(i64, u64)> = Vec::new();
    dt.for_each_block(count, |off, len| match blocks.last_mut() {
        // Adjacent runs travel as one.
        Some(last) if last.0 + last.1 as i64 == off as i64 => last.1 += len as u64,
        _ => blocks.push((off as i64, len as u64)),
    });
    blocks
}

/// Room left in a piece for the request's header and block list.
const PIECE_HEADROOM: usize = 4096;
const MIN_PIECE: usize = 4096;

/// `place` cut into pieces of at most `piece` data bytes, each with the
/// range of packed data it carries, in order.
fn split(place: &Place, piece: usize) -> Vec<(Place, std::ops::Range<usize>)> {
    let mut out = Vec::new();
    let (mut cur, mut bytes, mut start) = (Vec::new(), 0usize, 0usize);
    for &(off, len) in &place.blocks {
        let (mut off, mut len) = (off, len as usize);
        while len > 0 {
            let take = len.min(piece - bytes);
            cur.push((off, take as u64));
            (bytes, off, len) = (bytes + take, off + take as i64, len - take);
            if bytes == piece {
                out.push((Place { disp: place.disp, blocks: std::mem::take(&mut cur) }, start..start + bytes));
                (start, bytes) = (start + bytes, 0);
            }
        }
    }
    if bytes > 0 {
        out.push((Place { disp: place.disp, blocks: cur }, start..start + bytes));
    }
    out
}

fn predef(op: &Op) -> MpiResult<PredefOp> {
    match op {
        Op::Predef(p) => Ok(*p),
        Op::User { .. } => Err(MpiError::new(ErrorClass::Op, "one-sided accumulates take predefined operations only (MPI-4.0 §12.3.4)")),
    }
}

/// The one basic type an accumulate works on, and whether `op` is defined
/// for it. An accumulate of no data is allowed with any op and type (MPICH
/// and mpi4py's tests agree).
fn element(op: PredefOp, origin: &Datatype, target: &Datatype, bytes: usize) -> MpiResult<BasicType> {
    if bytes == 0 {
        return Ok(target.basic_kind().unwrap_or(BasicType::Byte));
    }
    let t =
        target.basic_kind().ok_or_else(|| MpiError::new(ErrorClass::Type, "an accumulate's target datatype must be built of one predefined type"))?;
    if origin.size() != 0 && origin.basic_kind() != Some(t) {
        return Err(MpiError::new(ErrorClass::Type, "an accumulate's origin and target datatypes must be built of the same predefined type"));
    }
    if !op.is_defined_for(t) {
        return Err(MpiError::new(ErrorClass::Op, format!("{} is not defined for {}", op.mpi_name(), t.mpi_name())));
    }
    Ok(t)
}

impl Runtime {
    /// MPI_Put / MPI_Rput.
    ///
    /// # Safety
    /// `origin` must hold `count` elements of its datatype.
    pub unsafe fn put(&self, w: WinId, origin: OriginBuf<'_>, target: TargetSpec<'_>, want_req: bool) -> MpiResult<Option<Req>> {
        self.issue(w, Some(origin), target, Kind::Put, want_req)
    }

    /// MPI_Get / MPI_Rget: `into` is written once the target answered.
    ///
    /// # Safety
    /// `into` must stay valid and unused until the operation completes.
    pub unsafe fn get(&self, w: WinId, into: OriginBuf<'_>, target: TargetSpec<'_>, want_req: bool) -> MpiResult<Option<Req>> {
        self.issue(w, None, target, Kind::Get { into }, want_req)
    }

    /// MPI_Accumulate / MPI_Raccumulate.
    ///
    /// # Safety
    /// As `put`.
    pub unsafe fn accumulate(&self, w: WinId, origin: OriginBuf<'_>, target: TargetSpec<'_>, op: &Op, want_req: bool) -> MpiResult<Option<Req>> {
        self.issue(w, Some(origin), target, Kind::Acc { op: predef(op)? }, want_req)
    }

    /// MPI_Get_accumulate / MPI_Rget_accumulate / MPI_Fetch_and_op
    /// (`origin` None for MPI_NO_OP).
    ///
    /// # Safety
    /// As `put` and `get`.
    pub unsafe fn get_accumulate(
        &self,
        w: WinId,
        origin: Option<OriginBuf<'_>>,
        result: OriginBuf<'_>,
        target: TargetSpec<'_>,
        op: &Op,
        want_req: bool,
    ) -> MpiResult<Option<Req>> {
        self.issue(w, origin, target, Kind::GetAcc { op: predef(op)?, into: result }, want_req)
    }

    /// MPI_Compare_and_swap of one element of `dt`.
    ///
    /// # Safety
    /// The three buffers hold one element of `dt`; `result` stays valid
    /// until the operation completes.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn compare_and_swap(
        &self,
        w: WinId,
        origin: *const u8,
        compare: *const u8,
        result: *mut u8,
        dt: &Datatype,
        rank: i32,
        disp: i64,
    ) -> MpiResult<()> {
        let b = dt.basic_kind().filter(|b| dt.is_contiguous() && dt.size() == b.size());
        match b.map(|b| b.op_class()) {
            Some(wanmpi_engine::datatype::OpClass::Integer | wanmpi_engine::datatype::OpClass::Logical | wanmpi_engine::datatype::OpClass::Byte) => {}
            _ => return Err(MpiError::new(ErrorClass::Type, "compare-and-swap takes one element of a predefined integer, logical or byte type")),
        }
        let ob = OriginBuf { ptr: origin, count: 1, dt };
        self.issue(w, Some(ob), TargetSpec { rank, disp, count: 1, dt }, Kind::Cas { compare, into: result }, false).map(|_| ())
    }

    unsafe fn issue(
        &self,
        w: WinId,
        origin: Option<OriginBuf<'_>>,
        target: TargetSpec<'_>,
        kind: Kind<'_>,
        want_req: bool,
    ) -> MpiResult<Option<Req>> {
        for b in origin.iter() {
            check_datatype(b.dt)?;
        }
        check_datatype(target.dt)?;
        let mut st = self.lock();
        let done = |st: &mut State| want_req.then(|| st.reqs.insert(Entry::Done(Status::empty())));
        if target.rank == PROC_NULL {
            return Ok(done(&mut st));
        }
        let win = st.wins.map.get(&w.0).ok_or_else(|| bad_win(w))?;
        let t = usize::try_from(target.rank).ok().filter(|&r| r < win.group.size()).ok_or_else(|| {
            MpiError::new(ErrorClass::Rank, format!("target rank {} is not in the window's group of {}", target.rank, win.group.size()))
        })?;
        let world = win.group.world(t).unwrap_or(0);
        if !win.access.may_access(world) {
            return Err(MpiError::new(
                ErrorClass::RmaSync,
                format!("no access epoch is open to rank {t} (call MPI_Win_fence, MPI_Win_lock or MPI_Win_start first)"),
            ));
        }
        let tbytes = target.dt.packed_size(target.count);
        if let Some(o) = origin {
            if o.dt.packed_size(o.count) != tbytes {
                return Err(MpiError::new(
                    ErrorClass::Type,
                    format!("origin data ({} bytes) and target datatype ({tbytes} bytes) differ in size", o.dt.packed_size(o.count)),
                ));
            }
        }
        // Nothing to move (a zero count or an empty type): nothing to send,
        // whatever the other arguments (MPICH's badrma test).
        if tbytes == 0 {
            return Ok(done(&mut st));
        }
        let place = Place { disp: target.disp, blocks: flatten(target.dt, target.count) };
        // Check the range here when the target's size is known: the error
        // then belongs to this call, as in MPICH.
        if let (Some(&(size, unit)), false) = (win.peers.get(t), win.flavor == Flavor::Dynamic) {
            let probe = Memory::Fixed { base: 0, size: size as usize, _owned: None, _mapping: None };
            probe.resolve(&place, unit as usize)?;
        }
        let data = origin.map(|o| {
            let mut v = Vec::with_capacity(tbytes);
            o.dt.pack(o.ptr, o.count, &mut v);
            v
        });
        // A long put or get goes as eager-sized pieces, each applied and
        // answered on its own: a message over the eager limit would wait a
        // rendezvous round trip first (the target posts its receive only
        // when the request arrives), which a WAN makes expensive.
        let piece = st.engine.config().eager_limit.saturating_sub(PIECE_HEADROOM).max(MIN_PIECE);
        if !want_req && tbytes > piece {
            if let Kind::Get { into } = kind {
                check_datatype(into.dt)?;
                if into.dt.packed_size(into.count) != tbytes {
                    return Err(MpiError::new(ErrorClass::Type, "origin and target datatypes of a get differ in size"));
                }
            }
            if let Kind::Put | Kind::Get { .. } = kind {
                let State { wins, engine, .. } = &mut *st;
                let win = wins.map.get_mut(&w.0).ok_or_else(|| bad_win(w))?;
                for (p, range) in split(&place, piece) {
                    let req = match kind {
                        Kind::Get { into } => {
                            let sink = Sink::Into { ptr: into.ptr as usize, count: into.count, datatype: into.dt.clone(), offset: range.start };
                            let id = win.access.issue(world, sink, None);
                            Request::Get { id, place: p }
                        }
                        _ => {
                            let id = win.access.issue(world, Sink::Ack, None);
                            Request::Put { id, place: p, data: data.as_ref().map_or(vec![], |d| d[range].to_vec()) }
                        }
                    };
                    win.send_request(engine, world, &req);
                }
                self.progress(&mut st)?;
                self.settle_self(&mut st, w, world)?;
                return Ok(None);
            }
        }
        let (sink, make): (Sink, Box<dyn FnOnce(u64) -> Request>) = match kind {
            Kind::Put => (Sink::Ack, Box::new(|id| Request::Put { id, place, data: data.unwrap_or_default() })),
            Kind::Get { into } => {
                check_datatype(into.dt)?;
                if into.dt.packed_size(into.count) != tbytes {
                    return Err(MpiError::new(ErrorClass::Type, "origin and target datatypes of a get differ in size"));
                }
                (
                    Sink::Into { ptr: into.ptr as usize, count: into.count, datatype: into.dt.clone(), offset: 0 },
                    Box::new(|id| Request::Get { id, place }),
                )
            }
            Kind::Acc { op } => {
                let ty = element(op, origin.map_or(target.dt, |o| o.dt), target.dt, tbytes)?;
                (Sink::Ack, Box::new(move |id| Request::Acc { id, place, op, ty, fetch: false, data: data.unwrap_or_default() }))
            }
            Kind::GetAcc { op, into } => {
                check_datatype(into.dt)?;
                let ty = element(op, origin.map_or(target.dt, |o| o.dt), target.dt, tbytes)?;
                if into.dt.packed_size(into.count) != tbytes || (into.dt.size() != 0 && into.dt.basic_kind() != Some(ty)) {
                    return Err(MpiError::new(ErrorClass::Type, "the result datatype must match the target datatype's elements"));
                }
                // MPI_NO_OP sends no data: the target keeps its contents.
                let data = if op == PredefOp::NoOp { vec![0; tbytes] } else { data.unwrap_or_default() };
                let sink = Sink::Into { ptr: into.ptr as usize, count: into.count, datatype: into.dt.clone(), offset: 0 };
                (sink, Box::new(move |id| Request::Acc { id, place, op, ty, fetch: true, data }))
            }
            Kind::Cas { compare, into } => {
                let n = target.dt.size();
                let mut d = std::slice::from_raw_parts(compare, n).to_vec();
                d.extend_from_slice(&data.unwrap_or_default());
                let ty = target.dt.basic_kind().unwrap_or(BasicType::Byte);
                let disp = target.disp;
                (
                    Sink::Into { ptr: into as usize, count: 1, datatype: target.dt.clone(), offset: 0 },
                    Box::new(move |id| Request::Cas { id, disp, ty, data: d }),
                )
            }
        };
        let req = want_req.then(|| st.reqs.insert(Entry::Awaited));
        let State { wins, engine, .. } = &mut *st;
        let win = wins.map.get_mut(&w.0).ok_or_else(|| bad_win(w))?;
        let id = win.access.issue(world, sink, req);
        win.send_request(engine, world, &make(id));
        self.progress(&mut st)?;
        self.settle_self(&mut st, w, world)?;
        Ok(req)
    }

    /// An operation on this process's own window is applied and answered
    /// before the call returns, as MPICH and Open MPI do: programs (mpi4py's
    /// tests among them) free a result buffer before the epoch ends once a
    /// self-targeted call has returned. The request and its reply each take
    /// one progress step; a lock another process holds can delay both, so
    /// the steps are bounded and the operation then completes as any other.
    fn settle_self(&self, st: &mut State, w: WinId, world: u32) -> MpiResult<()> {
        if world != st.engine.rank() {
            return Ok(());
        }
        for _ in 0..SELF_STEPS {
            let pending = st.wins.map.get(&w.0).map_or(0, |win| win.access.unanswered(Some(world)));
            if pending == 0 {
                break;
            }
            self.progress(st)?;
        }
        Ok(())
    }
}

/// Progress steps a self-targeted operation may take inside its call.
const SELF_STEPS: usize = 4;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_cover_every_byte_once_in_order() {
        let place = Place { disp: 3, blocks: vec![(0, 10), (20, 3), (40, 0), (50, 7)] };
        let pieces = split(&place, 6);
        let sizes: Vec<usize> = pieces.iter().map(|(_, r)| r.len()).collect();
        assert_eq!(sizes, vec![6, 6, 6, 2]);
        let blocks: Vec<(i64, u64)> = pieces.iter().flat_map(|(p, _)| p.blocks.clone()).collect();
        assert_eq!(blocks, vec![(0, 6), (6, 4), (20, 2), (20 + 2, 1), (50, 5), (55, 2)]);
        assert!(pieces.iter().all(|(p, r)| p.disp == 3 && p.bytes() as usize == r.len()));
        assert_eq!(pieces.last().map(|(_, r)| r.end), Some(20));
        assert!(split(&Place { disp: 0, blocks: vec![] }, 6).is_empty());
    }
}
