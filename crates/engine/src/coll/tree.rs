//! The binomial tree shared by bcast, reduce, gather and scatter.
//!
//! Ranks are *relative* to the tree's root (`rel = (rank - root) mod size`).
//! Node `rel` owns the subtree `[rel, rel + span)`, where span is the lowest
//! set bit of `rel` (capped at `size`); its parent is `rel` minus that bit,
//! and its children are `rel + 1, rel + 2, rel + 4, ...` below that bit. The
//! subtrees of the children follow each other without gaps, in rank order.
//! Depth, and so the number of sequential hops, is at most ceil(log2(size)).

/// One child: its relative rank and the size of its subtree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Child {
    pub rel: usize,
    pub span: usize,
}

#[derive(Debug, Clone, Copy)]
pub(super) struct Binomial {
    size: usize,
    rel: usize,
}

impl Binomial {
    /// `rank` and `root` are real ranks, both below `size`.
    pub fn new(size: usize, rank: usize, root: usize) -> Self {
        Binomial { size, rel: (rank + size - root) % size }
    }

    pub fn rel(&self) -> usize {
        self.rel
    }

    /// The lowest set bit of `rel`; for the root, a power of two >= size.
    fn low_bit(&self) -> usize {
        if self.rel == 0 {
            self.size.next_power_of_two()
        } else {
            1 << self.rel.trailing_zeros()
        }
    }

    /// Number of ranks in this node's subtree (itself included).
    pub fn span(&self) -> usize {
        self.low_bit().min(self.size - self.rel)
    }

    pub fn parent(&self) -> Option<usize> {
        (self.rel != 0).then(|| self.rel - self.low_bit())
    }

    /// Children in increasing rank order (smallest subtree first).
    pub fn children(&self) -> Vec<Child> {
        let mut out = Vec::new();
        let mut mask = 1;
        while mask < self.low_bit() && self.rel + mask < self.size {
            out.push(Child { rel: self.rel + mask, span: mask.min(self.size - self.rel - mask) });
            mask <<= 1;
        }
        out
    }

    /// Real rank of relative rank `rel` in a tree rooted at `root`.
    pub fn real(size: usize, rel: usize, root: usize) -> usize {
        (rel + root) % size
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rank_has_one_parent_and_subtrees_tile_the_ranks() {
        for size in 1..=33 {
            for rel in 0..size {
                let t = Binomial::new(size, rel, 0);
                // Children's subtrees follow ours without gaps and fill our span.
                let mut next = rel + 1;
                for c in t.children() {
                    assert_eq!(c.rel, next, "size {size} rel {rel}");
                    assert_eq!(Binomial::new(size, c.rel, 0).span(), c.span);
                    assert_eq!(Binomial::new(size, c.rel, 0).parent(), Some(rel));
                    next += c.span;
                }
                assert_eq!(next, rel + t.span(), "size {size} rel {rel}");
            }
            assert_eq!(Binomial::new(size, 0, 0).span(), size);
        }
    }

    #[test]
    fn depth_is_logarithmic() {
        for size in [1usize, 2, 3, 7, 8, 9, 100] {
            let depth = (0..size)
                .map(|r| {
                    let mut t = Binomial::new(size, r, 0);
                    let mut d = 0;
                    while let Some(p) = t.parent() {
                        t = Binomial::new(size, p, 0);
                        d += 1;
                    }
                    d
                })
                .max()
                .unwrap_or(0);
            let log = size.next_power_of_two().trailing_zeros() as usize;
            assert!(depth <= log, "size {size}: depth {depth}");
            if size.is_power_of_two() {
                assert_eq!(depth, log, "size {size}");
            }
        }
    }

    #[test]
    fn relative_ranks_rotate_around_the_root() {
        let t = Binomial::new(5, 1, 3);
        assert_eq!(t.rel(), 3);
        assert_eq!(Binomial::real(5, t.rel(), 3), 1);
    }
}
