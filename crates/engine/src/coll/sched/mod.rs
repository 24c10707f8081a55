//! Collectives as schedules (issue 11, item 3; first step).
//!
//! A [`Schedule`] is a collective algorithm written down before it runs:
//! a list of rounds, each a set of sends and receives posted at once, then
//! local steps (copies, reductions) once all of them completed. A [`Run`]
//! advances one schedule without blocking over any [`Port`] (a nonblocking
//! point-to-point layer): each `progress` posts the next round when the
//! previous one is done and returns whether the collective finished. So a
//! nonblocking collective is "build, then `progress` from MPI_Test/Wait",
//! and a blocking one is the same followed by a bounded wait.
//!
//! Ordering: several schedules may be outstanding on one communicator.
//! Their messages carry [`tag`]`(family, seq)`, where `seq` is the
//! collective's number on the communicator; every rank starts a
//! communicator's collectives in the same order (MPI-3.1 §5.12), so the
//! numbers agree and the rounds of different schedules never match each
//! other's messages, whatever order they are progressed in. The numbered
//! tags are all >= 65536, above every tag of the blocking algorithms
//! (`coll/mod.rs`), so both may share the collective context.
//!
//! Builders: `build.rs` (barrier, bcast, allreduce), `sites.rs` (their
//! site-aware forms, chosen as the blocking calls choose), `reduce.rs` (reduce,
//! scan, exscan) and `direct.rs` (one round of blocks to and from peers:
//! gather(v), scatter(v), allgather(v), alltoall(v/w), neighbourhood
//! collectives). The runtime owns a `Run` per nonblocking or persistent
//! collective request (`crates/runtime/src/icoll/`).

mod bridge;
mod build;
mod direct;
mod fold;
mod reduce;
pub mod sites;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_more;
#[cfg(test)]
mod tests_sites;

pub use bridge::bridged_allreduce;
pub use build::{allreduce, barrier, bcast};
pub use direct::{direct, Block, LocalCopy};
pub use fold::fold;
pub use reduce::{reduce, scan};

use super::comm::CollError;
use crate::datatype::BasicType;
use crate::op::Op;

/// Distinct sequence numbers before tags repeat: at most this many
/// nonblocking collectives may be outstanding on one communicator.
pub const SEQ_SPAN: u32 = 0x4000;

/// The tag of family `base` (< 65536) in the collective numbered `seq`.
pub fn tag(base: i32, seq: u32) -> i32 {
    debug_assert!((0..0x1_0000).contains(&base));
    base | ((((seq % SEQ_SPAN) + 1) as i32) << 16)
}

/// Bytes `off..off + len` of the schedule's buffer `buf`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub buf: usize,
    pub off: usize,
    pub len: usize,
}

impl Span {
    pub fn whole(buf: usize, len: usize) -> Span {
        Span { buf, off: 0, len }
    }

    pub const EMPTY: Span = Span { buf: 0, off: 0, len: 0 };
}

/// One message of a round: to or from `peer`, with `tag`, of `span`.
#[derive(Debug, Clone, Copy)]
pub struct Msg {
    pub peer: usize,
    pub tag: i32,
    pub span: Span,
}

/// A local step after a round's messages completed.
#[derive(Debug, Clone, Copy)]
pub enum Local {
    Copy {
        from: Span,
        to: Span,
    },
    /// `inout = input op inout` over `count` elements (the schedule's op and type).
    Reduce {
        input: Span,
        inout: Span,
        count: usize,
    },
}

/// Sends and receives posted at once, then local steps.
#[derive(Debug, Default)]
pub struct Round {
    pub sends: Vec<Msg>,
    pub recvs: Vec<Msg>,
    pub then: Vec<Local>,
}

impl Round {
    fn is_empty(&self) -> bool {
        self.sends.is_empty() && self.recvs.is_empty() && self.then.is_empty()
    }
}

/// A collective algorithm as data: its buffers and its rounds. Buffer 0
/// holds the result (where there is one).
pub struct Schedule {
    pub(crate) bufs: Vec<Vec<u8>>,
    pub(crate) rounds: Vec<Round>,
    /// The reduction of `Local::Reduce` steps.
    pub(crate) reduction: Option<(Op, BasicType)>,
}

impl Schedule {
    pub fn new(bufs: Vec<Vec<u8>>) -> Schedule {
        Schedule { bufs, rounds: Vec::new(), reduction: None }
    }

    /// Appends `r` unless it does nothing (leaf ranks, one rank).
    pub fn push(&mut self, r: Round) {
        if !r.is_empty() {
            self.rounds.push(r);
        }
    }

    pub fn rounds(&self) -> usize {
        self.rounds.len()
    }

