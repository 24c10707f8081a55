//! MPI-4's MPI_Comm_create_from_group and MPI_Intercomm_create_from_groups
//! (§11.4): communicators made from groups alone, no parent communicator.
//! wanmpi has no sessions, so the groups come from MPI_COMM_WORLD's, and
//! the agreement on a context runs on MPI_COMM_WORLD's collective context
//! under tags derived from the caller's string tag (which MPI requires to
//! tell concurrent calls apart).

use std::sync::Arc;

use wanmpi_engine::coll::CollComm;
use wanmpi_engine::{error::err, ErrorClass, MpiResult};

use crate::coll_adapter::{coll_error, CollAdapter};
use crate::comm::{Comm, CommId, COMM_WORLD};
use crate::comm_create::{and_over, Link};
use crate::group::Group;
use crate::info::Info;
use crate::p2p::comm_ref;
use crate::runtime::Runtime;
use crate::tagged::Tagged;

/// A tag for `stringtag` (FNV-1a, folded to the tags `Tagged` accepts).
fn tag_of(stringtag: &str) -> i32 {
    let h = stringtag.bytes().fold(0x811c_9dc5u32, |h, b| (h ^ u32::from(b)).wrapping_mul(0x0100_0193));
    (h % (1 << 18)) as i32
}

impl Runtime {
    fn world_ctx(&self) -> MpiResult<u32> {
        Ok(comm_ref(&self.lock(), COMM_WORLD)?.coll_ctx())
    }

    /// This process's rank in `group`, or an error naming the call.
    fn member(&self, group: &Group, what: &str) -> MpiResult<usize> {
        group.rank_of(self.rank).map_or_else(|| err(ErrorClass::Group, format!("{what}: this process is not in the group")), Ok)
    }

    /// MPI_Comm_create_from_group.
    pub fn comm_create_from_group(&self, group: &Group, stringtag: &str) -> MpiResult<CommId> {
        let rank = self.member(group, "MPI_Comm_create_from_group")?;
        let members = Arc::new(group.clone());
        let inner = CollAdapter { rt: self, group: Arc::clone(&members), ctx: self.world_ctx()?, rank, size: members.size() };
        let tag = tag_of(stringtag);
        let pair = self.agree_over(&mut Tagged { inner, tag }, u64::from(tag as u32))?;
        let mut st = self.lock();
        Ok(self.install(&mut st, Comm::new(members, None, rank, pair, String::new()), Info::default()))
    }

    /// MPI_Intercomm_create_from_groups: each group agrees a mask, the
    /// leaders swap theirs, and the common lowest free pair is the context.
    pub fn intercomm_create_from_groups(
        &self,
        local: &Group,
        local_leader: i32,
        remote: &Group,
        remote_leader: i32,
        stringtag: &str,
    ) -> MpiResult<CommId> {
        let what = "MPI_Intercomm_create_from_groups";
        let rank = self.member(local, what)?;
        let leader = |g: &Group, r: i32| usize::try_from(r).ok().filter(|&r| r < g.size());
        let (Some(ll), Some(rl)) = (leader(local, local_leader), leader(remote, remote_leader)) else {
            return err(ErrorClass::Rank, format!("{what}: a leader is not a rank of its group"));
        };
        if local.members().iter().any(|w| remote.rank_of(*w).is_some()) {
            return err(ErrorClass::Group, format!("{what}: the two groups overlap"));
        }
        let (ctx, tag) = (self.world_ctx()?, tag_of(stringtag));
        let members = Arc::new(local.clone());
        let inner = CollAdapter { rt: self, group: Arc::clone(&members), ctx, rank, size: members.size() };
        let mut a = Tagged { inner, tag };
        let mut x = (rank == ll).then(|| {
            let pair = Arc::new(Group::new(vec![self.rank, remote.world(rl).expect("checked above")]));
            Tagged { inner: CollAdapter { rt: self, group: pair, ctx, rank: 0, size: 2 }, tag }
        });
        // Both sides know both groups: the key is the lower group's first member and the tag.
        let first = local.world(0).unwrap_or(0).min(remote.world(0).unwrap_or(0));
        let pair = self.agree((u64::from(first) << 32) | u64::from(tag as u32), &mut |w: &[u64]| {
            // The leaders' exchange, on a tag no algorithm uses (3002).
            let mut swap_words = |mine: &[u8], theirs: &mut [u8]| match x.as_mut() {
                Some(x) => x.sendrecv(mine, theirs, 1, 3002).map_err(coll_error),
                None => Ok(()),
            };
            let link: Option<&mut Link<'_>> = if rank == ll { Some(&mut swap_words) } else { None };
            and_over(&mut a, Some(ll), link, w)
        })?;
        let mut st = self.lock();
        let c = Comm::new(members, Some(Arc::new(remote.clone())), rank, pair, String::new());
        Ok(self.install(&mut st, c, Info::default()))
    }
}
