//! Context id allocation. Each process keeps a bitmap of free context
//! pairs; creating a communicator AND-reduces the bitmaps of the processes
//! involved and takes the lowest pair free everywhere, so all members agree
//! without a central allocator (MPICH's approach).

/// Number of context pairs (and so communicators alive at once).
pub const PAIRS: usize = 64 * WORDS;
pub const WORDS: usize = 64;

#[derive(Debug, Clone)]
pub struct ContextPool {
    free: [u64; WORDS],
}

impl Default for ContextPool {
    fn default() -> Self {
        let mut free = [u64::MAX; WORDS];
        // Pairs 0 and 1 are MPI_COMM_WORLD and MPI_COMM_SELF.
        free[0] &= !0b11;
        ContextPool { free }
    }
}

impl ContextPool {
    /// This process's free bitmap, to be AND-reduced with the others'.
    pub fn mask(&self) -> [u64; WORDS] {
        self.free
    }

    /// The lowest pair free in an agreed mask.
    pub fn lowest(mask: &[u64]) -> Option<u32> {
        mask.iter().enumerate().find(|(_, w)| **w != 0).map(|(i, w)| (i * 64) as u32 + w.trailing_zeros())
    }

    pub fn take(&mut self, pair: u32) {
        self.free[pair as usize / 64] &= !(1u64 << (pair % 64));
    }

    pub fn release(&mut self, pair: u32) {
        if pair > 1 && (pair as usize) < PAIRS {
            self.free[pair as usize / 64] |= 1u64 << (pair % 64);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agreed_lowest_pair_skips_pairs_used_anywhere() {
        let mut a = ContextPool::default();
        let mut b = ContextPool::default();
        a.take(2);
        b.take(3);
        let m: Vec<u64> = a.mask().iter().zip(b.mask().iter()).map(|(x, y)| x & y).collect();
        assert_eq!(ContextPool::lowest(&m), Some(4));
        a.release(2);
        assert_eq!(ContextPool::lowest(&a.mask()), Some(2));
        assert_eq!(ContextPool::lowest(&[0u64; WORDS]), None);
    }
}
