//! MPIX_Comm_agree and MPIX_Comm_shrink: one fault-tolerant agreement
//! each, decided by mpirun's key/value service (the algorithm and why it
//! survives failures: `wanmpi_bootstrap::server`'s `agree.rs`).
//!
//! An agreement is named `<communicator>.<n>`: the communicator's name
//! across processes (`identity.rs`) and the number of agreements started
//! on it so far, alike at every member because agree and shrink are
//! collective. Each member sends its value,
//! the failures it acknowledged, and the members; it then makes progress
//! (its messages keep moving) until the outcome is pushed back, bounded by
//! the bootstrap timeout (WANMPI_BOOTSTRAP_TIMEOUT, default 120 s).
//!
//! - agree: the value is the caller's int; the outcome its AND over every
//!   member that took part, and MPIX_ERR_PROC_FAILED (at every member,
//!   uniformly) if some member failed without every participant having
//!   acknowledged it.
//! - shrink: the value is this process's free-context bitmap; the outcome's
//!   AND gives a context free at every survivor, and its failed set is the
//!   same at every survivor, so all build the same communicator.

use std::sync::Arc;
use std::time::{Duration, Instant};

use wanmpi_bootstrap::Push;
use wanmpi_engine::{error::err, ErrorClass, MpiError, MpiResult};

use crate::agree::{bytes_to_words, words_to_bytes};
use crate::comm::{Comm, CommId};
use crate::context::ContextPool;
use crate::errhandler::ErrHandler;
use crate::group::Group;
use crate::info::Info;
use crate::p2p::comm_ref;
use crate::runtime::{Runtime, State};

/// What `comm_agree` returns: the agreed flag, and whether a failure in
/// the communicator was not acknowledged (the call then returns
/// MPIX_ERR_PROC_FAILED, with the flag still set).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AgreeOutcome {
    pub flag: i32,
    pub unacknowledged: bool,
}

/// An agreement's outcome: AND of the values, members dead, uniform.
pub(super) struct Decision {
    pub value: Vec<u8>,
    pub dead: Vec<u32>,
    pub uniform: bool,
}

impl Decision {
    /// The agreed flag of an agree (the value's first 4 bytes).
    pub fn flag(&self) -> i32 {
        let mut b = [0u8; 4];
        for (x, y) in b.iter_mut().zip(&self.value) {
            *x = *y;
        }
        i32::from_le_bytes(b)
    }
}

/// An agreement just joined.
pub(super) enum Started {
    /// A communicator of one: decided already.
    Alone(Decision),
    /// Sent to mpirun as `id`; its outcome comes on `fd` (the launcher's connection).
    Sent { id: String, fd: Option<std::os::fd::RawFd> },
}

/// Agreement `id`'s outcome, if mpirun pushed it.
pub(super) fn take_decision(st: &mut State, id: &str) -> Option<Decision> {
    match st.ulfm.agreed.remove(id)? {
        Push::Agreed { value, dead, uniform, .. } => Some(Decision { value, dead, uniform }),
        _ => None,
    }
}

/// The communicator a shrink of `comm` (whose members were `members` when
/// it started) builds from decision `d`: the survivors, in order, on the
/// lowest pair free at all of them, with `comm`'s error handler.
pub(super) fn shrunk(st: &State, comm: CommId, members: &[u32], d: &Decision, me: u32) -> MpiResult<Comm> {
    let pair =
        ContextPool::lowest(&bytes_to_words(&d.value)).ok_or_else(|| MpiError::new(ErrorClass::Intern, "no context free at every survivor"))?;
    let survivors: Vec<u32> = members.iter().copied().filter(|m| !d.dead.contains(m)).collect();
    let rank = survivors.iter().position(|m| *m == me).ok_or_else(|| MpiError::new(ErrorClass::Intern, "this process is not among the survivors"))?;
    let mut c = Comm::new(Arc::new(Group::new(survivors)), None, rank, pair, String::new());
    c.errhandler = st.comms.get(comm).map_or(ErrHandler::Fatal, |p| p.errhandler.clone());
    Ok(c)
}

