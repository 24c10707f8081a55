//! Nonblocking and persistent collectives (MPI-4.0 §§5.12, 5.13): a
//! request that owns a schedule (`wanmpi_engine::coll::sched`) and where
//! its result goes in user memory. Every progress step advances the
//! schedules of all such requests (`advance`), so a collective moves while
//! the program calls other MPI functions, and with the progress thread,
//! while it computes. Starting one is `start.rs`.
//!
//! Order: each communicator numbers its nonblocking collectives
//! (`Comm::coll_seq`); every rank starts them in the same order (as MPI
//! requires), so the numbers, carried in the schedules' tags, agree, and
//! collectives outstanding together never take each other's messages.
//! Blocking collectives use tags below every schedule's, so the two kinds
//! may be mixed on one communicator.

mod blocks;
mod neighbor;
mod port;
mod sink;
mod start;

use std::sync::Arc;

use wanmpi_engine::coll::sched::Run;
use wanmpi_engine::{ErrorClass, MpiError};

use crate::coll_adapter::coll_error;
use crate::group::Group;
use crate::reqtable::{Entry, Req, Status};
use crate::runtime::State;

pub use blocks::{equal_blocks, WBuf};
pub use neighbor::Neighbors;
pub use port::{EnginePort, Handle};
pub use sink::Sink;
pub use start::Plan;
pub(crate) use start::{launch, next_seq};

/// A collective in flight.
pub struct CollReq {
    run: Run<Handle>,
    ctx: u32,
    group: Arc<Group>,
    /// Where bytes of the result (buffer 0) go once the schedule is done.
    sinks: Vec<(std::ops::Range<usize>, Sink)>,
    /// What follows the schedule, for operations of several schedules
    /// whose later ones depend on earlier results (`idup.rs`).
    pub then: Option<Box<dyn Then>>,
    /// MPI_Request_free was called: drop the request once done.
    pub freed: bool,
}

/// The continuation of a collective made of schedules run one after another.
pub trait Then: Send {
    /// The current schedule finished with `result` (its buffer 0): the
    /// next schedule, or `None` when the operation is complete.
    fn next(&mut self, st: &mut State, result: &[u8]) -> wanmpi_engine::MpiResult<Option<wanmpi_engine::coll::sched::Schedule>>;
}

/// The requests whose schedules progress advances.
#[derive(Default)]
pub struct Colls {
    active: Vec<Req>,
}

impl Colls {
    pub fn is_empty(&self) -> bool {
        self.active.is_empty()
    }
    pub fn track(&mut self, r: Req) {
        self.active.push(r);
    }
}

/// The schedule inside `e`, if it is a collective still running.
fn running(e: &mut Entry) -> Option<&mut Box<CollReq>> {
    match e {
        Entry::Coll(c) => Some(c),
        Entry::Persistent { active: Some(inner), .. } => running(inner),
        _ => None,
    }
}

/// Advances one collective; once its schedule finished (or failed) the
/// result is in user memory and the entry is `Done`.
fn step(st: &mut State, r: Req) -> bool {
    loop {
        let State { reqs, engine, ulfm, .. } = &mut *st;
        let Some(e) = reqs.get_mut(r) else { return true };
        let Some(c) = running(e) else { return true };
        let outcome = {
            let mut port = EnginePort { engine, group: &c.group, ctx: c.ctx };
            c.run.progress(&mut port)
        };
        let status = match outcome {
            Ok(false) if !ulfm.any_failed() => return false,
            // A member died: a schedule left waiting only for receives
            // nobody will send (ULFM: fail, do not hang).
            Ok(false) => {
                let group = Arc::clone(&c.group);
                if !crate::ulfm::coll::member_failed(st, &group) {
                    return false;
                }
                let State { reqs, engine, .. } = &mut *st;
                let Some(c) = reqs.get_mut(r).and_then(running) else { return true };
                if !crate::ulfm::coll::withdraw_schedule(engine, &c.run.pending()) {
                    return false;
                }
                Status {
                    error: Some(MpiError::new(ErrorClass::ProcFailed, "a member of the communicator failed during the collective")),
                    ..Status::empty()
                }
            }
            Ok(true) => match c.then.take() {
                None => {
                    c.deliver();
                    Status::empty()
                }
                Some(mut then) => {
                    let result = c.run.result().unwrap_or_default().to_vec();
                    match then.next(st, &result) {
                        Ok(Some(s)) => {
                            // The next schedule: post its first round now.
                            if let Some(c) = st.reqs.get_mut(r).and_then(running) {
                                c.run = Run::new(s);
                                c.then = Some(then);
                            }
                            continue;
                        }
                        Ok(None) => Status::empty(),
                        Err(e) => Status { error: Some(e), ..Status::empty() },
                    }
                }
            },
            Err(e) => Status { error: Some(coll_error(e)), ..Status::empty() },
        };
        let Some(e) = st.reqs.get_mut(r) else { return true };
        let freed = running(e).is_some_and(|c| c.freed);
        finish(e, status);
        if freed {
            st.reqs.remove(r);
        }
        return true;
    }
}

/// Replaces the running collective inside `e` by its completion.
fn finish(e: &mut Entry, status: Status) {
    match e {
        Entry::Persistent { active, .. } => {
            if let Some(inner) = active {
                finish(inner, status);
            }
        }
        other => *other = Entry::Done(status),
    }
}

/// Advances every running collective (a progress step's part). A
/// collective that completed counts as activity, so waiting calls look.
pub fn advance(st: &mut State) {
    let mut active = std::mem::take(&mut st.colls.active);
    let before = active.len();
    active.retain(|&r| !step(st, r));
    if active.len() < before {
        st.activity += 1;
    }
    // Collectives started while these advanced were pushed meanwhile.
    active.append(&mut st.colls.active);
    st.colls.active = active;
}

impl CollReq {
    pub fn new(run: Run<Handle>, ctx: u32, group: Arc<Group>, sinks: Vec<(std::ops::Range<usize>, Sink)>) -> CollReq {
        CollReq { run, ctx, group, sinks, then: None, freed: false }
    }

    /// Writes the result into user memory.
    fn deliver(&mut self) {
        let Some(out) = self.run.result() else { return };
        for (range, sink) in std::mem::take(&mut self.sinks) {
            if let Some(bytes) = out.get(range) {
                sink.fill(bytes);
            }
        }
    }
}

/// An error starting a collective, in MPI terms.
pub fn start_error(e: wanmpi_engine::coll::CollError) -> MpiError {
    coll_error(e)
}
