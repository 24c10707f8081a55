//! Matched probe and receive (MPI-3.1 §3.8.2): a probed message is taken out
//! of matching so no other receive can steal it before MPI_Mrecv.

use std::collections::HashMap;
use std::sync::Arc;

use wanmpi_engine::datatype::Datatype;
use wanmpi_engine::engine::MatchedMessage;
use wanmpi_engine::{ErrorClass, MpiError, MpiResult};

use crate::comm::CommId;
use crate::group::Group;
use crate::p2p::{check_datatype, live_comm, recv_target, resolve_source, resolve_tag};
use crate::reqtable::{Entry, Req, Status, ANY_SOURCE, PROC_NULL};
use crate::runtime::{Runtime, State};

/// A matched message handle. `NoProc` is MPI_MESSAGE_NO_PROC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Message {
    NoProc,
    Id(u64),
}

#[derive(Default)]
pub struct MessageTable {
    msgs: HashMap<u64, (MatchedMessage, Arc<Group>)>,
    next: u64,
}

fn improbe_locked(st: &mut State, source: i32, tag: i32, comm: CommId) -> MpiResult<Option<(Message, Status)>> {
    let c = live_comm(st, comm)?;
    if source == PROC_NULL {
        return Ok(Some((Message::NoProc, Status::proc_null())));
    }
    let group = Arc::clone(c.peer_group());
    let ctx = c.p2p_ctx();
    let src = resolve_source(&group, source)?;
    let tag = resolve_tag(tag)?;
    let Some(m) = st.engine.improbe(src, ctx, tag) else { return Ok(None) };
    let status =
        Status { source: group.rank_of(m.source()).map_or(ANY_SOURCE, |r| r as i32), tag: m.tag(), bytes: m.len(), error: None, cancelled: false };
    st.messages.next += 1;
    let id = st.messages.next;
    st.messages.msgs.insert(id, (m, group));
    Ok(Some((Message::Id(id), status)))
}

impl Runtime {
    /// MPI_Improbe.
    pub fn improbe(&self, source: i32, tag: i32, comm: CommId) -> MpiResult<Option<(Message, Status)>> {
        let mut st = self.lock();
        self.progress(&mut st)?;
        improbe_locked(&mut st, source, tag, comm)
    }

    /// MPI_Mprobe.
    pub fn mprobe(&self, source: i32, tag: i32, comm: CommId) -> MpiResult<(Message, Status)> {
        self.wait_until(|st| improbe_locked(st, source, tag, comm))
    }

    /// MPI_Imrecv.
    ///
    /// # Safety
    /// `buf` must have room for `count` elements of `dt` and stay valid until completion.
    pub unsafe fn imrecv(&self, buf: *mut u8, count: usize, dt: &Datatype, msg: Message) -> MpiResult<Req> {
        let mut st = self.lock();
        check_datatype(dt)?;
        let id = match msg {
            Message::NoProc => return Ok(st.reqs.insert(Entry::Done(Status::proc_null()))),
            Message::Id(id) => id,
        };
        let (m, group) =
            st.messages.msgs.remove(&id).ok_or_else(|| MpiError::new(ErrorClass::Request, "message handle is not valid (already received?)"))?;
        let (rb, unpack) = recv_target(buf, count, dt)?;
        let eid = st.engine.imrecv(m, rb);
        let r = st.reqs.insert(Entry::Active { id: eid, group: Some(group), unpack });
        self.progress(&mut st)?;
        Ok(r)
    }
}
