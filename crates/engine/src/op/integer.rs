//! Integer reductions: arithmetic (wrapping), min/max, logical, bitwise.

use std::ffi::c_char;
use std::ops::{BitAnd, BitOr, BitXor};

use super::elem::{zip, Elem};
use super::PredefOp;
use crate::datatype::BasicType;

pub(super) trait Int: Elem + Ord + BitAnd<Output = Self> + BitOr<Output = Self> + BitXor<Output = Self> {
    const ZERO: Self;
    const ONE: Self;
    fn wrapping_add(self, other: Self) -> Self;
    fn wrapping_mul(self, other: Self) -> Self;
}

macro_rules! impl_int {
    ($($t:ty),*) => {$(
        impl Int for $t {
            const ZERO: Self = 0;
            const ONE: Self = 1;
            fn wrapping_add(self, other: Self) -> Self { <$t>::wrapping_add(self, other) }
            fn wrapping_mul(self, other: Self) -> Self { <$t>::wrapping_mul(self, other) }
        }
    )*};
}

impl_int!(i8, u8, i16, u16, i32, u32, i64, u64);

/// C truth value of a logical result: 1 or 0 in the operand's type.
fn truth<T: Int>(b: bool) -> T {
    if b {
        T::ONE
    } else {
        T::ZERO
    }
}

/// Applies `op` to arrays of `T`; false if `op` is not an integer operation.
pub(super) fn reduce_as<T: Int>(op: PredefOp, input: &[u8], inout: &mut [u8]) -> bool {
    use PredefOp::*;
    match op {
        Max => zip::<T>(input, inout, |a, b| a.max(b)),
        Min => zip::<T>(input, inout, |a, b| a.min(b)),
        Sum => zip::<T>(input, inout, |a, b| a.wrapping_add(b)),
        Prod => zip::<T>(input, inout, |a, b| a.wrapping_mul(b)),
        Land => zip::<T>(input, inout, |a, b| truth(a != T::ZERO && b != T::ZERO)),
        Lor => zip::<T>(input, inout, |a, b| truth(a != T::ZERO || b != T::ZERO)),
        Lxor => zip::<T>(input, inout, |a, b| truth((a != T::ZERO) != (b != T::ZERO))),
        Band => zip::<T>(input, inout, |a, b| a & b),
        Bor => zip::<T>(input, inout, |a, b| a | b),
        Bxor => zip::<T>(input, inout, |a, b| a ^ b),
        Minloc | Maxloc | Replace | NoOp => return false,
    }
    true
}

/// The C integer types of x86_64 Linux (LP64). `char` takes the target's
/// signedness; `wchar_t` is a 32-bit signed int there.
pub(super) fn reduce(op: PredefOp, ty: BasicType, input: &[u8], inout: &mut [u8]) -> bool {
    use BasicType::*;
    match ty {
        Char => reduce_as::<c_char>(op, input, inout),
        SignedChar | Int8 => reduce_as::<i8>(op, input, inout),
        UnsignedChar | Uint8 => reduce_as::<u8>(op, input, inout),
        Short | Int16 => reduce_as::<i16>(op, input, inout),
        UnsignedShort | Uint16 => reduce_as::<u16>(op, input, inout),
        WChar | Int | Int32 => reduce_as::<i32>(op, input, inout),
        Unsigned | Uint32 => reduce_as::<u32>(op, input, inout),
        Long | LongLong | Int64 | Aint | Offset | Count => reduce_as::<i64>(op, input, inout),
        UnsignedLong | UnsignedLongLong | Uint64 => reduce_as::<u64>(op, input, inout),
        _ => false,
    }
}
