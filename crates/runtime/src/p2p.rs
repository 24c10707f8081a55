//! Point-to-point communication (MPI-3.1 chapter 3) over raw buffers:
//! argument checks, rank translation, datatype packing, buffered sends.
//! The `*_locked` functions do the work under the lock so that persistent
//! requests and collectives can reuse them.

use std::sync::Arc;

use wanmpi_engine::datatype::Datatype;
use wanmpi_engine::engine::SendMode as EngineMode;
use wanmpi_engine::request::{RecvBuf, SendData};
use wanmpi_engine::{error::err, ErrorClass, MpiError, MpiResult};

use crate::bsend::BSEND_OVERHEAD;
use crate::comm::{Comm, CommId};
use crate::reqtable::{Entry, Req, SendMode, Status, Unpack, ANY_SOURCE, ANY_TAG, PROC_NULL, TAG_UB};
use crate::runtime::{Runtime, State};

pub(crate) fn comm_ref(st: &State, comm: CommId) -> MpiResult<&Comm> {
    st.comms.get(comm).ok_or_else(|| MpiError::new(ErrorClass::Comm, format!("communicator {} is not valid (freed or never created)", comm.0)))
}

/// `comm` for communication: valid and not revoked (ULFM).
pub(crate) fn live_comm(st: &State, comm: CommId) -> MpiResult<&Comm> {
    let c = comm_ref(st, comm)?;
    if c.revoked {
        return err(ErrorClass::Revoked, format!("communicator {} was revoked (MPIX_Comm_revoke)", comm.0));
    }
    Ok(c)
}

pub(crate) fn check_datatype(dt: &Datatype) -> MpiResult<()> {
    if dt.is_committed() {
        Ok(())
    } else {
        err(ErrorClass::Type, format!("datatype {} is not committed (call MPI_Type_commit)", dt.name()))
    }
}

/// A receive's or probe's source rank as a world rank (`None` = any).
pub(crate) fn resolve_source(group: &crate::group::Group, source: i32) -> MpiResult<Option<u32>> {
    match source {
        ANY_SOURCE => Ok(None),
        s => usize::try_from(s)
            .ok()
            .and_then(|s| group.world(s))
            .map(Some)
            .ok_or_else(|| MpiError::new(ErrorClass::Rank, format!("source rank {s} is not in a communicator of size {}", group.size()))),
    }
}

/// A receive's or probe's tag (`None` = MPI_ANY_TAG).
pub(crate) fn resolve_tag(tag: i32) -> MpiResult<Option<i32>> {
    match tag {
        ANY_TAG => Ok(None),
        t if (0..=TAG_UB).contains(&t) => Ok(Some(t)),
        t => err(ErrorClass::Tag, format!("tag {t} is neither MPI_ANY_TAG nor in 0..={TAG_UB}")),
    }
}

fn byte_len(count: usize, dt: &Datatype) -> MpiResult<usize> {
    count.checked_mul(dt.size()).ok_or_else(|| MpiError::new(ErrorClass::Count, format!("count {count} of {} overflows", dt.name())))
}

/// Where the engine should put a receive's bytes: the user's buffer for a
/// contiguous datatype, else a staging buffer unpacked at completion.
pub(crate) fn recv_target(buf: *mut u8, count: usize, dt: &Datatype) -> MpiResult<(RecvBuf, Option<Unpack>)> {
    let cap = byte_len(count, dt)?;
    if dt.is_contiguous() {
        return Ok((RecvBuf { ptr: buf.wrapping_offset(dt.true_lb()), cap }, None));
    }
    let mut staging = vec![0u8; cap];
    let rb = RecvBuf { ptr: staging.as_mut_ptr(), cap };
    Ok((rb, Some(Unpack { staging, base: buf, count, datatype: dt.clone() })))
}

/// A send checked against its communicator: where it goes and what it carries.
pub(crate) struct CheckedSend {
    world: u32,
    ctx: u32,
    len: usize,
    data: SendData,
}

