//! Fault-tolerant agreements, decided by the key/value service.
//!
//! ULFM's `MPIX_Comm_agree` and `MPIX_Comm_shrink` need every surviving
//! member of a communicator to leave with the same value and the same set
//! of failed members, even when members die during the call. We let the
//! launcher decide: it outlives every rank (if mpirun dies the job ends),
//! it learns of every rank's death from the process itself (its launch
//! agent reports the exit), and it is the one place that sees every
//! contribution. So the algorithm is a plain gather at a coordinator that
//! cannot fail:
//!
//! 1. each member sends `agree <id> <members> <acked> <value>` (no reply);
//! 2. the agreement is over once every member has either sent its part or
//!    is known dead; then the service pushes the same `agreed` line to every
//!    participant: the AND of the values sent, the members dead at that
//!    moment, and whether every participant had acknowledged all of those.
//!
//! A death after the decision does not change it (ULFM allows a shrunk
//! communicator to hold a process that failed after the agreement). A member
//! that neither sends nor dies (hung) holds the agreement open: the rank's
//! wait is bounded by its own bootstrap timeout. The cost is one line per
//! member to mpirun and back, O(n) at one process: simple over fast.

use crate::push::Push;
use std::collections::{BTreeSet, HashMap};

/// One agreement's identity: the id its members give it (context pair and
/// sequence number, unique within each member) and the members, since two
/// disjoint communicators may use the same pair.
type Key = (String, Vec<u32>);

#[derive(Default)]
pub struct Agreements {
    open: HashMap<Key, Open>,
}

struct Open {
    value: Option<Vec<u8>>,
    joined: BTreeSet<u32>,
    /// Per participant, the failures it had acknowledged.
    acked: Vec<BTreeSet<u32>>,
}

/// A finished agreement: who to tell, and what.
#[derive(Debug, PartialEq, Eq)]
pub struct Decided {
    pub tell: Vec<u32>,
    pub push: Push,
}

impl Agreements {
    /// `rank` joins agreement `id` over `members` with `value`, having
    /// acknowledged the failures `acked`. Returns the decision if this
    /// completed it.
    pub fn join(&mut self, rank: u32, id: &str, members: Vec<u32>, acked: Vec<u32>, value: &[u8], dead: &BTreeSet<u32>) -> Option<Decided> {
        let key = (id.to_string(), members);
        let o = self.open.entry(key.clone()).or_insert_with(|| Open { value: None, joined: BTreeSet::new(), acked: Vec::new() });
        if !o.joined.insert(rank) {
            return None; // said twice: the first counts
        }
        o.value = Some(match o.value.take() {
            None => value.to_vec(),
            // Bytes one side lacks count as zero: an AND with nothing.
            Some(v) => (0..v.len().max(value.len())).map(|i| v.get(i).copied().unwrap_or(0) & value.get(i).copied().unwrap_or(0)).collect(),
        });
        o.acked.push(acked.into_iter().collect());
        self.try_finish(&key, dead)
    }

    /// After a death: the agreements it completes.
    pub fn on_death(&mut self, dead: &BTreeSet<u32>) -> Vec<Decided> {
        let keys: Vec<Key> = self.open.keys().cloned().collect();
        keys.iter().filter_map(|k| self.try_finish(k, dead)).collect()
    }

    fn try_finish(&mut self, key: &Key, dead: &BTreeSet<u32>) -> Option<Decided> {
        let o = self.open.get(key)?;
        if !key.1.iter().all(|m| o.joined.contains(m) || dead.contains(m)) {
            return None;
        }
        let o = self.open.remove(key)?;
        let failed: Vec<u32> = key.1.iter().copied().filter(|m| dead.contains(m)).collect();
        let uniform = o.acked.iter().all(|a| failed.iter().all(|f| a.contains(f)));
        let tell = o.joined.iter().copied().filter(|r| !dead.contains(r)).collect();
        Some(Decided { tell, push: Push::Agreed { id: key.0.clone(), value: o.value.unwrap_or_default(), dead: failed, uniform } })
    }

    #[cfg(test)]
    pub fn open(&self) -> usize {
        self.open.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dead(v: &[u32]) -> BTreeSet<u32> {
        v.iter().copied().collect()
    }

    #[test]
    fn ends_when_every_member_spoke_and_ands_the_values() {
        let mut a = Agreements::default();
        let m = vec![0, 1, 2];
        assert_eq!(a.join(0, "4.0", m.clone(), vec![], &[0b1110], &dead(&[])), None);
        assert_eq!(a.join(2, "4.0", m.clone(), vec![], &[0b0111], &dead(&[])), None);
        let d = a.join(1, "4.0", m, vec![], &[0b1111], &dead(&[])).expect("complete");
        assert_eq!(d.tell, vec![0, 1, 2]);
        assert_eq!(d.push, Push::Agreed { id: "4.0".into(), value: vec![0b0110], dead: vec![], uniform: true });
        assert_eq!(a.open(), 0);
    }

    #[test]
    fn a_death_during_the_agreement_ends_it_with_the_same_answer_for_all() {
        let mut a = Agreements::default();
        let m = vec![0, 1, 2, 3];
        assert_eq!(a.join(0, "x", m.clone(), vec![], &[1], &dead(&[])), None);
        assert_eq!(a.join(3, "x", m.clone(), vec![], &[1], &dead(&[])), None);
        // Rank 1 dies before joining; rank 2 joins knowing (acked) it:
        // every member spoke or is dead.
        let d = a.join(2, "x", m, vec![1], &[1], &dead(&[1])).expect("complete");
        assert_eq!(d.tell, vec![0, 2, 3]);
        assert_eq!(d.push, Push::Agreed { id: "x".into(), value: vec![1], dead: vec![1], uniform: false }, "0 and 3 had not acked 1");
        assert!(a.on_death(&dead(&[1])).is_empty(), "decided once");
    }

    #[test]
    fn the_last_death_completes_and_unacknowledged_failures_are_reported() {
        let mut a = Agreements::default();
        let m = vec![0, 1, 2];
        assert_eq!(a.join(0, "y", m.clone(), vec![], &[1], &dead(&[])), None);
        assert_eq!(a.join(2, "y", m.clone(), vec![], &[1], &dead(&[])), None);
        let d = a.on_death(&dead(&[1]));
        assert_eq!(d.len(), 1);
        assert_eq!(d[0].tell, vec![0, 2]);
        assert_eq!(d[0].push, Push::Agreed { id: "y".into(), value: vec![1], dead: vec![1], uniform: false });
        // Same communicator pair, other members: another agreement.
        assert_eq!(a.join(0, "y", vec![0, 5], vec![], &[1], &dead(&[1])), None);
        assert_eq!(a.open(), 1);
    }

    #[test]
    fn a_participant_dying_after_joining_is_in_the_failed_set_and_not_told() {
        let mut a = Agreements::default();
        let m = vec![0, 1, 2];
        assert_eq!(a.join(1, "z", m.clone(), vec![], &[3], &dead(&[])), None);
        assert_eq!(a.join(0, "z", m.clone(), vec![1], &[1], &dead(&[1])), None);
        let d = a.join(2, "z", m, vec![1], &[1], &dead(&[1])).expect("complete");
        assert_eq!(d.tell, vec![0, 2]);
        assert_eq!(d.push, Push::Agreed { id: "z".into(), value: vec![1], dead: vec![1], uniform: false }, "rank 1 had not acked itself");
    }
}
