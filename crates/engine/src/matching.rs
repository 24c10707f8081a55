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
//! goes to the earliest posted receive that accepts it or waits: a
//! later-posted receive naming its tag may not take it while an earlier
//! wildcard receive that accepts it waits for a gap (the standard's second
//! rule: in the in-order execution that wildcard could be left for this very
//! message, if the missing ones go elsewhere).
//!
//! A missing number can be *bound* ahead of its arrival: when the earliest
//! posted receives that could take anything from that source are wildcard-tag
//! receives naming the source, the missing messages will take exactly those,
//! one each in sequence order, whatever their tags (no other source can take
//! them, and each matches every message of the source). Such a receive is
//! matched to its missing number at once (it leaves the posted queue and can
//! no longer be cancelled), and the number counts as taken: a later wildcard
//! receive may then take the message that arrived beyond the gap. This keeps
//! the standard's rule and lets a program that pre-posts several `MPI_ANY_TAG`
//! receives from one source work on later messages while a lost one is
//! repaired on its own channel.
//!
//! With the communicator info key `mpi_assert_allow_overtaking=true` the
//! context is marked relaxed: only per-(context, source, tag) order is kept
//! and a wildcard receive takes whichever matching message arrived first.

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::collections::{BTreeMap, BTreeSet};
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
    /// Missing numbers already bound to the receive they will complete.
    bound: BTreeMap<u64, RequestId>,
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

    /// Has every number below `seq` arrived or been bound to a receive?
    fn settled_below(&self, seq: u64) -> bool {
        if self.prefix >= seq {
            return true;
        }
        let open = seq - self.prefix;
        let settled = self.ahead.range(self.prefix..seq).count() + self.bound.range(self.prefix..seq).count();
        settled as u64 == open
    }

    /// The lowest missing number at or above `from` below the highest
    /// arrival that is not bound yet.
    fn next_unbound_gap(&self, mut from: u64) -> Option<u64> {
        let last = *self.ahead.last()?;
        from = from.max(self.prefix);
        while from < last && (self.ahead.contains(&from) || self.bound.contains_key(&from)) {
            from += 1;
        }
        (from < last).then_some(from)
    }
}

#[derive(Default)]
pub struct Matcher {
    posted: Vec<Posted>,
    unexpected: Vec<Unexp>,
    order: HashMap<(PeerId, u32), Order>,
    relaxed: HashSet<u32>,
    /// Receives bound to a missing message ahead of its arrival (statistics).
    bound_ahead: u64,
    /// Some unexpected message may be accepted by a posted receive that
    /// could not take it yet: `rescan` has work.
    maybe_blocked: bool,
}

/// One (source, context)'s order state, held by an express receive while
/// it polls (`Matcher::express_slot`). Nothing else touches the matcher
/// meanwhile (the express receive holds the engine), so what made it
/// ready still holds.
pub struct ExpressSlot<'a>(&'a mut Order);