/// Checks a send's arguments and finds its destination and data (packed
/// when the datatype is not contiguous or the send is buffered). `None`
/// for MPI_PROC_NULL.
///
/// # Safety
/// `buf` must hold `count` elements of `dt`.
// MPI_Isend's arguments plus the locked state and the collective-context flag.
#[allow(clippy::too_many_arguments)]
unsafe fn check_send(
    st: &State,
    buf: *const u8,
    count: usize,
    dt: &Datatype,
    dest: i32,
    tag: i32,
    comm: CommId,
    mode: SendMode,
    coll: bool,
) -> MpiResult<Option<CheckedSend>> {
    let c = live_comm(st, comm)?;
    if !coll && !(0..=TAG_UB).contains(&tag) {
        return err(ErrorClass::Tag, format!("send tag {tag} outside 0..={TAG_UB}"));
    }
    check_datatype(dt)?;
    if dest == PROC_NULL {
        return Ok(None);
    }
    let group = c.peer_group();
    let world = usize::try_from(dest)
        .ok()
        .and_then(|d| group.world(d))
        .ok_or_else(|| MpiError::new(ErrorClass::Rank, format!("destination rank {dest} is not in a communicator of size {}", group.size())))?;
    let ctx = if coll { c.coll_ctx() } else { c.p2p_ctx() };
    let len = byte_len(count, dt)?;
    let data = if mode == SendMode::Buffered || !dt.is_contiguous() {
        let mut v = Vec::with_capacity(len);
        dt.pack(buf, count, &mut v);
        SendData::Owned(v)
    } else {
        SendData::Raw { ptr: buf.wrapping_offset(dt.true_lb()), len }
    };
    Ok(Some(CheckedSend { world, ctx, len, data }))
}

/// Sends `count` elements of `dt` at `buf` on a communicator's context.
///
/// # Safety
/// `buf` must hold `count` elements of `dt` and stay valid until completion.
// MPI_Isend's arguments plus the locked state and the collective-context flag.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn isend_locked(
    st: &mut State,
    buf: *const u8,
    count: usize,
    dt: &Datatype,
    dest: i32,
    tag: i32,
    comm: CommId,
    mode: SendMode,
    coll: bool,
) -> MpiResult<Entry> {
    let Some(CheckedSend { world, ctx, len, data }) = check_send(st, buf, count, dt, dest, tag, comm, mode, coll)? else {
        return Ok(Entry::Done(Status::proc_null()));
    };
    let emode = if mode == SendMode::Synchronous { EngineMode::Synchronous } else { EngineMode::Standard };
    if mode == SendMode::Buffered {
        reap_bsends(st);
        let charge = len + BSEND_OVERHEAD;
        let Some((_, size)) = st.bsend.attached else {
            return err(ErrorClass::Buffer, "buffered send without an attached buffer (call MPI_Buffer_attach)");
        };
        if st.bsend.in_use + charge > size {
            return err(ErrorClass::Buffer, format!("attached buffer of {size} bytes has {} in use; {charge} more needed", st.bsend.in_use));
        }
        let id = st.engine.isend(world, ctx, tag, data, emode)?;
        st.bsend.in_use += charge;
        st.bsend.outstanding.push((id, charge));
        return Ok(Entry::Done(Status::proc_null()));
    }
    let id = st.engine.isend(world, ctx, tag, data, emode)?;
    Ok(Entry::Active { id, group: None, unpack: None })
}

/// Releases buffered-send space of messages that have left.
pub(crate) fn reap_bsends(st: &mut State) {
    let State { engine, bsend, .. } = st;
    bsend.outstanding.retain(|&(id, charge)| match engine.test(id) {
        Ok(None) => true,
        _ => {
            bsend.in_use -= charge;
            false
        }
    });
}

/// Posts a receive.
///
/// # Safety
/// `buf` must have room for `count` elements of `dt` and stay valid until completion.
// MPI_Irecv's arguments plus the locked state and the collective-context flag.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn irecv_locked(
    st: &mut State,
    buf: *mut u8,
    count: usize,
    dt: &Datatype,
    source: i32,
    tag: i32,
    comm: CommId,
    coll: bool,
) -> MpiResult<Entry> {
    let c = live_comm(st, comm)?;
    // Collective traffic uses its own (negative) tags on its own context.
    let tag = if coll { Some(tag) } else { resolve_tag(tag)? };
    check_datatype(dt)?;
    if source == PROC_NULL {
        return Ok(Entry::Done(Status::proc_null()));
    }
    let group = Arc::clone(c.peer_group());
    let src = resolve_source(&group, source)?;
    let ctx = if coll { c.coll_ctx() } else { c.p2p_ctx() };
    let (rbuf, unpack) = recv_target(buf, count, dt)?;
    let id = st.engine.irecv(src, ctx, tag, rbuf)?;
    Ok(Entry::Active { id, group: Some(group), unpack })
}

