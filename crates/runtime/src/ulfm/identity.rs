//! Which communicator a revoke (or an agreement) means, across processes.
//!
//! A context pair alone does not say: a pair is reused once its
//! communicator is freed, two disjoint communicators may hold the same
//! pair, and a revoke relayed through mpirun can reach a member before it
//! has finished creating the communicator (MPI_Comm_dup returns at the
//! revoker first; dropping the early revoke left that member blocked in a
//! receive for good) or after it freed it. So a communicator is named by
//! its pair, a hash of its member set, and its incarnation: how many
//! communicators with that pair and set this process created before. The
//! incarnation is alike at every member, because each of those
//! communicators was created collectively by exactly those members.
//!
//! A revoke for an incarnation not created here yet waits in `early` and
//! takes effect when it is; one for an older incarnation is stale and
//! dropped.

use std::collections::{HashMap, HashSet};

use crate::comm::{Comm, CommId};
use crate::runtime::State;

use super::notices::mark_revoked;

/// A communicator's name across processes (see the module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct CommName {
    pair: u32,
    set: u64,
    incarnation: u32,
}

impl CommName {
    pub(crate) fn render(&self) -> String {
        format!("{}.{:x}.{}", self.pair, self.set, self.incarnation)
    }

    pub(crate) fn parse(s: &str) -> Option<CommName> {
        let mut w = s.split('.');
        let pair = w.next()?.parse().ok()?;
        let set = u64::from_str_radix(w.next()?, 16).ok()?;
        let incarnation = w.next()?.parse().ok()?;
        w.next().is_none().then_some(CommName { pair, set, incarnation })
    }
}

/// FNV-1a over the sorted world ranks of both groups: the same at every
/// member, and on both sides of an inter-communicator.
fn member_set(c: &Comm) -> u64 {
    let mut m: Vec<u32> = c.group.members().to_vec();
    if let Some(r) = &c.remote {
        m.extend_from_slice(r.members());
    }
    m.sort_unstable();
    m.iter().flat_map(|r| r.to_le_bytes()).fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

/// What this process created and what was revoked before it was.
#[derive(Default)]
pub(crate) struct Names {
    /// Per (context pair, member-set hash): communicators created so far.
    incarnations: HashMap<(u32, u64), u32>,
    /// Revokes of communicators not created here yet.
    early: HashSet<CommName>,
}

impl Names {
    /// A communicator with `pair` and member-set hash `set` is created:
    /// its name, and whether a revoke for it came first.
    fn create(&mut self, pair: u32, set: u64) -> (CommName, bool) {
        let next = self.incarnations.entry((pair, set)).or_insert(0);
        let name = CommName { pair, set, incarnation: *next };
        *next += 1;
        (name, self.early.remove(&name))
    }

    /// A revoke for `name`, which no live communicator here has: kept
    /// if that communicator is still to come, else dropped (stale).
    fn keep_if_early(&mut self, name: CommName) {
        let created = self.incarnations.get(&(name.pair, name.set)).copied().unwrap_or(0);
        if name.incarnation >= created {
            self.early.insert(name);
        }
    }
}

/// `comm`'s name, once its pair is final.
pub(crate) fn name_of(st: &State, comm: CommId) -> Option<CommName> {
    let c = st.comms.get(comm)?;
    Some(CommName { pair: c.pair, set: member_set(c), incarnation: c.incarnation })
}

/// Gives `comm` (its pair just became final) its incarnation, and applies
/// a revoke that came before it existed here.
pub(crate) fn born(st: &mut State, comm: CommId) {
    let Some(c) = st.comms.get_mut(comm) else { return };
    let (name, early) = st.ulfm.names.create(c.pair, member_set(c));
    c.incarnation = name.incarnation;
    if early {
        mark_revoked(st, comm, "revoked by another member (MPIX_Comm_revoke) before it was created here");
    }
}

/// Another member revoked the communicator named `name`.
pub(crate) fn revoked_elsewhere(st: &mut State, name: &str) {
    let Some(name) = CommName::parse(name) else { return };
    match st.comms.find_pair(name.pair) {
        Some(id) if name_of(st, id) == Some(name) => mark_revoked(st, id, "revoked by another member (MPIX_Comm_revoke)"),
        _ => st.ulfm.names.keep_if_early(name),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_refuse_junk() {
        let n = CommName { pair: 7, set: 0xdead_beef_0011, incarnation: 3 };
        assert_eq!(CommName::parse(&n.render()), Some(n));
        for bad in ["", "7", "7.ff", "7.ff.3.1", "x.ff.3", "7.zz.3", "7.ff.-1"] {
            assert_eq!(CommName::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn a_revoke_before_the_creation_waits_for_it_and_a_stale_one_is_dropped() {
        let mut n = Names::default();
        let (first, early) = n.create(4, 0xab);
        assert_eq!((first.incarnation, early), (0, false));
        // The revoker freed its first (4, 0xab) and made a second; its revoke
        // of the second comes here before this process created it.
        let second = CommName { incarnation: 1, ..first };
        n.keep_if_early(second);
        // A revoke of the first, which this process freed without seeing it: stale.
        n.keep_if_early(first);
        let (made, early) = n.create(4, 0xab);
        assert_eq!((made, early), (second, true), "the early revoke takes effect on creation");
        let (third, early) = n.create(4, 0xab);
        assert_eq!((third.incarnation, early), (2, false), "and only on that communicator");
        // Another member set with the same pair counts apart.
        assert_eq!(n.create(4, 0xcd).0.incarnation, 0);
    }
}
