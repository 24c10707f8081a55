//! Floating-point reductions: sum, product, min, max, and the logical
//! ones (non-zero is true; the result is 1 or 0), which MPICH also allows.

use super::elem::{zip, Elem};
use super::long_double::{self, LdOp};
use super::PredefOp;
use crate::datatype::BasicType;

trait Float: Elem + PartialOrd + std::ops::Add<Output = Self> + std::ops::Mul<Output = Self> {
    const ZERO: Self;
    const ONE: Self;
}
impl Float for f32 {
    const ZERO: f32 = 0.0;
    const ONE: f32 = 1.0;
}
impl Float for f64 {
    const ZERO: f64 = 0.0;
    const ONE: f64 = 1.0;
}

fn truth<T: Float>(v: bool) -> T {
    if v {
        T::ONE
    } else {
        T::ZERO
    }
}

/// Min and max as C writes them (`a > b ? a : b`), so NaN handling matches
/// what C MPI libraries give.
fn reduce_as<T: Float>(op: PredefOp, input: &[u8], inout: &mut [u8]) -> bool {
    match op {
        PredefOp::Sum => zip::<T>(input, inout, |a, b| a + b),
        PredefOp::Prod => zip::<T>(input, inout, |a, b| a * b),
        PredefOp::Max => zip::<T>(input, inout, |a, b| if a > b { a } else { b }),
        PredefOp::Min => zip::<T>(input, inout, |a, b| if a < b { a } else { b }),
        PredefOp::Land => zip::<T>(input, inout, |a, b| truth(a != T::ZERO && b != T::ZERO)),
        PredefOp::Lor => zip::<T>(input, inout, |a, b| truth(a != T::ZERO || b != T::ZERO)),
        PredefOp::Lxor => zip::<T>(input, inout, |a, b| truth((a != T::ZERO) != (b != T::ZERO))),
        _ => return false,
    }
    true
}

pub(super) fn reduce(op: PredefOp, ty: BasicType, input: &[u8], inout: &mut [u8]) -> bool {
    match ty {
        BasicType::Float => reduce_as::<f32>(op, input, inout),
        BasicType::Double => reduce_as::<f64>(op, input, inout),
        BasicType::LongDouble => {
            let ld = match op {
                PredefOp::Sum => LdOp::Sum,
                PredefOp::Prod => LdOp::Prod,
                PredefOp::Max => LdOp::Max,
                PredefOp::Min => LdOp::Min,
                PredefOp::Land => LdOp::Land,
                PredefOp::Lor => LdOp::Lor,
                PredefOp::Lxor => LdOp::Lxor,
                _ => return false,
            };
            long_double::reduce_real(ld, input, inout)
        }
        _ => false,
    }
}
