//! Process groups (MPI-3.1 §6.3): ordered sets of world ranks.

use wanmpi_engine::{error::err, ErrorClass, MpiResult};

/// Result of comparing groups or communicators (MPI_IDENT, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Comparison {
    Ident,
    Congruent,
    Similar,
    Unequal,
}

/// An ordered group of processes, by world rank.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Group {
    members: Vec<u32>,
    /// The largest member plus one (0 when empty): whether the group holds
    /// processes of another job (ids past the world's) without a scan.
    bound: u32,
}

impl Group {
    pub fn new(members: Vec<u32>) -> Group {
        let bound = members.iter().max().map_or(0, |m| m + 1);
        Group { members, bound }
    }
    /// Whether every member is a process of this job (world size `size`).
    pub fn within(&self, size: u32) -> bool {
        self.bound <= size
    }
    pub fn empty() -> Group {
        Group::default()
    }
    pub fn size(&self) -> usize {
        self.members.len()
    }
    pub fn members(&self) -> &[u32] {
        &self.members
    }
    /// World rank of group rank `r`.
    pub fn world(&self, r: usize) -> Option<u32> {
        self.members.get(r).copied()
    }
    /// Group rank of world rank `w`.
    pub fn rank_of(&self, w: u32) -> Option<usize> {
        // World and its duplicates keep world order: no scan (a receive
        // completes through here).
        if self.members.get(w as usize) == Some(&w) {
            return Some(w as usize);
        }
        self.members.iter().position(|&m| m == w)
    }

    fn check_ranks(&self, ranks: &[i32]) -> MpiResult<Vec<usize>> {
        let mut seen = vec![false; self.size()];
        ranks
            .iter()
            .map(|&r| {
                if r < 0 || r as usize >= self.size() {
                    return err(ErrorClass::Rank, format!("rank {r} is not in a group of size {}", self.size()));
                }
                if std::mem::replace(&mut seen[r as usize], true) {
                    return err(ErrorClass::Rank, format!("rank {r} appears twice"));
                }
                Ok(r as usize)
            })
            .collect()
    }

    /// MPI_Group_incl.
    pub fn incl(&self, ranks: &[i32]) -> MpiResult<Group> {
        Ok(Group::new(self.check_ranks(ranks)?.into_iter().map(|r| self.members[r]).collect()))
    }

    /// MPI_Group_excl.
    pub fn excl(&self, ranks: &[i32]) -> MpiResult<Group> {
        let gone = self.check_ranks(ranks)?;
        Ok(Group::new(self.members.iter().enumerate().filter(|(i, _)| !gone.contains(i)).map(|(_, &m)| m).collect()))
    }

    /// Expands MPI_Group_range_incl/excl triplets (first, last, stride).
    pub fn expand_ranges(&self, ranges: &[[i32; 3]]) -> MpiResult<Vec<i32>> {
        let mut out = vec![];
        for &[first, last, stride] in ranges {
            if stride == 0 {
                return err(ErrorClass::Arg, "range stride is 0");
            }
            let mut r = first;
            while (stride > 0 && r <= last) || (stride < 0 && r >= last) {
                out.push(r);
                if out.len() > self.size() {
                    return err(ErrorClass::Rank, "ranges name more ranks than the group has");
                }
                r += stride;
            }
        }
        Ok(out)
    }

    /// MPI_Group_translate_ranks: `None` for MPI_UNDEFINED.
    pub fn translate(&self, ranks: &[i32], other: &Group) -> MpiResult<Vec<Option<usize>>> {
        ranks
            .iter()
            .map(|&r| {
                let w = self
                    .world(usize::try_from(r).unwrap_or(usize::MAX))
                    .ok_or_else(|| wanmpi_engine::MpiError::new(ErrorClass::Rank, format!("rank {r} is not in the group")))?;
                Ok(other.rank_of(w))
            })
            .collect()
    }

    /// MPI_Group_union: self's members, then other's not in self.
    pub fn union(&self, other: &Group) -> Group {
        let mut m = self.members.clone();
        m.extend(other.members.iter().filter(|w| !self.members.contains(w)));
        Group::new(m)
    }

    /// MPI_Group_intersection, in self's order.
    pub fn intersection(&self, other: &Group) -> Group {
        Group::new(self.members.iter().copied().filter(|w| other.members.contains(w)).collect())
    }

    /// MPI_Group_difference, in self's order.
    pub fn difference(&self, other: &Group) -> Group {
        Group::new(self.members.iter().copied().filter(|w| !other.members.contains(w)).collect())
    }

    /// MPI_Group_compare.
    pub fn compare(&self, other: &Group) -> Comparison {
        if self.members == other.members {
            Comparison::Ident
        } else {
            let mut a = self.members.clone();
            let mut b = other.members.clone();
            a.sort_unstable();
            b.sort_unstable();
            if a == b {
                Comparison::Similar
            } else {
                Comparison::Unequal
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_operations_follow_the_standard() {
        let g = Group::new(vec![10, 11, 12, 13, 14]);
        assert_eq!(g.incl(&[3, 1]).unwrap().members(), &[13, 11]);
        assert_eq!(g.excl(&[0, 4]).unwrap().members(), &[11, 12, 13]);
        assert_eq!(g.incl(&[5]).unwrap_err().class, ErrorClass::Rank);
        assert_eq!(g.incl(&[1, 1]).unwrap_err().class, ErrorClass::Rank);
        assert_eq!(g.expand_ranges(&[[0, 4, 2], [3, 1, -2]]).unwrap(), vec![0, 2, 4, 3, 1]);
        let h = g.incl(&[4, 2]).unwrap();
        assert_eq!(g.translate(&[2, 0, 4], &h).unwrap(), vec![Some(1), None, Some(0)]);
        assert_eq!(h.compare(&Group::new(vec![12, 14])), Comparison::Similar);
        assert_eq!(h.compare(&h.clone()), Comparison::Ident);
        assert_eq!(g.union(&Group::new(vec![20, 10])).members(), &[10, 11, 12, 13, 14, 20]);
        assert_eq!(g.intersection(&Group::new(vec![14, 10])).members(), &[10, 14]);
        assert_eq!(g.difference(&h).members(), &[10, 11, 13]);
    }
}