impl ExpressSlot<'_> {
    /// Takes sequence number `seq` when it is the next in order (false
    /// changes nothing).
    #[inline]
    pub fn mark(&mut self, seq: u64) -> bool {
        if seq != self.0.prefix {
            return false;
        }
        self.0.prefix += 1;
        true
    }
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
        let all_before_settled = self.order.get(&(peer, env.ctx)).is_some_and(|o| o.settled_below(env.seq));
        all_before_settled && !self.unexpected.iter().any(|u| u.peer == peer && u.env.ctx == env.ctx && u.env.seq < env.seq)
    }

    /// A message's envelope arrived: find the receive it goes to: the
    /// earliest posted receive that accepts it, if that one may take it now
    /// (a wildcard-tag receive only in order). A later receive may not take
    /// it past that one (the standard's second rule): it stays unexpected.
    pub fn arrive(&mut self, peer: PeerId, env: &Envelope) -> Arrival {
        let order = self.order.entry((peer, env.ctx)).or_default();
        if !order.mark(env.seq) {
            return Arrival::Duplicate;
        }
        if let Some(id) = order.bound.remove(&env.seq) {
            return Arrival::Matched(id);
        }
        // A message beyond a gap may go to a later receive once the earlier
        // ones are bound to the gap; one below every gap is matched first
        // (`rescan` binds what its receive leaves).
        if order.next_unbound_gap(0).is_some_and(|gap| gap < env.seq) {
            self.bind_gaps(peer, env.ctx);
        }
        match self.posted.iter().position(|p| p.accepts(peer, env)) {
            Some(i) if self.posted[i].tag.is_some() || self.in_order(peer, env) => Arrival::Matched(self.posted.remove(i).id),
            Some(_) => {
                self.maybe_blocked = true;
                Arrival::Unexpected
            }
            None => Arrival::Unexpected,
        }
    }

    /// Binds missing numbers from (peer, ctx) to the posted receives that
    /// must take them (see the module's doc): walks the receives that could
    /// take a message of that source in posting order, binding each
    /// wildcard-tag receive naming the source to the next missing number,
    /// and stops at the first receive whose match cannot be known yet (one
    /// naming a tag, or any source) or at an unmatched message that arrived
    /// before the gap (the walk's receives belong to it first).
    fn bind_gaps(&mut self, peer: PeerId, ctx: u32) {
        if self.relaxed.contains(&ctx) {
            return;
        }
        let Some(order) = self.order.get_mut(&(peer, ctx)) else { return };
        let Some(mut gap) = order.next_unbound_gap(0) else { return };
        let mut i = 0;
        while i < self.posted.len() {
            if self.unexpected.iter().any(|u| u.peer == peer && u.env.ctx == ctx && u.env.seq < gap) {
                return;
            }
            let p = self.posted[i];
            if p.ctx != ctx || p.src.is_some_and(|s| s != peer) {
                i += 1;
                continue;
            }
            if p.src != Some(peer) || p.tag.is_some() {
                return;
            }
            order.bound.insert(gap, self.posted.remove(i).id);
            self.bound_ahead += 1;
            match order.next_unbound_gap(gap + 1) {
                Some(next) => gap = next,
                None => return,
            }
        }
    }

    pub fn add_unexpected(&mut self, u: Unexp) {
        self.unexpected.push(u);
    }

    /// After an arrival or a cancel, unexpected messages that a posted
    /// receive accepted but could not take (a wildcard-tag receive waiting
    /// for a gap, and any receive posted behind it) may have become
    /// takeable. Returns the new matches, earliest first. Costs nothing
    /// unless some message was held back that way.
    pub fn rescan(&mut self) -> Vec<(Unexp, RequestId)> {
        let mut out = vec![];
        if !self.maybe_blocked {
            return out;
        }
        loop {
            if let Some((ui, pi)) = self.first_takeable() {
                let recv = self.posted.remove(pi).id;
                out.push((self.unexpected.remove(ui), recv));
            } else if !self.bind_all_gaps() {
                break;
            }
        }
        self.maybe_blocked = self.unexpected.iter().any(|u| self.posted.iter().any(|p| p.accepts(u.peer, &u.env)));
        out
    }

    /// An unexpected message and the receive that takes it now: the
    /// earliest posted receive accepting the message, if it may take it.
    fn first_takeable(&self) -> Option<(usize, usize)> {
        if self.posted.is_empty() {
            return None;
        }
        // `in_order` for every candidate, in one pass: only the lowest
        // unexpected number of a (source, context) can be in order.
        let mut lowest: HashMap<(PeerId, u32), u64> = HashMap::default();
        for u in &self.unexpected {
            let l = lowest.entry((u.peer, u.env.ctx)).or_insert(u.env.seq);
            *l = (*l).min(u.env.seq);
        }
        let in_order = |u: &Unexp| {
            self.relaxed.contains(&u.env.ctx)
                || (lowest[&(u.peer, u.env.ctx)] == u.env.seq && self.order.get(&(u.peer, u.env.ctx)).is_some_and(|o| o.settled_below(u.env.seq)))
        };
        self.unexpected.iter().enumerate().find_map(|(ui, u)| {
            let pi = self.posted.iter().position(|p| p.accepts(u.peer, &u.env))?;
            (self.posted[pi].tag.is_some() || in_order(u)).then_some((ui, pi))
        })
    }

    /// Binds the gaps of every (source, context) that has one; true if a
    /// receive was bound.
    fn bind_all_gaps(&mut self) -> bool {
        let before = self.bound_ahead;
        let gapped: Vec<(PeerId, u32)> = self.order.iter().filter(|(_, o)| !o.ahead.is_empty()).map(|(k, _)| *k).collect();
        for (peer, ctx) in gapped {
            self.bind_gaps(peer, ctx);
        }
        self.bound_ahead != before
    }

    /// Index of the unexpected message a receive (or probe) for
    /// (src, ctx, tag) would take now, following the rules above.
    fn find(&self, src: Option<PeerId>, ctx: u32, tag: Option<i32>) -> Option<usize> {
        self.unexpected.iter().position(|u| {
            u.env.ctx == ctx
                && src.is_none_or(|s| s == u.peer)
                && match tag {
                    // Held back by an earlier receive that accepts it (a
                    // wildcard waiting for a gap): not past that one.
                    Some(t) => t == u.env.tag && !self.posted.iter().any(|p| p.accepts(u.peer, &u.env)),
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
                if !self.maybe_blocked {
                    self.maybe_blocked = self.unexpected.iter().any(|u| p.accepts(u.peer, &u.env));
                }
                if let (Some(src), None) = (p.src, p.tag) {
                    if self.order.get(&(src, p.ctx)).is_some_and(|o| !o.ahead.is_empty()) {
                        self.bind_gaps(src, p.ctx);
                    }
                }
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

    /// Removes a posted receive that has not matched (MPI_Cancel). A
    /// receive bound to a missing message is matched: false.
    pub fn cancel(&mut self, id: RequestId) -> bool {
        match self.posted.iter().position(|p| p.id == id) {
            Some(i) => {
                self.posted.remove(i);
                // It may have held back a message a later receive accepts.
                self.maybe_blocked |= !self.unexpected.is_empty();
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
        let mut ids: Vec<RequestId> = gone.into_iter().map(|p| p.id).collect();
        for (_, o) in self.order.iter_mut().filter(|((p, _), _)| *p == peer) {
            ids.extend(std::mem::take(&mut o.bound).into_values());
        }
        ids
    }

    /// Posted receives (not matched yet) on context `ctx`: to fail them when
    /// their communicator is revoked (ULFM).
    pub fn remove_posted_in(&mut self, ctx: u32) -> Vec<RequestId> {
        let (gone, kept): (Vec<Posted>, Vec<Posted>) = self.posted.drain(..).partition(|p| p.ctx == ctx);
        self.posted = kept;
        self.maybe_blocked |= !gone.is_empty() && !self.unexpected.is_empty();
        gone.into_iter().map(|p| p.id).collect()
    }

    /// Drops unexpected messages from `peer` that `doomed` picks (those that
    /// can never finish arriving once the peer is lost).
    pub fn drop_unexpected_from(&mut self, peer: PeerId, doomed: impl Fn(&Unexp) -> bool) -> usize {
        let before = self.unexpected.len();
        self.unexpected.retain(|u| u.peer != peer || !doomed(u));
        before - self.unexpected.len()
    }

    /// The order state of (`peer`, `ctx`) for an express receive, when the
    /// next message from `peer` on `ctx` would go to a new receive naming
    /// `peer` with nothing else to decide: no receive is posted, nothing
    /// from `peer` on `ctx` waits unmatched, and no later message of theirs
    /// came ahead of the next one (`Engine::express_rx`). One lookup, made
    /// before the receive polls, so that taking the message needs none.
    pub fn express_slot(&mut self, peer: PeerId, ctx: u32) -> Option<ExpressSlot<'_>> {
        if !self.posted.is_empty() || self.unexpected.iter().any(|u| u.peer == peer && u.env.ctx == ctx) {
            return None;
        }
        let o = self.order.entry((peer, ctx)).or_default();
        o.ahead.is_empty().then_some(ExpressSlot(o))
    }

    /// How many receives were bound to a missing message ahead of its
    /// arrival.
    pub fn bound_ahead(&self) -> u64 {
        self.bound_ahead
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
