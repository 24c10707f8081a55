//! MPI_Comm_idup and MPI_Comm_idup_with_info (MPI-4.0 §7.4.2): the
//! duplicate's context is agreed as `agree.rs` describes (a proposal, then
//! attempts of two phases if needed), run as schedules of the parent, so the call returns at once and
//! every progress step moves the agreement on; ranks may post the idup at
//! different times, with other operations outstanding, and overlapping
//! idups on different communicators complete in any order.
//!
//! The new communicator exists from the start (its handle is returned
//! then) with no context; it gets its pair when the agreement commits.
//! MPI forbids using it before the request completes.

use std::sync::Arc;

use wanmpi_engine::coll::sched::{self, Run, Schedule};
use wanmpi_engine::datatype::BasicType;
use wanmpi_engine::op::{Op, PredefOp};
use wanmpi_engine::{MpiError, MpiResult};

use crate::agree::{bytes_to_words, exhausted, pick, propose, words_to_bytes, MAX_ATTEMPTS};
use crate::comm::{Comm, CommId};
use crate::context::{ContextPool, PAIRS};
use crate::group::Group;
use crate::icoll::{advance, next_seq, start_error, CollReq, Then};
use crate::info::{Info, ALLOW_OVERTAKING};
use crate::p2p::comm_ref;
use crate::reqtable::{Entry, Req};
use crate::runtime::{Runtime, State};

/// The pair of a duplicate whose agreement is running: no communicator
/// has it, and freeing it gives nothing back.
const PENDING: u32 = PAIRS as u32;

/// Which reduction of the agreement is running.
enum Phase {
    /// Everyone's lowest free pair (this process's, reserved meanwhile).
    Proposal(Option<u32>),
    Offer,
    /// The candidate, and whether this process reserved it for the vote.
    Vote(u32, bool),
}

/// One MPI_Comm_idup's agreement: which phase, and how its schedules run.
struct Idup {
    new: CommId,
    /// The same at every participant, different for each idup pending on
    /// the parent (so two that collided pick apart): its pair and number.
    key: u64,
    /// This process's rank and the size of its (local) group.
    rank: usize,
    lsize: usize,
    /// On an inter-communicator: the other leader's peer index (at rank 0).
    inter: Option<Option<usize>>,
    seq: u32,
    attempt: u32,
    phase: Phase,
    /// The attributes could not be copied: the agreement still runs (the
    /// other ranks need it), then the request fails with this.
    failed: Option<MpiError>,
}

impl Idup {
    /// A schedule that ANDs `words` over every participant.
    fn and_all(&self, words: &[u64]) -> MpiResult<Schedule> {
        let (data, op) = (words_to_bytes(words), Op::Predef(PredefOp::Band));
        match self.inter {
            None => sched::allreduce(self.rank, self.lsize, data, words.len(), BasicType::Uint64, &op, self.seq),
            Some(leader) => sched::bridged_allreduce(self.rank, self.lsize, leader, data, words.len(), BasicType::Uint64, &op, self.seq),
        }
        .map_err(start_error)
    }

    fn offer(&self, st: &State) -> MpiResult<Schedule> {
        self.and_all(&st.reservations.offer(&st.contexts))
    }

    /// The next attempt's offer (`first`: the one after the proposal).
    fn retry(&mut self, st: &State, first: bool) -> MpiResult<Option<Schedule>> {
        if !first {
            self.attempt += 1;
        }
        if self.attempt >= MAX_ATTEMPTS {
            return Err(exhausted());
        }
        self.phase = Phase::Offer;
        self.offer(st).map(Some)
    }

    /// The agreed pair becomes the duplicate's.
    fn commit(&mut self, st: &mut State, pair: u32) -> MpiResult<()> {
        match (self.failed.take(), st.comms.get_mut(self.new)) {
            (None, Some(c)) => {
                c.pair = pair;
                let relaxed = c.info.get_bool(ALLOW_OVERTAKING).unwrap_or(false);
                st.engine.set_allow_overtaking(2 * pair, relaxed);
                crate::ulfm::born(st, self.new);
                Ok(())
            }
            (failed, _) => {
                // Freed before completion (erroneous), or its attributes failed.
                st.comms.remove(self.new);
                st.contexts.release(pair);
                failed.map_or(Ok(()), Err)
            }
        }
    }
}

