//! ULFM's revoke at the engine: the operations of a revoked communicator
//! that could wait forever fail with MPIX_ERR_REVOKED. Which communicators
//! are revoked, and refusing new operations on them, is the runtime's
//! (`crates/runtime/src/ulfm/`); the engine only knows contexts.

use super::Engine;
use crate::error::{ErrorClass, MpiError};
use crate::request::{ReqKind, RequestId, SendPhase};

impl Engine {
    /// Fails the requests on contexts `ctxs` that wait on a peer's next
    /// step: receives not matched yet, sends waiting for clear-to-send or
    /// (synchronous) for the match. What is already moving (a matched
    /// receive's data, frames queued) finishes normally, as ULFM allows.
    /// Returns how many failed.
    pub fn revoke_contexts(&mut self, ctxs: &[u32], why: &str) -> usize {
        let e = MpiError::new(ErrorClass::Revoked, why.to_string());
        let mut doomed: Vec<RequestId> = ctxs.iter().flat_map(|c| self.matcher.remove_posted_in(*c)).collect();
        doomed.extend(self.reqs.ids().into_iter().filter(|id| {
            self.reqs.get(*id).is_some_and(|r| {
                !r.complete && matches!(&r.kind, ReqKind::Send(s) if ctxs.contains(&s.ctx) && matches!(s.phase, SendPhase::AwaitCts | SendPhase::AwaitSyncAck))
            })
        }));
        for id in &doomed {
            self.fail(*id, e.clone());
        }
        doomed.len()
    }
}

impl Engine {
    /// The context of `id` if it is a wildcard-source receive not matched
    /// yet (ULFM: such a receive reports MPIX_ERR_PROC_FAILED_PENDING while
    /// a failure in its communicator is not acknowledged).
    pub fn wildcard_ctx(&self, id: RequestId) -> Option<u32> {
        match &self.reqs.get(id)?.kind {
            ReqKind::Recv(r) if r.src.is_none() && r.phase == crate::request::RecvPhase::Posted => Some(r.ctx),
            _ => None,
        }
    }
}

impl Engine {
    /// Whether `id` is a receive still waiting for its match (then
    /// `cancel` withdraws it and nothing will write its buffer).
    pub fn is_unmatched_recv(&self, id: RequestId) -> bool {
        self.reqs.get(id).is_some_and(|r| !r.complete && matches!(&r.kind, ReqKind::Recv(rv) if rv.phase == crate::request::RecvPhase::Posted))
    }
}
