//! Complex reductions (MPI_C_*_COMPLEX): sum and product only.

use super::elem::Elem;
use super::long_double::{self, LdOp};
use super::PredefOp;
use crate::datatype::BasicType;

trait Part: Elem + std::ops::Add<Output = Self> + std::ops::Sub<Output = Self> + std::ops::Mul<Output = Self> {}
impl Part for f32 {}
impl Part for f64 {}

/// Elements are (real, imaginary) pairs of `T`, C's `_Complex` layout. The
/// product is the textbook formula (no C99 Annex G infinity recovery).
fn reduce_as<T: Part>(op: PredefOp, input: &[u8], inout: &mut [u8]) -> bool {
    let product = match op {
        PredefOp::Sum => false,
        PredefOp::Prod => true,
        _ => return false,
    };
    let n = T::SIZE;
    for (a, b) in input.chunks_exact(2 * n).zip(inout.chunks_exact_mut(2 * n)) {
        let (ar, ai) = (T::load(a), T::load(&a[n..]));
        let (br, bi) = (T::load(b), T::load(&b[n..]));
        let (r, i) = if product { (ar * br - ai * bi, ar * bi + ai * br) } else { (ar + br, ai + bi) };
        r.store(b);
        i.store(&mut b[n..]);
    }
    true
}

pub(super) fn reduce(op: PredefOp, ty: BasicType, input: &[u8], inout: &mut [u8]) -> bool {
    match ty {
        BasicType::CFloatComplex => reduce_as::<f32>(op, input, inout),
        BasicType::CDoubleComplex => reduce_as::<f64>(op, input, inout),
        BasicType::CLongDoubleComplex => {
            let ld = match op {
                PredefOp::Sum => LdOp::Sum,
                PredefOp::Prod => LdOp::Prod,
                _ => return false,
            };
            long_double::reduce_complex(ld, input, inout)
        }
        _ => false,
    }
}
