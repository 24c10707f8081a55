//! The launcher's pushes, taken in by progress: a rank died (fail what
//! waits on it), a communicator was revoked (fail what waits on it and
//! refuse what comes), an agreement ended (kept for its caller).

use std::time::Instant;

use wanmpi_bootstrap::Push;

use super::POLL_EVERY;
use crate::runtime::{Runtime, State};

impl Runtime {
    /// From the progress loop: at most every `POLL_EVERY`, and only when
    /// the job tolerates rank failure (otherwise the launcher ends it);
    /// every step while an iagree or ishrink waits.
    pub(crate) fn ulfm_tick(&self, st: &mut State) {
        let waiting = !st.ulfm.pending.is_empty();
        if !self.opts.tolerate_rank_failure && !waiting {
            return;
        }
        let now = Instant::now();
        if !waiting && st.ulfm.last_poll.is_some_and(|t| now.duration_since(t) < POLL_EVERY) {
            return;
        }
        st.ulfm.last_poll = Some(now);
        self.ulfm_poll(st);
    }

    /// Takes what the launcher pushed, now. The launcher connection is
    /// only tried: a thread inside a key/value call holds it, and the next
    /// look takes what came meanwhile.
    pub(crate) fn ulfm_poll(&self, st: &mut State) {
        let pushes = match self.kv.try_lock() {
            Ok(mut kv) => kv.as_mut().map(|k| k.poll_pushes()).unwrap_or_default(),
            Err(_) => return,
        };
        for p in pushes {
            self.apply_push(st, p);
        }
        self.sync_failed(st);
        self.finish_nonblocking(st);
    }

    fn apply_push(&self, st: &mut State, p: Push) {
        match p {
            Push::Dead { rank, reason } => {
                if rank != self.rank {
                    st.engine.peer_lost(rank, reason);
                    st.transport.peer_failed(rank);
                }
            }
            Push::Revoked { ref id } => super::identity::revoked_elsewhere(st, id),
            Push::Agreed { ref id, .. } => {
                st.ulfm.agreed.insert(id.clone(), p);
            }
        }
    }

    /// Failures the engine knows (the launcher's or a transport's) join
    /// `failed` in the order first seen.
    pub(crate) fn sync_failed(&self, st: &mut State) {
        let mut new: Vec<u32> = st.engine.failed_peers().map(|(p, _)| *p).filter(|p| !st.ulfm.failed.contains(p)).collect();
        new.sort_unstable();
        st.ulfm.failed.extend(new);
    }
}

/// Marks `id` revoked and fails what waits on its contexts.
pub(crate) fn mark_revoked(st: &mut State, id: crate::comm::CommId, why: &str) {
    let Some(c) = st.comms.get_mut(id) else { return };
    if c.revoked {
        return;
    }
    c.revoked = true;
    let ctxs = [c.p2p_ctx(), c.coll_ctx()];
    st.engine.revoke_contexts(&ctxs, why);
}