/// Turns an engine status into the user's: comm rank, unpacked data.
fn finish(group: Option<Arc<crate::group::Group>>, unpack: Option<Unpack>, s: wanmpi_engine::Status) -> Status {
    if let Some(u) = unpack {
        // SAFETY: the receive contract keeps the user's buffer valid.
        unsafe { u.datatype.unpack(&u.staging[..s.bytes.min(u.staging.len())], u.base, u.count) };
    }
    let source = match &group {
        Some(g) if s.source != u32::MAX => g.rank_of(s.source).map_or(ANY_SOURCE, |r| r as i32),
        _ => PROC_NULL,
    };
    let tag = if group.is_some() { s.tag } else { ANY_TAG };
    Status { source, tag, bytes: s.bytes, error: s.error, cancelled: s.cancelled }
}

/// Tests one entry. `Ok(Some)` when complete; complete non-persistent
/// entries are consumed by the caller.
fn test_entry(st: &mut State, e: &mut Entry) -> MpiResult<Option<Status>> {
    match e {
        Entry::Done(s) => Ok(Some(s.clone())),
        Entry::Active { id, .. } => {
            let Some(es) = st.engine.test(*id)? else { return Ok(None) };
            let Entry::Active { group, unpack, .. } = std::mem::replace(e, Entry::Done(Status::proc_null())) else {
                unreachable!("matched Active above")
            };
            let s = finish(group, unpack, es);
            *e = Entry::Done(s.clone());
            Ok(Some(s))
        }
        // Progress completes a collective (`icoll::advance`) or an RMA request (`rma::serve`).
        Entry::Coll(_) | Entry::Awaited => Ok(None),
        Entry::Generalized(g) => Ok(g.finish().inspect(|s| *e = Entry::Done(s.clone()))),
        Entry::Pair { send, recv } => {
            let (s, r) = (test_entry(st, send)?, test_entry(st, recv)?);
            Ok(match (s, r) {
                // A failed send is the pair's error when the receive went well.
                (Some(s), Some(r)) => Some(if r.error.is_none() && s.error.is_some() { Status { error: s.error, ..r } } else { r }),
                _ => None,
            })
        }
        Entry::Persistent { active: None, .. } => Ok(Some(Status::empty())),
        Entry::Persistent { active: Some(inner), .. } => {
            let r = test_entry(st, inner)?;
            if r.is_some() {
                if let Entry::Persistent { active, .. } = e {
                    *active = None;
                }
            }
            Ok(r)
        }
    }
}

/// The outcome of testing a request handle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Completion {
    pub status: Status,
    /// A persistent request stays allocated; others are gone (REQUEST_NULL).
    pub persistent: bool,
}

pub(crate) fn test_locked(st: &mut State, r: Req) -> MpiResult<Option<Completion>> {
    // Looking is cheaper than taking the entry out and putting it back: a
    // blocking call tests on every spin.
    if !peek_locked(st, r)? {
        return Ok(None);
    }
    let mut e = st.reqs.remove(r).ok_or_else(|| MpiError::new(ErrorClass::Request, "request handle is not valid (already completed or freed)"))?;
    let res = test_entry(st, &mut e);
    let persistent = matches!(e, Entry::Persistent { .. });
    match res {
        Ok(Some(status)) => {
            if persistent {
                st.reqs.put_back(r, e);
            }
            Ok(Some(Completion { status, persistent }))
        }
        other => {
            st.reqs.put_back(r, e);
            other.map(|_| None)
        }
    }
}

