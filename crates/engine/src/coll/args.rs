//! Argument checks and buffer bookkeeping shared by the collectives. Every
//! check runs before the first message, so a bad call fails the same way on
//! every rank instead of leaving peers waiting.

use std::ops::Range;

use super::comm::CollError;
use crate::datatype::BasicType;
use crate::op::{Op, OpError};

/// Per-rank blocks of a byte buffer, for the v-variants: rank `i`'s block is
/// `displs[i] .. displs[i] + counts[i]` (bytes).
#[derive(Debug, Clone, Copy)]
pub struct Blocks<'a> {
    pub counts: &'a [usize],
    pub displs: &'a [usize],
}

impl<'a> Blocks<'a> {
    pub fn new(counts: &'a [usize], displs: &'a [usize]) -> Self {
        Blocks { counts, displs }
    }

    /// Rank `i`'s byte range; valid after `check`.
    pub fn range(&self, i: usize) -> Range<usize> {
        self.displs[i]..self.displs[i] + self.counts[i]
    }

    /// One block per rank, each inside a buffer of `buf_len` bytes.
    pub fn check(&self, what: &str, size: usize, buf_len: usize) -> Result<(), CollError> {
        if self.counts.len() != size || self.displs.len() != size {
            return Err(bad(format!("{what}: {} counts and {} displacements for {size} ranks", self.counts.len(), self.displs.len())));
        }
        for (i, (c, d)) in self.counts.iter().zip(self.displs).enumerate() {
            match d.checked_add(*c) {
                Some(end) if end <= buf_len => {}
                _ => return Err(bad(format!("{what}: block of rank {i} ({c} bytes at {d}) ends past the buffer of {buf_len} bytes"))),
            }
        }
        Ok(())
    }
}

pub(super) fn bad(msg: String) -> CollError {
    CollError::BadArgument(msg)
}

pub(super) fn check_root(root: usize, size: usize) -> Result<(), CollError> {
    if root >= size {
        return Err(bad(format!("root {root} is not a rank of a communicator of size {size}")));
    }
    Ok(())
}

pub(super) fn check_len(what: &str, got: usize, want: usize) -> Result<(), CollError> {
    if got != want {
        return Err(bad(format!("{what} has {got} bytes, expected {want}")));
    }
    Ok(())
}

/// `a * b` bytes, or an error naming `what`.
pub(super) fn mul(what: &str, a: usize, b: usize) -> Result<usize, CollError> {
    a.checked_mul(b).ok_or_else(|| bad(format!("{what}: {a} x {b} bytes overflows")))
}

/// Bytes of `count` elements of `ty`, after checking that `op` is defined on
/// `ty`, so that every rank refuses an undefined reduction up front.
pub(super) fn reduction_bytes(count: usize, ty: BasicType, op: &Op) -> Result<usize, CollError> {
    if let Op::Predef(p) = op {
        if !p.is_defined_for(ty) {
            return Err(OpError::NotDefined { op: *p, ty }.into());
        }
    }
    count.checked_mul(ty.extent()).ok_or(CollError::Op(OpError::TooLarge { ty, count }))
}

/// Whether two non-empty ranges share a byte.
pub(super) fn overlapping(ranges: &[Range<usize>]) -> bool {
    let mut r: Vec<&Range<usize>> = ranges.iter().filter(|r| !r.is_empty()).collect();
    r.sort_by_key(|r| r.start);
    r.windows(2).any(|w| w[1].start < w[0].end)
}

/// Receive blocks that overlap (erroneous in MPI, accepted by MPICH) are
/// received side by side into `Overlap::side`, then copied to their places
/// in rank order, so where they meet the highest rank's bytes stay.
pub(super) struct Overlap {
    pub counts: Vec<usize>,
    pub displs: Vec<usize>,
    pub side: Vec<u8>,
}

