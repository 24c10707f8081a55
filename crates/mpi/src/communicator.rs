//! Communicators (MPI-3.1 chapter 6): size, rank, creation, naming, info,
//! error handlers.

use std::sync::Arc;

use wanmpi_runtime::{CommId, Comparison, ErrHandler, Group, Info, MpiResult, Runtime, UNDEFINED};

use crate::Result;

/// A communicator handle. Clones name the same communicator; `free`
/// releases a communicator this program created.
#[derive(Clone)]
pub struct Communicator {
    pub(crate) rt: Arc<Runtime>,
    pub(crate) id: CommId,
}

impl Communicator {
    pub(crate) fn from_id(rt: Arc<Runtime>, id: CommId) -> Communicator {
        Communicator { rt, id }
    }

    /// Applies the communicator's error handler to a result.
    pub(crate) fn check<T>(&self, r: MpiResult<T>) -> Result<T> {
        self.rt.handle_error(self.id, r)
    }

    /// The runtime's id for this communicator (for layered crates).
    pub fn id(&self) -> CommId {
        self.id
    }
    pub fn runtime(&self) -> &Arc<Runtime> {
        &self.rt
    }

    /// MPI_Comm_rank.
    pub fn rank(&self) -> i32 {
        self.rt.comm_rank(self.id).map_or(-1, |r| r as i32)
    }
    /// MPI_Comm_size.
    pub fn size(&self) -> i32 {
        self.rt.comm_size(self.id).map_or(0, |s| s as i32)
    }
    /// MPI_Comm_group.
    pub fn group(&self) -> Result<Group> {
        self.check(self.rt.comm_group(self.id))
    }
    /// MPI_Comm_test_inter.
    pub fn is_inter(&self) -> Result<bool> {
        self.check(self.rt.comm_is_inter(self.id))
    }
    /// MPI_Comm_remote_size.
    pub fn remote_size(&self) -> Result<i32> {
        self.check(self.rt.comm_remote_group(self.id)).map(|g| g.size() as i32)
    }

    /// MPI_Comm_dup.
    pub fn duplicate(&self) -> Result<Communicator> {
        let id = self.check(self.rt.comm_dup(self.id))?;
        Ok(Communicator::from_id(self.rt.clone(), id))
    }
    /// MPI_Comm_dup_with_info.
    pub fn duplicate_with_info(&self, info: &Info) -> Result<Communicator> {
        let id = self.check(self.rt.comm_dup_with_info(self.id, info.clone()))?;
        Ok(Communicator::from_id(self.rt.clone(), id))
    }
    /// MPI_Comm_split; `None` for `color == UNDEFINED`.
    pub fn split(&self, color: i32, key: i32) -> Result<Option<Communicator>> {
        let id = self.check(self.rt.comm_split(self.id, color, key))?;
        Ok(id.map(|id| Communicator::from_id(self.rt.clone(), id)))
    }
    /// MPI_Comm_split with MPI_UNDEFINED.
    pub fn split_undefined(&self) -> Result<()> {
        self.split(UNDEFINED, 0).map(|_| ())
    }
    /// MPI_Comm_create: `None` at processes outside `group`.
    pub fn create(&self, group: &Group) -> Result<Option<Communicator>> {
        let id = self.check(self.rt.comm_create(self.id, group))?;
        Ok(id.map(|id| Communicator::from_id(self.rt.clone(), id)))
    }
    /// MPI_Comm_free.
    pub fn free(self) -> Result<()> {
        self.check(self.rt.comm_free(self.id))
    }
    /// MPI_Comm_compare.
    pub fn compare(&self, other: &Communicator) -> Result<Comparison> {
        self.check(self.rt.comm_compare(self.id, other.id))
    }
    /// MPI_Comm_set_info (e.g. `mpi_assert_allow_overtaking`).
    pub fn set_info(&self, info: &Info) -> Result<()> {
        self.check(self.rt.comm_set_info(self.id, info.clone()))
    }
    /// MPI_Comm_get_info.
    pub fn info(&self) -> Result<Info> {
        self.check(self.rt.comm_get_info(self.id))
    }
    /// MPI_Comm_set_name / MPI_Comm_get_name.
    pub fn set_name(&self, name: &str) -> Result<()> {
        self.check(self.rt.comm_set_name(self.id, name))
    }
    pub fn name(&self) -> Result<String> {
        self.check(self.rt.comm_get_name(self.id))
    }
    /// MPI_Comm_set_errhandler.
    pub fn set_errhandler(&self, h: ErrHandler) -> Result<()> {
        self.check(self.rt.set_errhandler(self.id, h))
    }
    /// MPI_Intercomm_create with this communicator as the local one.
    pub fn intercomm_create(&self, local_leader: i32, peer: &Communicator, remote_leader: i32, tag: i32) -> Result<Communicator> {
        let id = self.check(self.rt.intercomm_create(self.id, local_leader, peer.id, remote_leader, tag))?;
        Ok(Communicator::from_id(self.rt.clone(), id))
    }
    /// MPI_Intercomm_merge.
    pub fn merge(&self, high: bool) -> Result<Communicator> {
        let id = self.check(self.rt.intercomm_merge(self.id, high))?;
        Ok(Communicator::from_id(self.rt.clone(), id))
    }
    /// MPI_Abort on this communicator.
    pub fn abort(&self, code: i32) -> ! {
        self.rt.abort(code, "")
    }
}