fn peek_locked(st: &mut State, r: Req) -> MpiResult<bool> {
    fn peek(st: &State, e: &Entry) -> MpiResult<bool> {
        match e {
            Entry::Done(_) | Entry::Persistent { active: None, .. } => Ok(true),
            Entry::Active { id, .. } => st.engine.is_complete(*id),
            Entry::Coll(_) | Entry::Awaited => Ok(false),
            Entry::Generalized(g) => Ok(g.complete),
            Entry::Pair { send, recv } => Ok(peek(st, send)? && peek(st, recv)?),
            Entry::Persistent { active: Some(inner), .. } => peek(st, inner),
        }
    }
    let e = st.reqs.get(r).ok_or_else(|| MpiError::new(ErrorClass::Request, "request handle is not valid"))?;
    peek(st, e)
}

impl Runtime {
    /// MPI_Isend and its modes (MPI_Issend, MPI_Irsend, MPI_Ibsend).
    ///
    /// # Safety
    /// `buf` must hold `count` elements of `dt` and stay valid until the request completes.
    // Mirrors MPI_Isend's argument list (with the send mode as one more).
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn isend(&self, buf: *const u8, count: usize, dt: &Datatype, dest: i32, tag: i32, comm: CommId, mode: SendMode) -> MpiResult<Req> {
        let mut st = self.lock();
        let e = isend_locked(&mut st, buf, count, dt, dest, tag, comm, mode, false)?;
        let r = st.reqs.insert(e);
        self.progress(&mut st)?;
        Ok(r)
    }

    /// MPI_Send and MPI_Rsend, blocking. A short message the transport
    /// takes at once never becomes a request (`express_send.rs`, else
    /// `Engine::send_now`); the other modes are a nonblocking send and a
    /// wait.
    ///
    /// # Safety
    /// `buf` must hold `count` elements of `dt`.
    // Mirrors MPI_Send's argument list (with the send mode as one more).
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn send(&self, buf: *const u8, count: usize, dt: &Datatype, dest: i32, tag: i32, comm: CommId, mode: SendMode) -> MpiResult<Status> {
        if !matches!(mode, SendMode::Standard | SendMode::Ready) {
            let r = self.isend(buf, count, dt, dest, tag, comm, mode)?;
            return self.wait(r).map(|c| c.status);
        }
        let mut st = self.lock();
        if let Some(sent) = Self::express_send(&mut st, buf, count, dt, dest, tag, comm) {
            return sent.map(|()| Status::proc_null());
        }
        let Some(CheckedSend { world, ctx, data, .. }) = check_send(&st, buf, count, dt, dest, tag, comm, mode, false)? else {
            return Ok(Status::proc_null());
        };
        let State { engine, transport, .. } = &mut *st;
        let queued = engine.send_now(world, ctx, tag, data, &mut |p, c, parts| transport.try_send(p, c, parts))?;
        let Some(id) = queued else {
            // What the transport took may sit in its buffer (tcp): push it on.
            let io = |e: wanmpi_transport::TransportError| MpiError::new(ErrorClass::Other, format!("transport: {e}"));
            st.transport_busy = st.transport.flush().map_err(io)?;
            st.activity += 1;
            return Ok(Status::proc_null());
        };
        drop(st);
        let es = self.wait_until(|st| st.engine.test(id))?;
        Ok(finish(None, None, es))
    }

