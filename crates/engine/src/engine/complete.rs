//! Completion: marking requests done, testing and freeing them, cancelling
//! posted receives, and failing what depends on a lost peer.

use wanmpi_transport::PeerId;

use super::{Engine, OutItem, Target};
use crate::error::{err, ErrorClass, MpiError, MpiResult};
use crate::request::{RecvPhase, ReqKind, RequestId, SendPhase, Status};

impl Engine {
    pub(super) fn complete(&mut self, id: RequestId, status: Status) {
        let Some(r) = self.reqs.get_mut(id) else { return };
        r.complete = true;
        r.status = status;
        if r.detached {
            self.reqs.remove(id);
        }
    }

    pub(super) fn fail(&mut self, id: RequestId, e: MpiError) {
        let Some(r) = self.reqs.get_mut(id) else { return };
        match &mut r.kind {
            ReqKind::Send(s) => s.phase = SendPhase::Done,
            ReqKind::Recv(rv) => rv.phase = RecvPhase::Done,
        }
        let mut status = Status::empty();
        status.error = Some(e);
        self.complete(id, status);
    }

    /// MPI_Test: the status if the request is complete (and then the request
    /// is gone), `None` if still in flight.
    pub fn test(&mut self, id: RequestId) -> MpiResult<Option<Status>> {
        match self.reqs.get(id) {
            None => err(ErrorClass::Request, "request handle is not active (already completed or freed)"),
            Some(r) if r.complete => Ok(self.reqs.remove(id).map(|r| r.status)),
            Some(_) => Ok(None),
        }
    }

    /// Completed, without consuming it (MPI_Request_get_status).
    pub fn is_complete(&self, id: RequestId) -> MpiResult<bool> {
        self.reqs.get(id).map(|r| r.complete).ok_or_else(|| MpiError::new(ErrorClass::Request, "request handle is not active"))
    }

    /// MPI_Request_free: the request finishes on its own and is then dropped.
    pub fn free(&mut self, id: RequestId) -> MpiResult<()> {
        let Some(r) = self.reqs.get_mut(id) else {
            return err(ErrorClass::Request, "request handle is not active");
        };
        if r.complete {
            self.reqs.remove(id);
        } else {
            r.detached = true;
        }
        Ok(())
    }

    /// MPI_Cancel. A receive not yet matched is cancelled; anything else
    /// (a matched receive, any send) completes normally and reports
    /// "not cancelled", which the standard allows.
    pub fn cancel(&mut self, id: RequestId) -> MpiResult<()> {
        let Some(r) = self.reqs.get(id) else {
            return err(ErrorClass::Request, "request handle is not active");
        };
        if let ReqKind::Recv(rv) = &r.kind {
            if rv.phase == RecvPhase::Posted && self.matcher.cancel(id) {
                let mut status = Status::empty();
                status.cancelled = true;
                self.complete(id, status);
                self.deliver_released();
            }
        }
        Ok(())
    }

    /// A peer is gone: every request that can no longer complete fails with
    /// MPIX_ERR_PROC_FAILED naming it. Wildcard-source receives stay posted:
    /// another process may still satisfy them.
    pub fn peer_lost(&mut self, peer: PeerId, reason: String) {
        if self.lost.contains_key(&peer) || peer >= self.size {
            return;
        }
        let e = MpiError::new(ErrorClass::ProcFailed, format!("rank {peer} is lost: {reason}"));
        self.lost.insert(peer, reason);
        self.out[peer as usize].retain(|i| matches!(i, OutItem::Message(_)));
        self.credits[peer as usize].clear();
        self.forget_offers_of(peer);
        for id in self.matcher.remove_posted_from(peer) {
            self.fail(id, e.clone());
        }
        let receiving: Vec<RequestId> = self
            .inbound
            .iter()
            .filter(|((p, _), _)| *p == peer)
            .filter_map(|(_, t)| match t {
                Target::Recv(id) => Some(*id),
                Target::Unexpected => None,
            })
            .collect();
        self.inbound.retain(|(p, _), _| *p != peer);
        // Messages from the lost peer that are not wholly here (a bare RTS,
        // or an eager message still missing data) could match a receive
        // that would then wait forever: drop them. Complete ones stay
        // receivable.
        let complete: std::collections::HashSet<u64> =
            self.unexpected_data.iter().filter(|((p, _), b)| *p == peer && b.got == b.total).map(|((_, id), _)| *id).collect();
        self.matcher.drop_unexpected_from(peer, |u| u.rendezvous || !complete.contains(&u.env.msg_id));
        self.unexpected_data.retain(|(p, id), _| *p != peer || complete.contains(id));
        for id in receiving {
            self.fail(id, e.clone());
        }
        let sends: Vec<RequestId> = self
            .reqs
            .ids()
            .into_iter()
            .filter(|id| self.reqs.get(*id).is_some_and(|r| !r.complete && matches!(&r.kind, ReqKind::Send(s) if s.dest == peer)))
            .collect();
        for id in sends {
            self.fail(id, e.clone());
        }
        self.out[peer as usize].clear();
    }
}
