//! The local ULFM calls: revoke, and what this process knows and has
//! acknowledged of failures in a communicator (MPICH 4.0's
//! `MPIX_Comm_failure_ack` / `_get_acked`, Open MPI 5's
//! `MPIX_Comm_get_failed` / `_ack_failed`).

use wanmpi_engine::{ErrorClass, MpiError, MpiResult};

use super::identity::name_of;
use super::notices::mark_revoked;
use crate::comm::CommId;
use crate::group::Group;
use crate::p2p::comm_ref;
use crate::runtime::{Runtime, State};

impl Runtime {
    /// The world ranks of `comm` (both groups of an inter-communicator).
    pub(crate) fn members_of(st: &State, comm: CommId) -> MpiResult<Vec<u32>> {
        let c = comm_ref(st, comm)?;
        let mut m: Vec<u32> = c.group.members().to_vec();
        if let Some(r) = &c.remote {
            m.extend_from_slice(r.members());
        }
        Ok(m)
    }

    /// Failed members of `comm` this process knows of, in the order it
    /// learned of them.
    pub(crate) fn failed_in(&self, st: &mut State, comm: CommId) -> MpiResult<Vec<u32>> {
        self.ulfm_poll(st);
        let members = Self::members_of(st, comm)?;
        Ok(st.ulfm.failed.iter().copied().filter(|f| members.contains(f)).collect())
    }

    /// MPIX_Comm_revoke: every pending and later operation on `comm` fails
    /// with MPIX_ERR_REVOKED here and, once mpirun relayed it, at every
    /// other member; agree, shrink and the acknowledgements still work.
    pub fn comm_revoke(&self, comm: CommId) -> MpiResult<()> {
        let (name, members) = {
            let mut st = self.lock();
            let members = Self::members_of(&st, comm)?;
            let name = name_of(&st, comm).ok_or_else(|| MpiError::new(ErrorClass::Comm, "MPIX_Comm_revoke: no such communicator"))?;
            mark_revoked(&mut st, comm, &format!("revoked by rank {} (MPIX_Comm_revoke)", self.rank));
            (name.render(), members)
        };
        let mut kv = self.kv.lock().unwrap_or_else(|p| p.into_inner());
        match kv.as_mut() {
            Some(k) => k.revoke(&name, members).map_err(|e| MpiError::new(ErrorClass::Other, format!("revoke: {e}"))),
            // A job of one (no launcher): nobody else to tell.
            None => Ok(()),
        }
    }

    /// Whether `comm` was revoked.
    pub fn comm_is_revoked(&self, comm: CommId) -> MpiResult<bool> {
        let mut st = self.lock();
        self.ulfm_poll(&mut st);
        Ok(comm_ref(&st, comm)?.revoked)
    }

    /// MPIX_Comm_failure_ack: acknowledges every failure of `comm`'s
    /// members known now (wildcard receives go on; agree stops reporting them).
    pub fn comm_failure_ack(&self, comm: CommId) -> MpiResult<()> {
        let mut st = self.lock();
        let failed = self.failed_in(&mut st, comm)?;
        st.ulfm.acked.insert(comm.0, failed);
        Ok(())
    }

    /// MPIX_Comm_failure_get_acked: the acknowledged failed members, as a
    /// group of world ranks.
    pub fn comm_failure_get_acked(&self, comm: CommId) -> MpiResult<Group> {
        let st = self.lock();
        comm_ref(&st, comm)?;
        Ok(Group::new(st.ulfm.acked.get(&comm.0).cloned().unwrap_or_default()))
    }

    /// MPIX_Comm_get_failed (Open MPI 5, MPI-Forum draft): every failed
    /// member this process knows of.
    pub fn comm_get_failed(&self, comm: CommId) -> MpiResult<Group> {
        let mut st = self.lock();
        Ok(Group::new(self.failed_in(&mut st, comm)?))
    }

    /// MPIX_Comm_ack_failed: acknowledges the first `n` failures in
    /// `comm_get_failed`'s order (never fewer than already acknowledged);
    /// returns how many are acknowledged.
    pub fn comm_ack_failed(&self, comm: CommId, n: usize) -> MpiResult<usize> {
        let mut st = self.lock();
        let failed = self.failed_in(&mut st, comm)?;
        let before = st.ulfm.acked.get(&comm.0).map_or(0, Vec::len);
        let take = n.max(before).min(failed.len());
        st.ulfm.acked.insert(comm.0, failed[..take].to_vec());
        Ok(take)
    }

    /// Failures of `comm` not acknowledged yet (for wildcard receives).
    pub(crate) fn unacked_failures(&self, st: &State, comm: CommId) -> bool {
        let Ok(members) = Self::members_of(st, comm) else { return false };
        let acked = st.ulfm.acked.get(&comm.0);
        st.ulfm.failed.iter().any(|f| members.contains(f) && !acked.is_some_and(|a| a.contains(f)))
    }

    /// Whether engine request `id` is a wildcard-source receive that a
    /// failed member not acknowledged yet could have satisfied: ULFM then
    /// reports MPIX_ERR_PROC_FAILED_PENDING (nonblocking; the request stays)
    /// or MPIX_ERR_PROC_FAILED (MPI_Recv; the receive is cancelled).
    pub(crate) fn wildcard_blocked(&self, st: &State, id: wanmpi_engine::request::RequestId) -> bool {
        if !self.opts.tolerate_rank_failure || st.ulfm.failed.is_empty() {
            return false;
        }
        let Some(ctx) = st.engine.wildcard_ctx(id) else { return false };
        st.comms.find_pair(ctx / 2).is_some_and(|comm| self.unacked_failures(st, comm))
    }

    /// `wildcard_blocked` for a runtime request: the error to report.
    pub(crate) fn pending_failure(&self, st: &State, r: crate::reqtable::Req) -> MpiResult<()> {
        if !self.opts.tolerate_rank_failure {
            return Ok(());
        }
        match st.reqs.get(r) {
            Some(crate::reqtable::Entry::Active { id, .. }) if self.wildcard_blocked(st, *id) => Err(MpiError::new(
                ErrorClass::ProcFailedPending,
                "a failed process that is not acknowledged could have sent to this wildcard receive (MPIX_Comm_failure_ack to go on)",
            )),
            _ => Ok(()),
        }
    }

    /// Acknowledged failures of `comm` (world ranks).
    pub(crate) fn acked_of(st: &State, comm: CommId) -> Vec<u32> {
        st.ulfm.acked.get(&comm.0).cloned().unwrap_or_default()
    }
}
