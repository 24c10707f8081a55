//! MINLOC and MAXLOC on the (value, index) pair types (MPI-3.1 §5.9.4):
//! C's, whose index is an `int`, and Fortran's MPI_2REAL and
//! MPI_2DOUBLE_PRECISION, whose index has the value's type.
//!
//! The result takes the smaller (larger) value with its index; on equal
//! values it keeps the lower index, which makes the operation commutative
//! and associative as the standard requires. An unordered comparison (NaN)
//! leaves `inout` as it is, as C's `<` would.

use std::cmp::Ordering;

use super::elem::Elem;
use super::long_double;
use super::PredefOp;
use crate::datatype::BasicType;

/// Where the parts of one pair type sit in its extent.
struct Layout {
    value_size: usize,
    /// Offset of the index (after the value and its padding).
    index_at: usize,
    index_size: usize,
    extent: usize,
    compare: Compare,
    compare_index: Compare,
}

type Compare = fn(&[u8], &[u8]) -> Option<Ordering>;

fn compare_as<T: Elem + PartialOrd>(a: &[u8], b: &[u8]) -> Option<Ordering> {
    T::load(a).partial_cmp(&T::load(b))
}

fn layout(ty: BasicType) -> Option<Layout> {
    use BasicType::*;
    let int: (usize, Compare) = (4, compare_as::<i32>);
    let (value_size, index_at, compare, (index_size, compare_index)): (usize, usize, Compare, (usize, Compare)) = match ty {
        FloatInt => (4, 4, compare_as::<f32>, int),
        DoubleInt => (8, 8, compare_as::<f64>, int),
        LongInt => (8, 8, compare_as::<i64>, int),
        TwoInt => (4, 4, compare_as::<i32>, int),
        ShortInt => (2, 4, compare_as::<i16>, int),
        LongDoubleInt => (long_double::LD_SIZE, 16, long_double::compare, int),
        TwoFloat => (4, 4, compare_as::<f32>, (4, compare_as::<f32>)),
        TwoDouble => (8, 8, compare_as::<f64>, (8, compare_as::<f64>)),
        _ => return None,
    };
    Some(Layout { value_size, index_at, index_size, extent: ty.extent(), compare, compare_index })
}

pub(super) fn reduce(op: PredefOp, ty: BasicType, input: &[u8], inout: &mut [u8]) -> bool {
    let want = match op {
        PredefOp::Minloc => Ordering::Less,
        PredefOp::Maxloc => Ordering::Greater,
        _ => return false,
    };
    let Some(l) = layout(ty) else { return false };
    for (a, b) in input.chunks_exact(l.extent).zip(inout.chunks_exact_mut(l.extent)) {
        let (ai, bi) = (l.index_at, l.index_at + l.index_size);
        match (l.compare)(&a[..l.value_size], &b[..l.value_size]) {
            Some(o) if o == want => {
                b[..l.value_size].copy_from_slice(&a[..l.value_size]);
                b[ai..bi].copy_from_slice(&a[ai..bi]);
            }
            // Equal values keep the lower index.
            Some(Ordering::Equal) if (l.compare_index)(&a[ai..bi], &b[ai..bi]) == Some(Ordering::Less) => {
                b[ai..bi].copy_from_slice(&a[ai..bi]);
            }
            _ => {}
        }
    }
    true
}
