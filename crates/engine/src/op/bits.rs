//! MPI_C_BOOL (logical operations only) and MPI_BYTE (bitwise only).

use super::elem::zip;
use super::integer::reduce_as;
use super::PredefOp;

/// C `bool` is one byte; any non-zero byte counts as true, results are 0/1.
pub(super) fn reduce_bool(op: PredefOp, input: &[u8], inout: &mut [u8]) -> bool {
    use PredefOp::*;
    match op {
        Land => zip::<u8>(input, inout, |a, b| u8::from(a != 0 && b != 0)),
        Lor => zip::<u8>(input, inout, |a, b| u8::from(a != 0 || b != 0)),
        Lxor => zip::<u8>(input, inout, |a, b| u8::from((a != 0) != (b != 0))),
        _ => return false,
    }
    true
}

/// MPI_BYTE is uninterpreted: only the bitwise operations apply.
pub(super) fn reduce_byte(op: PredefOp, input: &[u8], inout: &mut [u8]) -> bool {
    match op {
        PredefOp::Band | PredefOp::Bor | PredefOp::Bxor => reduce_as::<u8>(op, input, inout),
        _ => false,
    }
}
