//! The point-to-point contract the collective algorithms run on
//! (`coll::CollComm`), implemented over the engine on a communicator's
//! collective context.

use std::sync::Arc;

use wanmpi_engine::coll::{CollComm, CollError, RecvItem, SendItem};
use wanmpi_engine::engine::SendMode as EngineMode;
use wanmpi_engine::request::{RecvBuf, SendData};
use wanmpi_engine::{ErrorClass, MpiError};

use crate::group::Group;
use crate::reqtable::Entry;
use crate::runtime::Runtime;

/// Collective traffic among `group` on context `ctx`. Usually a
/// communicator's group and collective context; inter-communicator setup
/// also runs one over each side's group.
pub struct CollAdapter<'a> {
    pub rt: &'a Runtime,
    pub group: Arc<Group>,
    pub ctx: u32,
    pub rank: usize,
    pub size: usize,
}

impl CollComm for CollAdapter<'_> {
    fn rank(&self) -> usize {
        self.rank
    }
    fn size(&self) -> usize {
        self.size
    }

    fn site_of(&self, rank: usize) -> usize {
        // Sites are known only inside this job: a communicator with
        // processes of other jobs uses the flat algorithms, as every
        // member must choose alike.
        if !self.group.within(self.rt.size()) {
            return 0;
        }
        self.group.world(rank).map_or(0, |w| self.rt.site_of(w))
    }

    fn exchange(&mut self, sends: &[SendItem<'_>], recvs: &mut [RecvItem<'_>]) -> Result<(), CollError> {
        let comm_err = |e: MpiError| CollError::Comm(e.to_string());
        let world =
            |peer: usize| self.group.world(peer).ok_or_else(|| CollError::BadArgument(format!("rank {peer} outside a group of {}", self.size)));
        let mut reqs = Vec::with_capacity(sends.len() + recvs.len());
        {
            let me = self.site_of(self.rank);
            for s in sends.iter().filter(|s| self.site_of(s.peer) != me) {
                self.rt.coll_wan.count(s.buf.len());
            }
            let mut st = self.rt.lock();
            for s in sends {
                let data = SendData::Raw { ptr: s.buf.as_ptr(), len: s.buf.len() };
                // SAFETY: the slices outlive the wait below.
                let id = unsafe { st.engine.isend(world(s.peer)?, self.ctx, s.tag, data, EngineMode::Standard) }.map_err(comm_err)?;
                reqs.push(Some(st.reqs.insert(Entry::Active { id, group: None, unpack: None })));
            }
            for r in recvs.iter_mut() {
                let buf = RecvBuf { ptr: r.buf.as_mut_ptr(), cap: r.buf.len() };
                let id = unsafe { st.engine.irecv(Some(world(r.peer)?), self.ctx, Some(r.tag), buf) }.map_err(comm_err)?;
                reqs.push(Some(st.reqs.insert(Entry::Active { id, group: Some(Arc::clone(&self.group)), unpack: None })));
            }
        }
        let done = self.rt.waitall_in(&reqs, &self.group).map_err(comm_err)?;
        for (i, c) in done.into_iter().enumerate() {
            let Some(c) = c else { continue };
            if let Some(e) = c.status.error {
                if e.class == ErrorClass::Truncate {
                    let r = &recvs[i - sends.len()];
                    return Err(CollError::LengthMismatch { peer: r.peer, expected: r.buf.len(), got: usize::MAX });
                }
                return Err(comm_err(e));
            }
            if i >= sends.len() {
                let r = &recvs[i - sends.len()];
                if c.status.bytes != r.buf.len() {
                    return Err(CollError::LengthMismatch { peer: r.peer, expected: r.buf.len(), got: c.status.bytes });
                }
            }
        }
        Ok(())
    }
}

/// Maps a collective's error to an MPI error class.
pub fn coll_error(e: CollError) -> MpiError {
    let class = match &e {
        CollError::LengthMismatch { .. } => ErrorClass::Truncate,
        CollError::Op(_) => ErrorClass::Op,
        // A collective step failed on a failed peer or a revoked
        // communicator: ULFM programs look for those classes (the
        // collective code carries the step's error as its text).
        CollError::Comm(m) if m.starts_with(ErrorClass::ProcFailed.mpi_name()) => ErrorClass::ProcFailed,
        CollError::Comm(m) if m.starts_with(ErrorClass::Revoked.mpi_name()) => ErrorClass::Revoked,
        CollError::Comm(_) => ErrorClass::Other,
        CollError::BadArgument(_) => ErrorClass::Arg,
    };
    MpiError::new(class, e.to_string())
}
