//! Collectives that meet a failure: with --tolerate-rank-failure, a
//! blocking collective's step does not wait forever on a live member that
//! left the collective early because another member died (it never sends):
//! once a failure among the communicator's members is known and what is
//! left to wait for are receives not matched yet, they are withdrawn and the
//! step fails with MPIX_ERR_PROC_FAILED (ULFM lets a collective fail at some
//! members and succeed at others; it must not hang). Nonblocking and
//! persistent collectives get the same treatment in `icoll::step`
//! (`withdraw_schedule` here).

use wanmpi_engine::{error::err, ErrorClass, MpiResult};

use crate::group::Group;
use crate::p2p::{test_locked, Completion};
use crate::reqtable::{Entry, Req};
use crate::runtime::{Runtime, State};

impl Runtime {
    /// `waitall` for one collective step over `group`.
    pub(crate) fn waitall_in(&self, rs: &[Option<Req>], group: &Group) -> MpiResult<Vec<Option<Completion>>> {
        if !self.opts.tolerate_rank_failure {
            return self.waitall(rs);
        }
        let mut out: Vec<Option<Completion>> = vec![None; rs.len()];
        let mut left: Vec<usize> = (0..rs.len()).filter(|&i| rs[i].is_some()).collect();
        self.wait_until(|st| {
            let mut still = vec![];
            for &i in &left {
                let Some(r) = rs[i] else { continue };
                match test_locked(st, r)? {
                    Some(c) => out[i] = Some(c),
                    None => still.push(i),
                }
            }
            left = still;
            if left.is_empty() {
                return Ok(Some(()));
            }
            if member_failed(st, group) && withdraw(st, rs, &left) {
                return err(ErrorClass::ProcFailed, "a member of the communicator failed during the collective");
            }
            Ok(None)
        })?;
        Ok(out)
    }
}

pub(crate) fn member_failed(st: &State, group: &Group) -> bool {
    st.ulfm.failed.iter().any(|f| group.rank_of(*f).is_some())
}

/// Cancels the requests at `left` if every one is a receive not matched
/// yet (nothing will write their buffers then); false, touching nothing,
/// if some are under way.
fn withdraw(st: &mut State, rs: &[Option<Req>], left: &[usize]) -> bool {
    let ids: Vec<(Req, wanmpi_engine::request::RequestId)> = left
        .iter()
        .filter_map(|&i| {
            let r = rs[i]?;
            match st.reqs.get(r) {
                Some(Entry::Active { id, .. }) => Some((r, *id)),
                _ => None,
            }
        })
        .collect();
    if ids.len() != left.len() || !ids.iter().all(|(_, id)| st.engine.is_unmatched_recv(*id)) {
        return false;
    }
    for (r, id) in ids {
        let _ = st.engine.cancel(id);
        let _ = st.engine.test(id);
        st.reqs.remove(r);
    }
    true
}

/// A nonblocking collective's schedule over `group` that waits only for
/// receives not matched yet while a member is known failed: cancels them
/// and says so (the caller fails the request); false, touching nothing,
/// otherwise.
pub(crate) fn withdraw_schedule(engine: &mut wanmpi_engine::Engine, pending: &[&crate::icoll::Handle]) -> bool {
    let mut ids = Vec::with_capacity(pending.len());
    for h in pending {
        match h {
            crate::icoll::Handle::Recv(id, _) if engine.is_unmatched_recv(*id) => ids.push(*id),
            _ => return false,
        }
    }
    for id in ids {
        let _ = engine.cancel(id);
        let _ = engine.test(id);
    }
    true
}
