//! The schedules' point-to-point layer (`coll::sched::Port`) over the
//! engine, on a communicator's collective context: the bytes of a send
//! are owned by the engine, a receive lands in a buffer the handle owns.

use wanmpi_engine::coll::sched::Port;
use wanmpi_engine::coll::CollError;
use wanmpi_engine::engine::SendMode;
use wanmpi_engine::request::{RecvBuf, SendData};
use wanmpi_engine::{Engine, ErrorClass, RequestId};

use crate::group::Group;

pub struct EnginePort<'a> {
    pub engine: &'a mut Engine,
    pub group: &'a Group,
    pub ctx: u32,
}

/// A posted message; a receive's buffer lives here until it completes
/// (its heap block does not move when the handle does).
pub enum Handle {
    Send(RequestId),
    Recv(RequestId, Vec<u8>),
}

impl EnginePort<'_> {
    fn world(&self, peer: usize) -> Result<u32, CollError> {
        self.group.world(peer).ok_or_else(|| CollError::BadArgument(format!("rank {peer} outside a group of {}", self.group.size())))
    }
}

fn comm(e: wanmpi_engine::MpiError) -> CollError {
    CollError::Comm(e.to_string())
}

impl Port for EnginePort<'_> {
    type Handle = Handle;

    fn isend(&mut self, data: Vec<u8>, peer: usize, tag: i32) -> Result<Handle, CollError> {
        let w = self.world(peer)?;
        // SAFETY: the engine owns the bytes.
        let id = unsafe { self.engine.isend(w, self.ctx, tag, SendData::Owned(data), SendMode::Standard) }.map_err(comm)?;
        Ok(Handle::Send(id))
    }

    fn irecv(&mut self, len: usize, peer: usize, tag: i32) -> Result<Handle, CollError> {
        let w = self.world(peer)?;
        let mut buf = vec![0u8; len];
        let rb = RecvBuf { ptr: buf.as_mut_ptr(), cap: len };
        // SAFETY: `buf` is kept in the handle, unmoved on the heap, until the receive completes.
        let id = unsafe { self.engine.irecv(Some(w), self.ctx, Some(tag), rb) }.map_err(comm)?;
        Ok(Handle::Recv(id, buf))
    }

    fn test(&mut self, h: &mut Handle) -> Result<Option<Vec<u8>>, CollError> {
        let id = match h {
            Handle::Send(id) | Handle::Recv(id, _) => *id,
        };
        let Some(status) = self.engine.test(id).map_err(comm)? else { return Ok(None) };
        if let Some(e) = status.error {
            if e.class == ErrorClass::Truncate {
                let peer = self.group.rank_of(status.source).unwrap_or(usize::MAX);
                let expected = if let Handle::Recv(_, b) = h { b.len() } else { 0 };
                return Err(CollError::LengthMismatch { peer, expected, got: usize::MAX });
            }
            return Err(CollError::Comm(e.to_string()));
        }
        Ok(Some(match h {
            Handle::Recv(_, buf) => {
                let mut b = std::mem::take(buf);
                b.truncate(status.bytes);
                b
            }
            Handle::Send(_) => Vec::new(),
        }))
    }
}
