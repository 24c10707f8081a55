//! Agreeing a new communicator's context pair in two phases, so that
//! agreements may overlap (MPI_Comm_idup, and blocking creations while
//! idups are pending) without two of them taking the same pair.
//!
//! One attempt: (1) every participant offers its free pairs less the ones
//! it has *reserved* for another agreement's vote; the AND of the offers
//! over all participants names a candidate (the lowest at the first
//! attempt, then one picked by the agreement's key, so two agreements that
//! collided do not collide again). (2) Every participant votes yes only if
//! the candidate is still free and not reserved here, and reserves it
//! while the vote runs; the AND of the votes commits the pair everywhere or
//! sends everyone to the next attempt. Every participant sees the same
//! results, so they all commit or retry together. A reservation is held
//! only during a vote, which needs no further call from any participant
//! (progress finishes it), so no agreement waits on another.
//!
//! The blocking calls run the attempts here (`Runtime::agree`), skipping
//! the vote when no participant has an idup running (the usual case); the
//! nonblocking MPI_Comm_idup runs them as schedules (`idup.rs`).

use wanmpi_engine::{ErrorClass, MpiError, MpiResult};

use crate::context::{ContextPool, PAIRS, WORDS};
use crate::runtime::Runtime;

/// Attempts before an agreement gives up (each is two reductions).
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

    /// Nothing reserved (no vote running here).
    pub fn is_empty(&self) -> bool {
        self.held.iter().all(|w| *w == 0)
    }

    /// Holds (`on`) or lets go of every pair of `offer`: the offer of a
    /// blocking agreement that may skip its vote. An offer never includes
    /// pairs held by another, so letting go frees only its own.
    pub fn hold(&mut self, offer: &[u64; WORDS], on: bool) {
        for (h, o) in self.held.iter_mut().zip(offer) {
            if on {
                *h |= o;
            } else {
                *h &= !o;
            }
        }
    }

    pub fn release(&mut self, pair: u32) {
        if (pair as usize) < PAIRS {
            self.held[pair as usize / 64] &= !(1u64 << (pair % 64));
        }
    }
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
    ///
    /// The vote is skipped when every participant was *quiet* as it made
    /// its offer: no idup running, nothing reserved. A quiet process is
    /// inside this blocking call, so it joins no other agreement until the
    /// call returns, and the lowest pair of the offers stays free at every
    /// participant: one reduction, as before idups could overlap. Its offer
    /// is held meanwhile, for another thread's idup.
    pub(crate) fn agree(&self, key: u64, and_all: &mut AndAll<'_>) -> MpiResult<u32> {
        for attempt in 0..MAX_ATTEMPTS {
            let (offer, quiet) = {
                let mut st = self.lock();
                let quiet = st.reservations.is_empty() && !crate::icoll::agreement_running(&st);
                let st = &mut *st;
                let offer = st.reservations.offer(&st.contexts);
                if quiet {
                    st.reservations.hold(&offer, true);
                }
                (offer, quiet)
            };
            let mut words = offer.to_vec();
            words.push(if quiet { u64::MAX } else { 0 });
            let all = and_all(&words);
            let cand = {
                let mut st = self.lock();
                if quiet {
                    st.reservations.hold(&offer, false);
                }
                let all = all?;
                let (mask, everyone_quiet) = (&all[..WORDS], all[WORDS] == u64::MAX);
                if everyone_quiet {
                    // Held by this call and free everywhere: take it at once.
                    let Some(pair) = ContextPool::lowest(mask) else { continue };
                    st.contexts.take(pair);
                    return Ok(pair);
                }
                let Some(cand) = pick(mask, key, attempt) else { continue };
                cand
            };
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
    fn a_held_offer_blocks_votes_and_letting_go_frees_only_it() {
        let pool = ContextPool::default();
        let mut r = Reservations::default();
        assert!(r.is_empty());
        assert!(r.try_reserve(&pool, 5), "another agreement's vote");
        let offer = r.offer(&pool);
        r.hold(&offer, true);
        assert!(!r.try_reserve(&pool, 2), "a held offer votes no");
        assert_eq!(ContextPool::lowest(&r.offer(&pool)), None, "nothing left to offer");
        r.hold(&offer, false);
        assert!(!r.is_empty(), "the other vote's pair stays reserved");
        assert!(!r.try_reserve(&pool, 5));
        assert!(r.try_reserve(&pool, 2));
    }
}