    fn bytes(&self, s: Span) -> Result<&[u8], CollError> {
        self.bufs.get(s.buf).and_then(|b| b.get(s.off..s.off + s.len)).ok_or_else(|| bad_span(s))
    }

    fn bytes_mut(&mut self, s: Span) -> Result<&mut [u8], CollError> {
        self.bufs.get_mut(s.buf).and_then(|b| b.get_mut(s.off..s.off + s.len)).ok_or_else(|| bad_span(s))
    }

    fn local(&mut self, l: Local) -> Result<(), CollError> {
        match l {
            Local::Copy { from, to } => {
                let v = self.bytes(from)?.to_vec();
                self.bytes_mut(to)?.copy_from_slice(&v);
            }
            Local::Reduce { input, inout, count } => {
                let (op, ty) = self.reduction.clone().ok_or_else(|| CollError::BadArgument("reduction step without an op".into()))?;
                let v = self.bytes(input)?.to_vec();
                op.apply(ty, count, &v, self.bytes_mut(inout)?)?;
            }
        }
        Ok(())
    }
}

fn bad_span(s: Span) -> CollError {
    CollError::BadArgument(format!("schedule step outside its buffers: {s:?}"))
}

/// A nonblocking point-to-point layer on the communicator's collective
/// context. Messages with the same (peer, tag) match in posting order.
pub trait Port {
    type Handle;
    /// Posts a send of `data` (the port owns it from now on).
    fn isend(&mut self, data: Vec<u8>, peer: usize, tag: i32) -> Result<Self::Handle, CollError>;
    /// Posts a receive of exactly `len` bytes.
    fn irecv(&mut self, len: usize, peer: usize, tag: i32) -> Result<Self::Handle, CollError>;
    /// `None` while pending; the received bytes (empty for a send) once done.
    fn test(&mut self, h: &mut Self::Handle) -> Result<Option<Vec<u8>>, CollError>;
}

/// One posted message of the current round: where a receive lands.
struct Posted<H> {
    handle: H,
    into: Option<(usize, Span)>,
    done: bool,
}

/// A schedule being executed.
pub struct Run<H> {
    sched: Schedule,
    round: usize,
    posted: Option<Vec<Posted<H>>>,
}

impl<H> Run<H> {
    pub fn new(sched: Schedule) -> Run<H> {
        Run { sched, round: 0, posted: None }
    }

    pub fn is_done(&self) -> bool {
        self.round >= self.sched.rounds.len()
    }

    /// Advances as far as possible without waiting; true once complete.
    pub fn progress<P: Port<Handle = H>>(&mut self, port: &mut P) -> Result<bool, CollError> {
        while !self.is_done() {
            if self.posted.is_none() {
                self.post(port)?;
            }
            let posted = self.posted.as_mut().expect("posted above");
            for p in posted.iter_mut().filter(|p| !p.done) {
                let Some(data) = port.test(&mut p.handle)? else { continue };
                p.done = true;
                if let Some((peer, span)) = p.into {
                    if data.len() != span.len {
                        return Err(CollError::LengthMismatch { peer, expected: span.len, got: data.len() });
                    }
                    self.sched.bytes_mut(span)?.copy_from_slice(&data);
                }
            }
            if !posted.iter().all(|p| p.done) {
                return Ok(false);
            }
            self.posted = None;
            let then = std::mem::take(&mut self.sched.rounds[self.round].then);
            for l in then {
                self.sched.local(l)?;
            }
            self.round += 1;
        }
        Ok(true)
    }

    fn post<P: Port<Handle = H>>(&mut self, port: &mut P) -> Result<(), CollError> {
        let r = &self.sched.rounds[self.round];
        let mut out = Vec::with_capacity(r.sends.len() + r.recvs.len());
        // Receives first, so a message to oneself could never be unexpected.
        for m in &r.recvs {
            out.push(Posted { handle: port.irecv(m.span.len, m.peer, m.tag)?, into: Some((m.peer, m.span)), done: false });
        }
        for m in &r.sends {
            let data = self.sched.bytes(m.span)?.to_vec();
            out.push(Posted { handle: port.isend(data, m.peer, m.tag)?, into: None, done: false });
        }
        self.posted = Some(out);
        Ok(())
    }

    /// The current round's posted messages that have not completed (what
    /// the schedule waits for now).
    pub fn pending(&self) -> Vec<&H> {
        self.posted.iter().flatten().filter(|p| !p.done).map(|p| &p.handle).collect()
    }

    /// Buffer 0 (the result, once done).
    pub fn result(&self) -> Option<&[u8]> {
        self.sched.bufs.first().map(|b| &b[..])
    }

    /// The schedule's buffers, once done (buffer 0 holds the result).
    pub fn into_bufs(self) -> Vec<Vec<u8>> {
        self.sched.bufs
    }
}
