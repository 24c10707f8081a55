//! Agreeing a new communicator's context pair so that agreements may
//! overlap (MPI_Comm_idup, and blocking creations while idups are pending,
//! in any order at different members) without two of them taking the same
//! pair, and without one waiting on another.
//!
//! First, a *proposal*: every participant proposes the lowest pair it has
//! free and not reserved, and reserves it; if the AND over all participants
//! keeps it (everyone proposed the same pair, the usual case when ranks
//! create their communicators in the same order), it is taken: one
//! reduction. Otherwise, attempts in two phases: (1) every participant
//! offers its free pairs less the reserved ones; the AND of the offers
//! names a candidate, picked by the agreement's key and the attempt, so two
//! agreements that collided do not collide again; (2) every participant
//! votes yes only if the candidate is still free and not reserved here, and
//! reserves it while the vote runs; the AND of the votes commits the pair
//! everywhere or sends everyone to the next attempt. Every participant sees
//! the same results, so all commit or retry together. A reservation is one
//! pair, held for one reduction: another agreement meanwhile just avoids
//! that pair, so none waits on another.
//!
//! The blocking calls run this here (`Runtime::agree`); the nonblocking
//! MPI_Comm_idup runs it as schedules (`idup.rs`).

use wanmpi_engine::{ErrorClass, MpiError, MpiResult};

use crate::context::{ContextPool, PAIRS, WORDS};
use crate::runtime::Runtime;

/// Attempts after the proposal before an agreement gives up (each is two
/// reductions).
pub const MAX_ATTEMPTS: u32 = 1000;

/// The pairs this process has reserved for running votes.
#[derive(Debug)]
pub struct Reservations {
    held: [u64; WORDS],
}

impl Default for Reservations {
    fn default() -> Self {
        Reservations { held: [0; WORDS] }
    }
}

impl Reservations {
    /// This process's offer: free pairs not reserved for a vote.
    pub fn offer(&self, pool: &ContextPool) -> [u64; WORDS] {
        let mut m = pool.mask();
        for (w, h) in m.iter_mut().zip(&self.held) {
            *w &= !h;
        }
        m
    }

    /// Reserves `pair` for a vote if it is free and nobody holds it; the
    /// vote is yes exactly when this succeeded.
    pub fn try_reserve(&mut self, pool: &ContextPool, pair: u32) -> bool {
        let (w, bit) = (pair as usize / 64, 1u64 << (pair % 64));
        let ok = (pair as usize) < PAIRS && pool.mask()[w] & bit != 0 && self.held[w] & bit == 0;
        if ok {
            self.held[w] |= bit;
        }
        ok
    }

    pub fn release(&mut self, pair: u32) {
        if (pair as usize) < PAIRS {
            self.held[pair as usize / 64] &= !(1u64 << (pair % 64));
        }
    }
}

/// This process's proposal: its lowest pair free and not reserved, reserved
/// now (`None`: nothing free), and as a mask of that one pair.
pub fn propose(r: &mut Reservations, pool: &ContextPool) -> (Option<u32>, [u64; WORDS]) {
    let mut mask = [0u64; WORDS];
    let Some(p) = ContextPool::lowest(&r.offer(pool)) else { return (None, mask) };
    r.try_reserve(pool, p);
    mask[p as usize / 64] = 1 << (p % 64);
    (Some(p), mask)
}

/// The candidate of an agreed mask: the lowest pair at attempt 0, later a
/// pair chosen by `key` and `attempt` (the same at every participant).
pub fn pick(mask: &[u64], key: u64, attempt: u32) -> Option<u32> {
    let n: u32 = mask.iter().map(|w| w.count_ones()).sum();
    if n == 0 {
        return None;
    }
    if attempt == 0 {
        return ContextPool::lowest(mask);
    }
    // splitmix64 of (key, attempt): any spread will do, it must only be deterministic.
    let mut z = key ^ (u64::from(attempt) << 32) ^ 0x9e37_79b9_7f4a_7c15;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    let mut k = ((z ^ (z >> 31)) % u64::from(n)) as u32;
    for (i, w) in mask.iter().enumerate() {
        if k < w.count_ones() {
            let mut w = *w;
            for _ in 0..k {
                w &= w - 1;
            }
            return Some(i as u32 * 64 + w.trailing_zeros());
        }
        k -= w.count_ones();
    }
    None
}

