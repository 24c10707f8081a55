//! ULFM (user-level failure mitigation, MPICH 4.0's `MPIX_Comm_*` and the
//! later names of Open MPI 5): what this process knows of failed ranks,
//! which it acknowledged per communicator, revoked communicators, and the
//! agreements the launcher decides.
//!
//! - `identity.rs`: which communicator a revoke or an agreement means
//!   (pair, member set, incarnation), and revokes that come early;
//! - `notices.rs`: the launcher's pushes (a rank died, a communicator was
//!   revoked, an agreement ended) taken in by the progress loop;
//! - `calls.rs`: revoke, failure_ack/get_acked, get_failed/ack_failed;
//! - `coll.rs`: a blocking collective's step fails rather than hang once
//!   a member is known failed;
//! - `nonblocking.rs`: iagree and ishrink, completed by progress;
//! - `agreement.rs`: agree and shrink, one fault-tolerant agreement decided
//!   by mpirun's key/value service (`wanmpi_bootstrap::server`'s
//!   `agree.rs` holds the algorithm).
//!
//! Failures come from two places: the launcher's `dead` pushes (it saw the
//! process end; ≤ ~1 s, whatever the network does) and the transports
//! (a peer silent past the outage limit, a reset that cannot be repaired).
//! Both end in `Engine::peer_lost`; `failed` lists them in the order this
//! process learned of them, which is the order `MPIX_Comm_get_failed`
//! reports and `MPIX_Comm_ack_failed` acknowledges in.

mod agreement;
mod calls;
pub(crate) mod coll;
mod identity;
mod nonblocking;
mod notices;

pub use agreement::AgreeOutcome;
pub(crate) use identity::born;

use std::collections::HashMap;
use std::time::Instant;

/// How often the progress loop looks for the launcher's pushes (only with
/// --tolerate-rank-failure; without it a death ends the job).
pub(crate) const POLL_EVERY: std::time::Duration = std::time::Duration::from_millis(10);

#[derive(Default)]
pub struct Ulfm {
    /// World ranks known failed, in the order this process learned of them.
    failed: Vec<u32>,
    /// Per communicator: how many of its failed members were acknowledged
    /// (a prefix of `failed_in(comm)`), and which.
    acked: HashMap<u32, Vec<u32>>,
    /// Finished agreements by id, until their caller takes them.
    agreed: HashMap<String, wanmpi_bootstrap::Push>,
    /// Per communicator: agreements (agree, shrink) started so far, to
    /// name the next one alike at every member.
    seq: HashMap<u32, u32>,
    last_poll: Option<Instant>,
    /// Communicators' names across processes, and early revokes.
    names: identity::Names,
    /// iagree and ishrink waiting for their outcome.
    pending: Vec<nonblocking::Pending>,
}

impl Ulfm {
    /// Whether any failure is known (the progress loop's cheap first look).
    pub(crate) fn any_failed(&self) -> bool {
        !self.failed.is_empty()
    }
}
