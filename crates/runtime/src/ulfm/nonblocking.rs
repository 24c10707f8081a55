//! MPIX_Comm_iagree and MPIX_Comm_ishrink: the agreement is sent to mpirun
//! when called and the request completes when its outcome is pushed back,
//! so a program may overlap it with communication other members need
//! first. Progress (`ulfm_tick`) looks for the outcome on every step while
//! one is pending.
//!
//! An ishrink's communicator exists (without a context) from the call on,
//! as MPI_Comm_idup's does; the pairs it offers stay reserved until the
//! outcome, so no communicator created meanwhile takes the one it gets.
//! It offers the lowest `SHRINK_WINDOW` free pairs, not all: a reservation
//! of every free pair would leave none for those communicators.
//!
//! As with the blocking agreement, a request whose agreement has not ended
//! within the bootstrap timeout fails (a member neither joined nor died).

use std::sync::Arc;
use std::time::Instant;

use wanmpi_engine::{ErrorClass, MpiError, MpiResult};

use super::agreement::{shrunk, take_decision, Decision, Started};
use crate::agree::words_to_bytes;
use crate::comm::{Comm, CommId};
use crate::context::WORDS;
use crate::group::Group;
use crate::p2p::comm_ref;
use crate::reqtable::{Entry, Req, Status};
use crate::runtime::{Runtime, State};

/// How many free pairs an ishrink offers (and reserves meanwhile).
const SHRINK_WINDOW: usize = 256;

/// A nonblocking agreement waiting for its outcome.
pub(crate) struct Pending {
    req: Req,
    id: String,
    kind: Kind,
    /// As the blocking agreement does, the request fails after the
    /// bootstrap timeout if a member neither took part nor failed.
    until: Instant,
}

enum Kind {
    /// Where the caller's flag lives (an address: the request keeps it
    /// valid until completion, as MPI's rules on buffers do).
    Agree { flag: usize },
    /// The communicator being made, the members of the one shrunk, and
    /// the pairs reserved for it.
    Shrink { new: CommId, members: Vec<u32>, reserved: Vec<u32> },
}

impl Runtime {
    /// MPIX_Comm_iagree: starts the AND of `*flag` over `comm`'s members;
    /// the request completes with the agreed value in `*flag`, failed with
    /// MPIX_ERR_PROC_FAILED as `comm_agree` would be.
    ///
    /// # Safety
    /// `flag` stays valid, and untouched by the caller, until the request completes.
    pub unsafe fn comm_iagree(&self, comm: CommId, flag: *mut i32) -> MpiResult<Req> {
        // SAFETY: the caller's contract.
        let value = unsafe { *flag };
        let started = self.agreement_start(comm, value.to_le_bytes().to_vec())?;
        let mut st = self.lock();
        let req = st.reqs.insert(Entry::Awaited);
        let kind = Kind::Agree { flag: flag as usize };
        match started {
            Started::Alone(d) => finish(&mut st, req, &kind, d, self.rank),
            Started::Sent { id, .. } => st.ulfm.pending.push(Pending::new(req, id, kind)),
        }
        Ok(req)
    }