pub fn words_to_bytes(m: &[u64]) -> Vec<u8> {
    m.iter().flat_map(|w| w.to_le_bytes()).collect()
}

pub fn bytes_to_words(b: &[u8]) -> Vec<u64> {
    b.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes"))).collect()
}

/// The error of an agreement that found no pair.
pub fn exhausted() -> MpiError {
    MpiError::new(
        ErrorClass::Intern,
        format!("no communicator context agreed after {MAX_ATTEMPTS} attempts (too many communicators alive, or creations racing; free some)"),
    )
}

/// The AND of every participant's words (an allreduce with MPI_BAND over
/// all participants of an agreement, however they are connected).
pub type AndAll<'a> = dyn FnMut(&[u64]) -> MpiResult<Vec<u64>> + 'a;

impl Runtime {
    /// Agrees a context pair with the other participants (blocking) and
    /// takes it. `key` must be the same at every participant.
    pub(crate) fn agree(&self, key: u64, and_all: &mut AndAll<'_>) -> MpiResult<u32> {
        let (mine, proposal) = {
            let mut st = self.lock();
            let st = &mut *st;
            propose(&mut st.reservations, &st.contexts)
        };
        let agreed = and_all(&proposal);
        {
            let mut st = self.lock();
            if let Some(p) = mine {
                st.reservations.release(p);
            }
            // Kept only if every participant proposed it, and reserved it meanwhile.
            if let Some(pair) = ContextPool::lowest(&agreed?) {
                st.contexts.take(pair);
                return Ok(pair);
            }
        }
        for attempt in 0..MAX_ATTEMPTS {
            let offer = {
                let st = self.lock();
                st.reservations.offer(&st.contexts)
            };
            let Some(cand) = pick(&and_all(&offer)?, key, attempt) else { continue };
            let yes = {
                let mut st = self.lock();
                let st = &mut *st;
                st.reservations.try_reserve(&st.contexts, cand)
            };
            let votes = and_all(&[if yes { u64::MAX } else { 0 }]);
            let mut st = self.lock();
            if yes {
                st.reservations.release(cand);
            }
            if votes?[0] == u64::MAX {
                st.contexts.take(cand);
                return Ok(cand);
            }
        }
        Err(exhausted())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pick_takes_the_lowest_first_then_spreads_by_key() {
        let mut m = [0u64; WORDS];
        m[0] = 0b1011_0000;
        m[3] = 1 << 5;
        assert_eq!(pick(&m, 42, 0), Some(4));
        let later: Vec<u32> = (1..40).filter_map(|a| pick(&m, 42, a)).collect();
        assert!(later.iter().all(|p| [4, 5, 7, 3 * 64 + 5].contains(p)), "{later:?}");
        // Two keys do not follow the same sequence of candidates.
        let other: Vec<u32> = (1..40).filter_map(|a| pick(&m, 43, a)).collect();
        assert_ne!(later, other);
        assert_eq!(pick(&[0u64; WORDS], 42, 3), None);
    }

    #[test]
    fn a_reserved_pair_is_not_offered_nor_reserved_twice() {
        let mut pool = ContextPool::default();
        let mut r = Reservations::default();
        assert!(r.try_reserve(&pool, 2));
        assert!(!r.try_reserve(&pool, 2), "a second vote on a held pair says no");
        assert_eq!(ContextPool::lowest(&r.offer(&pool)), Some(3));
        r.release(2);
        pool.take(2);
        assert!(!r.try_reserve(&pool, 2), "a taken pair is not free");
        assert!(!r.try_reserve(&pool, PAIRS as u32));
    }

    #[test]
    fn a_proposal_is_the_lowest_unreserved_pair_and_reserves_it() {
        let mut pool = ContextPool::default();
        pool.take(2);
        let mut r = Reservations::default();
        assert!(r.try_reserve(&pool, 3), "another agreement's vote");
        let (p, mask) = propose(&mut r, &pool);
        assert_eq!(p, Some(4));
        assert_eq!(ContextPool::lowest(&mask), Some(4));
        assert_eq!(mask.iter().map(|w| w.count_ones()).sum::<u32>(), 1);
        assert!(!r.try_reserve(&pool, 4), "held while the proposal runs");
        // A second agreement meanwhile proposes the next pair.
        assert_eq!(propose(&mut r, &pool).0, Some(5));
    }
}