    /// MPI_Recv: a receive and its wait, without a request handle.
    ///
    /// # Safety
    /// `buf` must have room for `count` elements of `dt`.
    pub unsafe fn recv(&self, buf: *mut u8, count: usize, dt: &Datatype, source: i32, tag: i32, comm: CommId) -> MpiResult<Status> {
        let mut st = self.lock();
        let spun = match Self::express_recv(&mut st, self.opts.express_rounds(), buf, count, dt, source, tag, comm) {
            // Built here, in the return value's place: moving a whole
            // `Status` out of the express path cost store-forwarding stalls.
            Ok(t) => return Ok(Status { source, tag: t.tag, bytes: t.bytes, error: t.error(), cancelled: false }),
            Err(spun) => spun,
        };
        let e = irecv_locked(&mut st, buf, count, dt, source, tag, comm, false)?;
        let Entry::Active { id, group, unpack } = e else {
            return Ok(Status::proc_null());
        };
        // A message that was already here matched at once.
        if let Some(es) = st.engine.test(id)? {
            return Ok(finish(group, unpack, es));
        }
        drop(st);
        let wait = self.wait_until_after(spun, |st| {
            let es = st.engine.test(id)?;
            if es.is_none() && self.wildcard_blocked(st, id) {
                // ULFM: a blocking wildcard receive fails rather than wait
                // on a failed process; the receive is withdrawn.
                st.engine.cancel(id)?;
                return err(ErrorClass::ProcFailed, "a failed process that is not acknowledged could have sent to this wildcard receive");
            }
            Ok(es)
        });
        match wait {
            Ok(es) => Ok(finish(group, unpack, es)),
            Err(e) => {
                // The receive may still complete into its staging buffer:
                // the table keeps both until then.
                self.lock().reqs.insert(Entry::Active { id, group, unpack });
                Err(e)
            }
        }
    }

    /// MPI_Irecv.
    ///
    /// # Safety
    /// `buf` must have room for `count` elements of `dt` and stay valid until completion.
    pub unsafe fn irecv(&self, buf: *mut u8, count: usize, dt: &Datatype, source: i32, tag: i32, comm: CommId) -> MpiResult<Req> {
        let mut st = self.lock();
        let e = irecv_locked(&mut st, buf, count, dt, source, tag, comm, false)?;
        let r = st.reqs.insert(e);
        self.progress(&mut st)?;
        Ok(r)
    }

