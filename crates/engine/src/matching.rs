//! Message matching (MPI-3.1 §3.5, §3.8): the posted-receive queue, the
//! unexpected-message queue, and the ordering state that keeps MPI's
//! non-overtaking rule when a transport delivers different channels
//! independently.
//!
//! The rule kept here: every message carries a sequence number per
//! (source, destination, context). A receive with a specific tag can only be
//! matched by messages of that tag, which travel on one channel and so arrive
//! in order: it takes them as they come. A receive with `MPI_ANY_TAG` may only
//! take, from a given source, the lowest-numbered message not yet matched, and
//! only once every lower number has arrived; otherwise it waits. A message
//! that an earlier-posted `MPI_ANY_TAG` receive may not take yet can still be
//! taken by a later-posted receive naming its tag: in the equivalent in-order
//! execution the missing earlier message would satisfy the wildcard receive.
//!
//! With the communicator info key `mpi_assert_allow_overtaking=true` the
//! context is marked relaxed: only per-(context, source, tag) order is kept
//! and a wildcard receive takes whichever matching message arrived first.

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::collections::BTreeSet;
use wanmpi_transport::PeerId;
use wanmpi_wire::Envelope;

use crate::request::RequestId;

/// The matching key of a posted receive.
#[derive(Debug, Clone, Copy)]
pub struct Posted {
    pub id: RequestId,
    pub src: Option<PeerId>,
    pub ctx: u32,
    pub tag: Option<i32>,
}

impl Posted {
    fn accepts(&self, peer: PeerId, env: &Envelope) -> bool {
        self.ctx == env.ctx && self.src.is_none_or(|s| s == peer) && self.tag.is_none_or(|t| t == env.tag)
    }
}

/// A message that arrived before any receive matched it.
#[derive(Debug)]
pub struct Unexp {
    pub peer: PeerId,
    pub env: Envelope,
    /// Rendezvous (only the envelope came) or eager (data is buffered).
    pub rendezvous: bool,
    pub sync: bool,
    /// Sent against our WAN window: its length goes back once matched.
    pub windowed: bool,
}

/// Which sequence numbers of one (source, context) have arrived.
#[derive(Debug, Default)]
struct Order {
    /// Every number below this one has arrived.
    prefix: u64,
    /// Numbers above `prefix` that arrived early (other channels).
    ahead: BTreeSet<u64>,
}

impl Order {
    /// Records an arrival; false for a number that already arrived.
    fn mark(&mut self, seq: u64) -> bool {
        if seq == self.prefix {
            self.prefix += 1;
            while self.ahead.remove(&self.prefix) {
                self.prefix += 1;
            }
            true
        } else if seq > self.prefix {
            self.ahead.insert(seq)
        } else {
            false
        }
    }
}

#[derive(Default)]
pub struct Matcher {
    posted: Vec<Posted>,
    unexpected: Vec<Unexp>,
    order: HashMap<(PeerId, u32), Order>,
    relaxed: HashSet<u32>,
}

/// What an arrival did.
#[derive(Debug, PartialEq, Eq)]
pub enum Arrival {
    /// The message matches this posted receive (removed from the queue).
    Matched(RequestId),
    /// No receive can take it now: the caller must `add_unexpected` it.
    Unexpected,
    /// The sequence number was seen before: a protocol violation by the peer.
    Duplicate,
}

impl Matcher {
    /// Marks a context as relaxed (`mpi_assert_allow_overtaking`) or strict.
    pub fn set_relaxed(&mut self, ctx: u32, relaxed: bool) {
        if relaxed {
            self.relaxed.insert(ctx);
        } else {
            self.relaxed.remove(&ctx);
        }
    }

    /// May a wildcard-tag receive take this message now?
    fn in_order(&self, peer: PeerId, env: &Envelope) -> bool {
        if self.relaxed.contains(&env.ctx) {
            return true;
        }
        let all_before_arrived = self.order.get(&(peer, env.ctx)).is_some_and(|o| o.prefix > env.seq);
        all_before_arrived && !self.unexpected.iter().any(|u| u.peer == peer && u.env.ctx == env.ctx && u.env.seq < env.seq)
    }

    /// A message's envelope arrived: find the receive it goes to.
    pub fn arrive(&mut self, peer: PeerId, env: &Envelope) -> Arrival {
        if !self.order.entry((peer, env.ctx)).or_default().mark(env.seq) {
            return Arrival::Duplicate;
        }
        // Only a wildcard-tag receive needs the (queue-scanning) order check.
        let mut in_order = None;
        let pos =
            self.posted.iter().position(|p| p.accepts(peer, env) && (p.tag.is_some() || *in_order.get_or_insert_with(|| self.in_order(peer, env))));
        match pos {
            Some(i) => Arrival::Matched(self.posted.remove(i).id),
            None => Arrival::Unexpected,
        }
    }

    pub fn add_unexpected(&mut self, u: Unexp) {
        self.unexpected.push(u);
    }