impl Overlap {
    /// `None` unless two of `ranges` overlap.
    pub fn of(ranges: &[Range<usize>]) -> Option<Overlap> {
        if !overlapping(ranges) {
            return None;
        }
        let counts: Vec<usize> = ranges.iter().map(|r| r.len()).collect();
        let displs: Vec<usize> = counts.iter().scan(0, |at, c| Some(std::mem::replace(at, *at + c))).collect();
        Some(Overlap { side: vec![0u8; counts.iter().sum()], counts, displs })
    }

    /// Copies every block to its range of `recv`, in rank order.
    pub fn place(&self, recv: &mut [u8], ranges: &[Range<usize>]) {
        for (r, d) in ranges.iter().zip(&self.displs) {
            recv[r.clone()].copy_from_slice(&self.side[*d..*d + r.len()]);
        }
    }
}

/// Splits `buf` into the given ranges, returned in the order given. Receive
/// blocks may not overlap (MPI-3.1 §5.5: no location is written twice).
pub(super) fn split_disjoint<'b>(what: &str, buf: &'b mut [u8], ranges: &[Range<usize>]) -> Result<Vec<&'b mut [u8]>, CollError> {
    let mut order: Vec<usize> = (0..ranges.len()).collect();
    order.sort_by_key(|i| (ranges[*i].start, ranges[*i].end));
    let mut out: Vec<Option<&'b mut [u8]>> = (0..ranges.len()).map(|_| None).collect();
    let mut rest: &'b mut [u8] = buf;
    let mut at = 0;
    for i in order {
        let r = ranges[i].clone();
        if r.is_empty() {
            out[i] = Some(&mut []);
            continue;
        }
        if r.start < at || r.end - at > rest.len() {
            return Err(bad(format!("{what}: block {i} ({r:?}) overlaps another or leaves the buffer")));
        }
        let (_, tail) = std::mem::take(&mut rest).split_at_mut(r.start - at);
        let (piece, tail) = tail.split_at_mut(r.len());
        out[i] = Some(piece);
        rest = tail;
        at = r.end;
    }
    Ok(out.into_iter().map(|p| p.unwrap_or_default()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_returns_pieces_in_the_requested_order() {
        let mut buf: Vec<u8> = (0..10).collect();
        let pieces = split_disjoint("t", &mut buf, &[6..9, 0..2, 4..4, 2..3]).unwrap();
        assert_eq!(pieces.len(), 4);
        assert_eq!(&*pieces[0], &[6, 7, 8]);
        assert_eq!(&*pieces[1], &[0, 1]);
        assert!(pieces[2].is_empty());
        assert_eq!(&*pieces[3], &[2]);
    }

    #[test]
    fn split_refuses_overlap_and_overrun() {
        let mut buf = vec![0u8; 10];
        assert!(split_disjoint("t", &mut buf, &[0..5, 4..6]).is_err());
        assert!(split_disjoint("t", &mut buf, &[8..11, 0..1]).is_err());
        assert!(split_disjoint("t", &mut buf, &[5..5, 5..5, 0..10]).is_ok());
        assert!(overlapping(&[0..5, 4..6]) && overlapping(&[3..4, 0..2, 0..1]));
        assert!(!overlapping(&[5..5, 0..10, 10..12, 3..3]));
    }

    #[test]
    fn blocks_are_checked_against_size_and_buffer() {
        let b = Blocks::new(&[2, 3], &[0, 2]);
        assert!(b.check("t", 2, 5).is_ok());
        assert!(b.check("t", 2, 4).is_err());
        assert!(b.check("t", 3, 5).is_err());
        assert!(Blocks::new(&[1], &[usize::MAX]).check("t", 1, 10).is_err());
    }

    #[test]
    fn undefined_reduction_is_refused_before_any_message() {
        use crate::op::PredefOp;
        let e = reduction_bytes(3, BasicType::CBool, &Op::Predef(PredefOp::Sum)).unwrap_err();
        assert!(matches!(e, CollError::Op(OpError::NotDefined { .. })));
        assert_eq!(reduction_bytes(3, BasicType::DoubleInt, &Op::Predef(PredefOp::Minloc)), Ok(48));
    }
}