    /// MPIX_Comm_ishrink: the communicator (usable once the request
    /// completes) and the request.
    pub fn comm_ishrink(&self, comm: CommId) -> MpiResult<(CommId, Req)> {
        let (offer, reserved, members, new) = {
            let mut st = self.lock();
            let members = Self::members_of(&st, comm)?;
            let parent = comm_ref(&st, comm)?;
            let mut placeholder = Comm::new(Arc::new(Group::new(Vec::new())), None, 0, crate::context::PAIRS as u32, String::new());
            placeholder.errhandler = parent.errhandler.clone();
            let st = &mut *st;
            let free = st.reservations.offer(&st.contexts);
            let reserved: Vec<u32> = (0..crate::context::PAIRS as u32)
                .filter(|p| free[*p as usize / 64] & (1 << (p % 64)) != 0)
                .take(SHRINK_WINDOW)
                .filter(|p| st.reservations.try_reserve(&st.contexts, *p))
                .collect();
            let mut offer = [0u64; WORDS];
            for p in &reserved {
                offer[*p as usize / 64] |= 1 << (p % 64);
            }
            (offer, reserved, members, st.comms.insert(placeholder))
        };
        let started = self.agreement_start(comm, words_to_bytes(&offer)).inspect_err(|_| {
            let mut st = self.lock();
            for p in &reserved {
                st.reservations.release(*p);
            }
            st.comms.remove(new);
        })?;
        let mut st = self.lock();
        let req = st.reqs.insert(Entry::Awaited);
        let kind = Kind::Shrink { new, members, reserved };
        match started {
            Started::Alone(d) => finish(&mut st, req, &kind, d, self.rank),
            Started::Sent { id, .. } => st.ulfm.pending.push(Pending::new(req, id, kind)),
        }
        Ok((new, req))
    }

    /// From progress: completes the nonblocking agreements whose outcome
    /// came, and fails those past their time.
    pub(crate) fn finish_nonblocking(&self, st: &mut State) {
        let now = Instant::now();
        let mut i = 0;
        while i < st.ulfm.pending.len() {
            let decided = take_decision(st, &st.ulfm.pending[i].id.clone());
            if decided.is_none() && now < st.ulfm.pending[i].until {
                i += 1;
                continue;
            }
            let p = st.ulfm.pending.swap_remove(i);
            match decided {
                Some(d) => finish(st, p.req, &p.kind, d, self.rank),
                None => give_up(st, &p),
            }
            st.activity += 1;
        }
    }
}

impl Pending {
    fn new(req: Req, id: String, kind: Kind) -> Pending {
        Pending { req, id, kind, until: Instant::now() + wanmpi_bootstrap::timeout_from_env() }
    }
}

/// Fails `p`'s request: its agreement did not end in time.
fn give_up(st: &mut State, p: &Pending) {
    if let Kind::Shrink { new, reserved, .. } = &p.kind {
        for r in reserved {
            st.reservations.release(*r);
        }
        st.comms.remove(*new);
    }
    let why = format!("agreement {} did not end within {:?} (a member neither took part nor failed)", p.id, wanmpi_bootstrap::timeout_from_env());
    if let Some(e) = st.reqs.get_mut(p.req) {
        let mut s = Status::empty();
        s.error = Some(MpiError::new(ErrorClass::Other, why));
        *e = Entry::Done(s);
    }
}

/// Ends request `req` with decision `d`.
fn finish(st: &mut State, req: Req, kind: &Kind, d: Decision, me: u32) {
    let error = match kind {
        Kind::Agree { flag } => {
            // A freed request's flag is not the program's to expect any more.
            if st.reqs.get(req).is_some() {
                // SAFETY: `comm_iagree`'s contract keeps the flag valid until now.
                unsafe { *(*flag as *mut i32) = d.flag() };
            }
            (!d.uniform)
                .then(|| MpiError::new(ErrorClass::ProcFailed, "a member of the communicator failed and not every participant had acknowledged it"))
        }
        Kind::Shrink { new, members, reserved } => {
            for p in reserved {
                st.reservations.release(*p);
            }
            match shrunk(st, *new, members, &d, me) {
                // Freed before completion (erroneous): nothing to make.
                Ok(_) if st.comms.get(*new).is_none() => None,
                Ok(c) => {
                    st.contexts.take(c.pair);
                    st.engine.set_allow_overtaking(c.p2p_ctx(), false);
                    if let Some(n) = st.comms.get_mut(*new) {
                        (n.group, n.rank, n.pair) = (c.group, c.rank, c.pair);
                    }
                    super::born(st, *new);
                    None
                }
                Err(e) => {
                    st.comms.remove(*new);
                    Some(e)
                }
            }
        }
    };
    if let Some(e) = st.reqs.get_mut(req) {
        let mut s = Status::empty();
        s.error = error;
        *e = Entry::Done(s);
    }
}