impl Then for Idup {
    fn next(&mut self, st: &mut State, result: &[u8]) -> MpiResult<Option<Schedule>> {
        let words = bytes_to_words(result);
        match std::mem::replace(&mut self.phase, Phase::Offer) {
            Phase::Proposal(mine) => {
                if let Some(p) = mine {
                    st.reservations.release(p);
                }
                // Kept only if every participant proposed it, and reserved it meanwhile.
                match ContextPool::lowest(&words) {
                    Some(pair) => self.take(st, pair),
                    None => self.retry(st, true),
                }
            }
            Phase::Offer => match pick(&words, self.key, self.attempt) {
                Some(cand) => {
                    let yes = st.reservations.try_reserve(&st.contexts, cand);
                    self.phase = Phase::Vote(cand, yes);
                    self.and_all(&[if yes { u64::MAX } else { 0 }]).map(Some)
                }
                None => self.retry(st, false),
            },
            Phase::Vote(cand, yes) => {
                if yes {
                    st.reservations.release(cand);
                }
                if words.first() != Some(&u64::MAX) {
                    return self.retry(st, false);
                }
                self.take(st, cand)
            }
        }
    }
}

impl Idup {
    fn take(&mut self, st: &mut State, pair: u32) -> MpiResult<Option<Schedule>> {
        st.contexts.take(pair);
        self.commit(st, pair)?;
        Ok(None)
    }
}

impl Runtime {
    /// MPI_Comm_idup / MPI_Comm_idup_with_info (`None`: the parent's info):
    /// the new communicator's id and the request that completes it.
    pub fn comm_idup(&self, comm: CommId, info: Option<Info>) -> MpiResult<(CommId, Req)> {
        let attrs = self.copy_attrs(comm);
        let mut st = self.lock();
        let c = comm_ref(&st, comm)?;
        let (group, remote, rank, key, ctx) = (Arc::clone(&c.group), c.remote.clone(), c.rank, u64::from(c.pair), c.coll_ctx());
        let mut dup = Comm::new(Arc::clone(&group), remote.clone(), rank, PENDING, String::new());
        dup.errhandler = c.errhandler.clone();
        dup.info = info.map_or_else(|| c.info.clone(), |i| crate::info::comm_hints(&Info::default(), &i));
        // The schedules' peers: the local group, then the remote leader.
        let (peers, inter) = match &remote {
            None => (Arc::clone(&group), None),
            Some(r) => {
                let mut m = group.members().to_vec();
                m.extend(r.world(0));
                (Arc::new(Group::new(m)), Some((rank == 0).then_some(group.size())))
            }
        };
        let seq = next_seq(&mut st, comm)?;
        let failed = match attrs {
            Ok(a) => {
                dup.attrs = a;
                None
            }
            Err(e) => Some(e),
        };
        let new = st.comms.insert(dup);
        let key = (key << 32) | u64::from(seq);
        let (mine, proposal) = {
            let st = &mut *st;
            propose(&mut st.reservations, &st.contexts)
        };
        let job = Idup { new, key, rank, lsize: group.size(), inter, seq, attempt: 0, phase: Phase::Proposal(mine), failed };
        let first = job.and_all(&proposal).inspect_err(|_| {
            if let Some(p) = mine {
                st.reservations.release(p);
            }
        })?;
        let mut req = CollReq::new(Run::new(first), ctx, peers, vec![]);
        req.then = Some(Box::new(job));
        let r = st.reqs.insert(Entry::Coll(Box::new(req)));
        st.colls.track(r);
        advance(&mut st);
        self.progress(&mut st)?;
        Ok((new, r))
    }
}
