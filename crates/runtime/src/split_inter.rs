//! MPI_Comm_split and MPI_Comm_create on an inter-communicator (MPI-4.0
//! §7.4.2). Create: each side names a subgroup of its own group, and the
//! two subgroups form the new inter-communicator. Split: each group
//! splits by color and key, and the processes of one color on both sides
//! form a new inter-communicator (MPI_COMM_NULL when the other side has
//! none of that color). Each group learns its own (color, key) table by an
//! allgather, the group leaders swap their tables, and one context pair
//! agreed over both groups serves every color (no process is in two).

use std::sync::Arc;

use wanmpi_engine::coll;
use wanmpi_engine::MpiResult;

use crate::coll_adapter::{coll_error, CollAdapter};
use crate::comm::{Comm, CommId};
use crate::comm_create::{swap, TAG_INTER_SETUP, UNDEFINED};
use crate::group::Group;
use crate::info::Info;
use crate::p2p::comm_ref;
use crate::runtime::Runtime;

/// (color, key) of each rank, 8 bytes each.
fn entries(table: &[u8]) -> Vec<(i32, i32)> {
    table.chunks_exact(8).map(|c| (i32::from_le_bytes(c[0..4].try_into().expect("4")), i32::from_le_bytes(c[4..8].try_into().expect("4")))).collect()
}

/// World ranks of `group`'s members of `color`, by key then rank.
fn members(group: &Group, table: &[(i32, i32)], color: i32) -> Vec<u32> {
    let mut m: Vec<(i32, usize)> = table.iter().enumerate().filter(|(_, (c, _))| *c == color).map(|(r, (_, k))| (*k, r)).collect();
    m.sort();
    m.iter().filter_map(|&(_, r)| group.world(r)).collect()
}

impl Runtime {
    /// MPI_Comm_create on an inter-communicator: `None` outside `group`, or
    /// when the other side's group is empty.
    pub(crate) fn create_inter(&self, comm: CommId, group: &Group) -> MpiResult<Option<CommId>> {
        let (local, remote, ctx, rank) = {
            let st = self.lock();
            let c = comm_ref(&st, comm)?;
            (Arc::clone(&c.group), c.remote.clone().expect("an inter-communicator"), c.coll_ctx(), c.rank)
        };
        if group.members().iter().any(|w| local.rank_of(*w).is_none()) {
            return wanmpi_engine::error::err(wanmpi_engine::ErrorClass::Group, "the group is not a subset of this side's group");
        }
        // The leaders swap their sides' groups (sizes first), then tell their own side.
        let mine: Vec<u8> = self.globals_of(group.members());
        let mut a = CollAdapter { rt: self, group: Arc::clone(&local), ctx, rank, size: local.size() };
        let mut len = [0u8; 8];
        let mut theirs = vec![];
        if rank == 0 {
            let leaders = Arc::new(Group::new(vec![self.rank, remote.world(0).expect("the remote group is not empty")]));
            let mut x = CollAdapter { rt: self, group: leaders, ctx, rank: 0, size: 2 };
            swap(&mut x, &(mine.len() as u64).to_le_bytes(), &mut len, TAG_INTER_SETUP - 4)?;
            theirs = vec![0u8; u64::from_le_bytes(len) as usize];
            swap(&mut x, &mine, &mut theirs, TAG_INTER_SETUP - 5)?;
        }
        coll::bcast(&mut a, &mut len, 0).map_err(coll_error)?;
        theirs.resize(u64::from_le_bytes(len) as usize, 0);
        coll::bcast(&mut a, &mut theirs, 0).map_err(coll_error)?;
        let pair = self.inter_agree(comm, &local)?;
        let others: Vec<u32> = self.locals_of(&theirs)?;
        let mut st = self.lock();
        let Some(new_rank) = group.rank_of(self.rank).filter(|_| !others.is_empty()) else {
            st.contexts.release(pair);
            return Ok(None);
        };
        let c = Comm::new(Arc::new(group.clone()), Some(Arc::new(Group::new(others))), new_rank, pair, String::new());
        Ok(Some(self.install(&mut st, c, Info::default())))
    }

    pub(crate) fn split_inter(&self, comm: CommId, color: i32, key: i32) -> MpiResult<Option<CommId>> {
        let (local, remote, ctx, rank) = {
            let st = self.lock();
            let c = comm_ref(&st, comm)?;
            (Arc::clone(&c.group), c.remote.clone().expect("an inter-communicator"), c.coll_ctx(), c.rank)
        };
        let mut a = CollAdapter { rt: self, group: Arc::clone(&local), ctx, rank, size: local.size() };
        let mine: Vec<u8> = [color, key].iter().flat_map(|v| v.to_le_bytes()).collect();
        let mut ours = vec![0u8; 8 * local.size()];
        coll::allgather(&mut a, Some(&mine), &mut ours, 8).map_err(coll_error)?;
        let mut theirs = vec![0u8; 8 * remote.size()];
        if rank == 0 {
            let leaders = Arc::new(Group::new(vec![self.rank, remote.world(0).expect("the remote group is not empty")]));
            let mut x = CollAdapter { rt: self, group: leaders, ctx, rank: 0, size: 2 };
            swap(&mut x, &ours, &mut theirs, TAG_INTER_SETUP - 2)?;
        }
        coll::bcast(&mut a, &mut theirs, 0).map_err(coll_error)?;
        let pair = self.inter_agree(comm, &local)?;
        let (mine, others) = (members(&local, &entries(&ours), color), members(&remote, &entries(&theirs), color));
        let mut st = self.lock();
        if color == UNDEFINED || others.is_empty() {
            st.contexts.release(pair);
            return Ok(None);
        }
        let new_rank = mine.iter().position(|&w| w == self.rank).expect("this process has its own color");
        let c = Comm::new(Arc::new(Group::new(mine)), Some(Arc::new(Group::new(others))), new_rank, pair, String::new());
        Ok(Some(self.install(&mut st, c, Info::default())))
    }
}