    /// After an arrival filled a gap, unexpected messages from `peer` may have
    /// become takeable by waiting wildcard receives. Returns the new matches
    /// in sequence order.
    pub fn rematch(&mut self, peer: PeerId, ctx: u32) -> Vec<(Unexp, RequestId)> {
        let mut out = vec![];
        // Only a wildcard-tag receive ever waits for a gap to fill.
        if !self.posted.iter().any(|p| p.tag.is_none() && p.ctx == ctx) {
            return out;
        }
        loop {
            let lowest =
                self.unexpected.iter().enumerate().filter(|(_, u)| u.peer == peer && u.env.ctx == ctx).min_by_key(|(_, u)| u.env.seq).map(|(i, _)| i);
            let Some(ui) = lowest else { break };
            let env = self.unexpected[ui].env;
            if !self.in_order(peer, &env) {
                break;
            }
            let Some(pi) = self.posted.iter().position(|p| p.accepts(peer, &env)) else { break };
            let recv = self.posted.remove(pi).id;
            out.push((self.unexpected.remove(ui), recv));
        }
        out
    }

    /// Index of the unexpected message a receive (or probe) for
    /// (src, ctx, tag) would take now, following the rules above.
    fn find(&self, src: Option<PeerId>, ctx: u32, tag: Option<i32>) -> Option<usize> {
        self.unexpected.iter().position(|u| {
            u.env.ctx == ctx
                && src.is_none_or(|s| s == u.peer)
                && match tag {
                    Some(t) => t == u.env.tag,
                    None => self.in_order(u.peer, &u.env),
                }
        })
    }

    /// Posts a receive: returns the unexpected message it takes at once, or
    /// queues it.
    pub fn post(&mut self, p: Posted) -> Option<Unexp> {
        match self.find(p.src, p.ctx, p.tag) {
            Some(i) => Some(self.unexpected.remove(i)),
            None => {
                self.posted.push(p);
                None
            }
        }
    }

    /// MPI_Iprobe: the message a receive would take, left in place.
    pub fn probe(&self, src: Option<PeerId>, ctx: u32, tag: Option<i32>) -> Option<&Unexp> {
        self.find(src, ctx, tag).map(|i| &self.unexpected[i])
    }

    /// MPI_Improbe: the message a receive would take, removed from matching.
    pub fn take(&mut self, src: Option<PeerId>, ctx: u32, tag: Option<i32>) -> Option<Unexp> {
        self.find(src, ctx, tag).map(|i| self.unexpected.remove(i))
    }

    /// Removes a posted receive that has not matched (MPI_Cancel).
    pub fn cancel(&mut self, id: RequestId) -> bool {
        match self.posted.iter().position(|p| p.id == id) {
            Some(i) => {
                self.posted.remove(i);
                true
            }
            None => false,
        }
    }

    /// Posted receives naming `peer` as their source (to fail them when the
    /// peer is lost).
    pub fn remove_posted_from(&mut self, peer: PeerId) -> Vec<RequestId> {
        let (gone, kept): (Vec<Posted>, Vec<Posted>) = self.posted.drain(..).partition(|p| p.src == Some(peer));
        self.posted = kept;
        gone.into_iter().map(|p| p.id).collect()
    }

    /// Drops unexpected messages from `peer` that `doomed` picks (those that
    /// can never finish arriving once the peer is lost).
    pub fn drop_unexpected_from(&mut self, peer: PeerId, doomed: impl Fn(&Unexp) -> bool) -> usize {
        let before = self.unexpected.len();
        self.unexpected.retain(|u| u.peer != peer || !doomed(u));
        before - self.unexpected.len()
    }

    /// Whether the next message from `peer` on `ctx` would go to a new
    /// receive naming `peer` with nothing else to decide: no receive is
    /// posted, nothing from `peer` on `ctx` waits unmatched, and no later
    /// message of theirs came ahead of the next one (`Engine::express_take`).
    pub fn express_ready(&self, peer: PeerId, ctx: u32) -> bool {
        self.posted.is_empty()
            && self.order.get(&(peer, ctx)).is_none_or(|o| o.ahead.is_empty())
            && !self.unexpected.iter().any(|u| u.peer == peer && u.env.ctx == ctx)
    }

    /// Takes sequence number `seq` from `peer` on `ctx` for an express
    /// receive: only the next one in order (false leaves everything alone).
    pub fn express_mark(&mut self, peer: PeerId, ctx: u32, seq: u64) -> bool {
        let o = self.order.entry((peer, ctx)).or_default();
        if seq != o.prefix || !o.ahead.is_empty() {
            return false;
        }
        o.prefix += 1;
        true
    }

    pub fn posted_len(&self) -> usize {
        self.posted.len()
    }
    pub fn unexpected_len(&self) -> usize {
        self.unexpected.len()
    }
}

#[cfg(test)]
mod tests;
