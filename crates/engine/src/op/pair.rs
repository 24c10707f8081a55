//! MINLOC and MAXLOC on the (value, index) pair types (MPI-3.1 §5.9.4).
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
    /// Offset of the C `int` index (after the value and its padding).
    index_at: usize,
    extent: usize,
    compare: Compare,
}

type Compare = fn(&[u8], &[u8]) -> Option<Ordering>;

fn compare_as<T: Elem + PartialOrd>(a: &[u8], b: &[u8]) -> Option<Ordering> {
    T::load(a).partial_cmp(&T::load(b))
}

fn layout(ty: BasicType) -> Option<Layout> {
    use BasicType::*;
    let (value_size, index_at, compare): (usize, usize, Compare) = match ty {
        FloatInt => (4, 4, compare_as::<f32>),
        DoubleInt => (8, 8, compare_as::<f64>),
        LongInt => (8, 8, compare_as::<i64>),
        TwoInt => (4, 4, compare_as::<i32>),
        ShortInt => (2, 4, compare_as::<i16>),
        LongDoubleInt => (long_double::LD_SIZE, 16, long_double::compare),
        _ => return None,
    };
    Some(Layout { value_size, index_at, extent: ty.extent(), compare })
}

pub(super) fn reduce(op: PredefOp, ty: BasicType, input: &[u8], inout: &mut [u8]) -> bool {
    let want = match op {
        PredefOp::Minloc => Ordering::Less,
        PredefOp::Maxloc => Ordering::Greater,
        _ => return false,
    };
    let Some(l) = layout(ty) else { return false };
    for (a, b) in input.chunks_exact(l.extent).zip(inout.chunks_exact_mut(l.extent)) {
        let (ai, bi) = (l.index_at, l.index_at + 4);
        match (l.compare)(&a[..l.value_size], &b[..l.value_size]) {
            Some(o) if o == want => {
                b[..l.value_size].copy_from_slice(&a[..l.value_size]);
                b[ai..bi].copy_from_slice(&a[ai..bi]);
            }
            Some(Ordering::Equal) => {
                let lower = i32::load(&a[ai..bi]).min(i32::load(&b[ai..bi]));
                lower.store(&mut b[ai..bi]);
            }
            _ => {}
        }
    }
    true
}