impl Runtime {
    /// MPIX_Comm_agree: the AND of `flag` over the members that take part.
    pub fn comm_agree(&self, comm: CommId, flag: i32) -> MpiResult<AgreeOutcome> {
        let d = self.agreement(comm, flag.to_le_bytes().to_vec())?;
        Ok(AgreeOutcome { flag: d.flag(), unacknowledged: !d.uniform })
    }

    /// MPIX_Comm_shrink: a new communicator of `comm`'s members that had
    /// not failed when the agreement ended, in `comm`'s order; works on a
    /// revoked communicator. Its error handler is `comm`'s.
    pub fn comm_shrink(&self, comm: CommId) -> MpiResult<CommId> {
        let mask: Vec<u8> = {
            let st = self.lock();
            words_to_bytes(&st.reservations.offer(&st.contexts))
        };
        let members = Self::members_of(&self.lock(), comm)?;
        let d = self.agreement(comm, mask)?;
        let mut st = self.lock();
        let c = shrunk(&st, comm, &members, &d, self.rank)?;
        st.contexts.take(c.pair);
        Ok(self.install(&mut st, c, Info::default()))
    }

    /// Runs one agreement over `comm` with `value`; see the module doc.
    fn agreement(&self, comm: CommId, value: Vec<u8>) -> MpiResult<Decision> {
        let (id, fd) = match self.agreement_start(comm, value)? {
            Started::Alone(d) => return Ok(d),
            Started::Sent { id, fd } => (id, fd),
        };
        let limit = wanmpi_bootstrap::timeout_from_env();
        let until = Instant::now() + limit;
        loop {
            {
                let mut st = self.lock();
                self.progress(&mut st)?;
                self.ulfm_poll(&mut st);
                if let Some(d) = take_decision(&mut st, &id) {
                    return Ok(d);
                }
            }
            if Instant::now() >= until {
                return err(ErrorClass::Other, format!("agreement {id} did not end within {limit:?} (a member neither took part nor failed)"));
            }
            self.sleep_on_launcher(fd, Duration::from_millis(2));
        }
    }

    /// Joins an agreement over `comm` with `value` (its outcome comes later
    /// as a push), or decides it at once for a communicator of one.
    pub(super) fn agreement_start(&self, comm: CommId, value: Vec<u8>) -> MpiResult<Started> {
        let (id, members, acked) = {
            let mut st = self.lock();
            self.ulfm_poll(&mut st);
            let c = comm_ref(&st, comm)?;
            if c.is_inter() {
                return err(ErrorClass::UnsupportedOperation, "agree and shrink on inter-communicators are not supported");
            }
            let members = c.group.members().to_vec();
            if members.iter().any(|m| *m >= self.size) {
                return err(ErrorClass::UnsupportedOperation, "agree and shrink over processes of other jobs (spawned, connected) are not supported");
            }
            let name = super::identity::name_of(&st, comm).map(|n| n.render()).unwrap_or_default();
            let n = st.ulfm.seq.entry(comm.0).or_insert(0);
            let id = format!("{name}.{n}");
            *n += 1;
            (id, members, Self::acked_of(&st, comm))
        };
        if members.len() == 1 {
            return Ok(Started::Alone(Decision { value, dead: Vec::new(), uniform: true }));
        }
        let mut kv = self.kv.lock().unwrap_or_else(|p| p.into_inner());
        let k = kv.as_mut().ok_or_else(|| MpiError::new(ErrorClass::UnsupportedOperation, "agree and shrink need mpirun (no launcher)"))?;
        k.agree_start(&id, members, acked, value).map_err(|e| MpiError::new(ErrorClass::Other, format!("agreement {id}: {e}")))?;
        Ok(Started::Sent { fd: k.push_fd(), id })
    }

    /// Sleeps until the launcher's connection or the transport has something, or `t`.
    fn sleep_on_launcher(&self, kv: Option<std::os::fd::RawFd>, t: Duration) {
        let ready = self.ready_fd.load(std::sync::atomic::Ordering::Relaxed);
        let mut p =
            [libc::pollfd { fd: kv.unwrap_or(-1), events: libc::POLLIN, revents: 0 }, libc::pollfd { fd: ready, events: libc::POLLIN, revents: 0 }];
        // SAFETY: a valid pollfd array of the length passed (negative fds are ignored).
        unsafe { libc::poll(p.as_mut_ptr(), 2, t.as_millis().clamp(1, 1000) as i32) };
    }
}
