//! The origin side of a window: operations issued and not yet answered,
//! where their answers go, and the epochs this process opened (which
//! targets it may access now). A flush is "no operation to that target
//! still unanswered": every request gets a reply once the target applied it.

use std::collections::HashMap;

use wanmpi_engine::datatype::Datatype;
use wanmpi_engine::{ErrorClass, MpiError};

use crate::reqtable::Req;

/// Where a reply's data goes.
pub enum Sink {
    /// Nothing comes back but the acknowledgement.
    Ack,
    /// Into `count` elements of `datatype` at `ptr` (a get's origin buffer,
    /// a get_accumulate's result buffer), from packed byte `offset` on (a
    /// long get comes back in pieces).
    Into { ptr: usize, count: usize, datatype: Datatype, offset: usize },
    /// The grant of a lock on the target.
    Grant,
}

pub struct Pending {
    pub target: u32,
    pub sink: Sink,
    /// The request of an MPI_Rput and its kin, completed with the reply.
    pub req: Option<Req>,
}

/// A lock this process holds (or asked for) on a target.
#[derive(Debug, Clone, Copy)]
pub struct Held {
    pub granted: bool,
    /// MPI_MODE_NOCHECK: no lock was asked for, so none is released.
    pub nocheck: bool,
}

#[derive(Default)]
pub struct Access {
    next_id: u64,
    pub pending: HashMap<u64, Pending>,
    /// Unanswered requests per target (world rank).
    pub outstanding: HashMap<u32, u32>,
    /// Locks per target (world rank).
    pub locks: HashMap<u32, Held>,
    /// Inside MPI_Win_lock_all .. MPI_Win_unlock_all.
    pub lock_all: bool,
    /// Between two fences (the last one without MPI_MODE_NOSUCCEED).
    pub fence_epoch: bool,
    /// MPI_Win_start's group (world ranks) until MPI_Win_complete.
    pub started: Option<Vec<u32>>,
    /// MPI_Win_post's group (world ranks) until MPI_Win_wait.
    pub posted: Option<Vec<u32>>,
    /// The first error a target reported for an operation without a
    /// request; the next synchronisation call returns it.
    pub error: Option<MpiError>,
}

impl Access {
    /// Records an operation to `target` awaiting its reply; returns its id.
    pub fn issue(&mut self, target: u32, sink: Sink, req: Option<Req>) -> u64 {
        self.next_id += 1;
        self.pending.insert(self.next_id, Pending { target, sink, req });
        *self.outstanding.entry(target).or_default() += 1;
        self.next_id
    }

    /// Takes the pending operation `id` answered by `from`; `None` for a
    /// reply nobody asked for (a confused or hostile peer: dropped).
    pub fn answered(&mut self, id: u64, from: u32) -> Option<Pending> {
        if self.pending.get(&id).is_none_or(|p| p.target != from) {
            return None;
        }
        let p = self.pending.remove(&id)?;
        if let Some(n) = self.outstanding.get_mut(&from) {
            *n = n.saturating_sub(1);
        }
        Some(p)
    }

    pub fn unanswered(&self, target: Option<u32>) -> u32 {
        match target {
            Some(t) => self.outstanding.get(&t).copied().unwrap_or(0),
            None => self.outstanding.values().sum(),
        }
    }

    /// Whether an operation to `target` (any: None) still has data to
    /// bring back into an origin buffer.
    pub fn brings_back(&self, target: Option<u32>) -> bool {
        self.pending.values().any(|p| matches!(p.sink, Sink::Into { .. }) && target.is_none_or(|t| t == p.target))
    }

    /// Whether an operation on `target` is inside an access epoch.
    pub fn may_access(&self, target: u32) -> bool {
        self.fence_epoch || self.lock_all || self.locks.contains_key(&target) || self.started.as_ref().is_some_and(|g| g.contains(&target))
    }

    /// Takes the first error reported since the last call.
    pub fn take_error(&mut self) -> Result<(), MpiError> {
        self.error.take().map_or(Ok(()), Err)
    }
}

/// An error a target sent back, in MPI terms.
pub fn remote_error(class: i32, msg: String, from: u32) -> MpiError {
    let class = ErrorClass::from_code(class).unwrap_or(ErrorClass::Other);
    MpiError::new(class, format!("at target rank {from}: {msg}"))
}