    /// MPI_Isendrecv: both posted at once, one request.
    ///
    /// # Safety
    /// Both buffers must stay valid until the request completes.
    // MPI_Isendrecv's argument list.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn isendrecv(
        &self,
        send: (*const u8, usize, &Datatype),
        dest: i32,
        sendtag: i32,
        recv: (*mut u8, usize, &Datatype),
        source: i32,
        recvtag: i32,
        comm: CommId,
    ) -> MpiResult<Req> {
        let mut st = self.lock();
        let r = irecv_locked(&mut st, recv.0, recv.1, recv.2, source, recvtag, comm, false)?;
        let s = isend_locked(&mut st, send.0, send.1, send.2, dest, sendtag, comm, SendMode::Standard, false)?;
        let req = st.reqs.insert(Entry::Pair { send: Box::new(s), recv: Box::new(r) });
        self.progress(&mut st)?;
        Ok(req)
    }

    /// MPI_Isendrecv_replace: the outgoing data is packed first (the engine
    /// owns that copy), so the receive may land in the same buffer.
    ///
    /// # Safety
    /// `buf` must stay valid until the request completes.
    // MPI_Isendrecv_replace's argument list.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn isendrecv_replace(
        &self,
        buf: *mut u8,
        count: usize,
        dt: &Datatype,
        dest: i32,
        sendtag: i32,
        source: i32,
        recvtag: i32,
        comm: CommId,
    ) -> MpiResult<Req> {
        check_datatype(dt)?;
        let mut packed = Vec::new();
        dt.pack(buf, count, &mut packed);
        let byte = Datatype::basic(wanmpi_engine::datatype::BasicType::Byte);
        let mut st = self.lock();
        let r = irecv_locked(&mut st, buf, count, dt, source, recvtag, comm, false)?;
        let s = match check_send(&st, packed.as_ptr(), packed.len(), &byte, dest, sendtag, comm, SendMode::Standard, false)? {
            Some(CheckedSend { world, ctx, .. }) => {
                let id = st.engine.isend(world, ctx, sendtag, SendData::Owned(packed), EngineMode::Standard)?;
                Entry::Active { id, group: None, unpack: None }
            }
            None => Entry::Done(Status::proc_null()),
        };
        let req = st.reqs.insert(Entry::Pair { send: Box::new(s), recv: Box::new(r) });
        self.progress(&mut st)?;
        Ok(req)
    }

    /// MPI_Test.
    pub fn test(&self, r: Req) -> MpiResult<Option<Completion>> {
        let mut st = self.lock();
        self.progress(&mut st)?;
        let c = test_locked(&mut st, r)?;
        if c.is_none() {
            self.pending_failure(&st, r)?;
        }
        Ok(c)
    }

    /// MPI_Wait.
    pub fn wait(&self, r: Req) -> MpiResult<Completion> {
        self.wait_until(|st| {
            let c = test_locked(st, r)?;
            if c.is_none() {
                self.pending_failure(st, r)?;
            }
            Ok(c)
        })
    }

    /// MPI_Waitany over handles (`None` = MPI_REQUEST_NULL). `None` when all are null.
    pub fn waitany(&self, rs: &[Option<Req>]) -> MpiResult<Option<(usize, Completion)>> {
        if rs.iter().all(Option::is_none) {
            return Ok(None);
        }
        self.wait_until(|st| {
            for (i, r) in rs.iter().enumerate() {
                if let Some(r) = r {
                    if let Some(c) = test_locked(st, *r)? {
                        return Ok(Some(Some((i, c))));
                    }
                }
            }
            Ok(None)
        })
    }

    /// MPI_Testany: `Ok(None)` when none completed.
    pub fn testany(&self, rs: &[Option<Req>]) -> MpiResult<Option<(usize, Completion)>> {
        let mut st = self.lock();
        self.progress(&mut st)?;
        for (i, r) in rs.iter().enumerate() {
            if let Some(r) = r {
                if let Some(c) = test_locked(&mut st, *r)? {
                    return Ok(Some((i, c)));
                }
            }
        }
        Ok(None)
    }

    /// MPI_Testall: all complete (and consumed) or none touched.
    pub fn testall(&self, rs: &[Option<Req>]) -> MpiResult<Option<Vec<Option<Completion>>>> {
        let mut st = self.lock();
        self.progress(&mut st)?;
        for r in rs.iter().flatten() {
            if !peek_locked(&mut st, *r)? {
                return Ok(None);
            }
        }
        rs.iter()
            .map(|r| r.map(|r| test_locked(&mut st, r).map(|c| c.expect("peeked complete"))).transpose())
            .collect::<MpiResult<Vec<_>>>()
            .map(Some)
    }

    /// MPI_Waitall.
    pub fn waitall(&self, rs: &[Option<Req>]) -> MpiResult<Vec<Option<Completion>>> {
        let mut out: Vec<Option<Completion>> = vec![None; rs.len()];
        let mut left: Vec<usize> = (0..rs.len()).filter(|&i| rs[i].is_some()).collect();
        self.wait_until(|st| {
            let mut still = vec![];
            for &i in &left {
                let r = rs[i].expect("filtered non-null");
                match test_locked(st, r)? {
                    Some(c) => out[i] = Some(c),
                    None => still.push(i),
                }
            }
            left = still;
            Ok(left.is_empty().then_some(()))
        })?;
        Ok(out)
    }

    /// MPI_Testsome / MPI_Waitsome: indices and completions of those done.
    pub fn testsome(&self, rs: &[Option<Req>]) -> MpiResult<Option<Vec<(usize, Completion)>>> {
        if rs.iter().all(Option::is_none) {
            return Ok(None);
        }
        let mut st = self.lock();
        self.progress(&mut st)?;
        Ok(Some(collect_done(&mut st, rs)?))
    }

    pub fn waitsome(&self, rs: &[Option<Req>]) -> MpiResult<Option<Vec<(usize, Completion)>>> {
        if rs.iter().all(Option::is_none) {
            return Ok(None);
        }
        self.wait_until(|st| {
            let done = collect_done(st, rs)?;
            Ok((!done.is_empty()).then_some(Some(done)))
        })
    }

    /// MPI_Request_free.
    pub fn request_free(&self, r: Req) -> MpiResult<()> {
        let mut st = self.lock();
        let e = st.reqs.remove(r).ok_or_else(|| MpiError::new(ErrorClass::Request, "request handle is not valid"))?;
        free_entry(&mut st, e)
    }

    /// MPI_Cancel.
    pub fn cancel(&self, r: Req) -> MpiResult<()> {
        let mut st = self.lock();
        fn id_of(e: &Entry) -> Option<wanmpi_engine::RequestId> {
            match e {
                Entry::Active { id, .. } => Some(*id),
                Entry::Persistent { active: Some(i), .. } => id_of(i),
                _ => None,
            }
        }
        if let Some(Entry::Generalized(g)) = st.reqs.get_mut(r) {
            let complete = g.complete;
            return (g.cancel)(complete).map_or(Ok(()), Err);
        }
        let e = st.reqs.get(r).ok_or_else(|| MpiError::new(ErrorClass::Request, "request handle is not valid"))?;
        if let Some(id) = id_of(e) {
            st.engine.cancel(id)?;
        }
        Ok(())
    }

    /// MPI_Iprobe.
    pub fn iprobe(&self, source: i32, tag: i32, comm: CommId) -> MpiResult<Option<Status>> {
        let mut st = self.lock();
        self.progress(&mut st)?;
        iprobe_locked(&st, source, tag, comm)
    }

    /// MPI_Probe.
    pub fn probe(&self, source: i32, tag: i32, comm: CommId) -> MpiResult<Status> {
        self.wait_until(|st| iprobe_locked(st, source, tag, comm))
    }

    /// MPI_Buffer_attach (the address is only recorded).
    pub fn buffer_attach(&self, addr: usize, size: usize) -> MpiResult<()> {
        let mut st = self.lock();
        if st.bsend.attached.is_some() {
            return err(ErrorClass::Buffer, "a buffer is already attached");
        }
        st.bsend.attached = Some((addr, size));
        Ok(())
    }

    /// MPI_Buffer_detach: waits until buffered messages have left.
    pub fn buffer_detach(&self) -> MpiResult<(usize, usize)> {
        self.wait_until(|st| {
            reap_bsends(st);
            Ok(st.bsend.outstanding.is_empty().then_some(()))
        })?;
        let mut st = self.lock();
        st.bsend.attached.take().ok_or_else(|| MpiError::new(ErrorClass::Buffer, "no buffer is attached"))
    }
}

fn collect_done(st: &mut State, rs: &[Option<Req>]) -> MpiResult<Vec<(usize, Completion)>> {
    let mut done = vec![];
    for (i, r) in rs.iter().enumerate() {
        if let Some(r) = r {
            if let Some(c) = test_locked(st, *r)? {
                done.push((i, c));
            }
        }
    }
    Ok(done)
}

fn free_entry(st: &mut State, e: Entry) -> MpiResult<()> {
    match e {
        // A freed RMA request: its reply finds no entry and is dropped.
        Entry::Done(_) | Entry::Awaited | Entry::Persistent { active: None, .. } => Ok(()),
        Entry::Active { id, unpack, .. } => {
            if unpack.is_some() && !st.engine.is_complete(id)? {
                // The staging buffer must outlive the receive: keep it around.
                st.reqs.insert(Entry::Active { id, group: None, unpack });
                return Ok(());
            }
            st.engine.free(id)
        }
        Entry::Persistent { active: Some(inner), .. } => free_entry(st, *inner),
        Entry::Generalized(mut g) => {
            // The program's state goes now, complete or not: MPI lets a
            // freed request finish unobserved.
            if let Some(e) = g.free.take().and_then(|f| f()) {
                return Err(e);
            }
            Ok(())
        }
        Entry::Pair { send, recv } => {
            free_entry(st, *send)?;
            free_entry(st, *recv)
        }
        Entry::Coll(mut c) => {
            // A freed collective still runs to its end (its peers need it).
            c.freed = true;
            let r = st.reqs.insert(Entry::Coll(c));
            st.colls.track(r);
            Ok(())
        }
    }
}

fn iprobe_locked(st: &State, source: i32, tag: i32, comm: CommId) -> MpiResult<Option<Status>> {
    let c = live_comm(st, comm)?;
    if source == PROC_NULL {
        return Ok(Some(Status::proc_null()));
    }
    let group = c.peer_group();
    let src = resolve_source(group, source)?;
    let tag = resolve_tag(tag)?;
    Ok(st.engine.iprobe(src, c.p2p_ctx(), tag).map(|p| Status {
        source: group.rank_of(p.source).map_or(ANY_SOURCE, |r| r as i32),
        tag: p.tag,
        bytes: p.len,
        error: None,
        cancelled: false,
    }))
}
