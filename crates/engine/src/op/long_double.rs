//! `long double` arithmetic through the C helper in `csrc/long_double.c`
//! (compiled by build.rs): Rust has no 80-bit x87 float.

use std::cmp::Ordering;
use std::ffi::c_int;

/// A long double in memory: 16 bytes on x86_64 (80 bits used) and aarch64.
pub(super) const LD_SIZE: usize = 16;

/// Operation codes shared with the C file.
#[derive(Debug, Clone, Copy)]
#[repr(i32)]
pub(super) enum LdOp {
    Sum = 0,
    Prod = 1,
    Max = 2,
    Min = 3,
    Land = 4,
    Lor = 5,
    Lxor = 6,
}

extern "C" {
    fn wanmpi_ld_reduce(op: c_int, input: *const u8, inout: *mut u8, count: usize) -> c_int;
    fn wanmpi_ldc_reduce(op: c_int, input: *const u8, inout: *mut u8, count: usize) -> c_int;
    fn wanmpi_ld_cmp(a: *const u8, b: *const u8) -> c_int;
    #[cfg(test)]
    fn wanmpi_ld_from_f64(v: f64, out: *mut u8);
    #[cfg(test)]
    fn wanmpi_ld_to_f64(input: *const u8) -> f64;
}

/// Calls `f(count)` only when both buffers hold exactly `count` elements of
/// `elem` bytes: the C side trusts the count it is given.
fn checked(input: &[u8], inout: &[u8], elem: usize) -> Option<usize> {
    let whole = inout.chunks_exact(elem).remainder().is_empty();
    (input.len() == inout.len() && whole).then_some(inout.len() / elem)
}

/// Real `long double`: false on inconsistent buffers or an unknown code.
pub(super) fn reduce_real(op: LdOp, input: &[u8], inout: &mut [u8]) -> bool {
    let Some(count) = checked(input, inout, LD_SIZE) else { return false };
    // SAFETY: both buffers hold `count` 16-byte elements (checked above); the
    // C side reads and writes them with memcpy, so alignment does not matter.
    unsafe { wanmpi_ld_reduce(op as c_int, input.as_ptr(), inout.as_mut_ptr(), count) == 0 }
}

/// `long double _Complex` (two long doubles): sum and product.
pub(super) fn reduce_complex(op: LdOp, input: &[u8], inout: &mut [u8]) -> bool {
    let Some(count) = checked(input, inout, 2 * LD_SIZE) else { return false };
    // SAFETY: as in `reduce_real`, with 32-byte elements.
    unsafe { wanmpi_ldc_reduce(op as c_int, input.as_ptr(), inout.as_mut_ptr(), count) == 0 }
}

/// Compares two long doubles; `None` when unordered (a NaN).
pub(super) fn compare(a: &[u8], b: &[u8]) -> Option<Ordering> {
    if a.len() < LD_SIZE || b.len() < LD_SIZE {
        return None;
    }
    // SAFETY: both slices hold at least LD_SIZE bytes; read with memcpy.
    match unsafe { wanmpi_ld_cmp(a.as_ptr(), b.as_ptr()) } {
        -1 => Some(Ordering::Less),
        0 => Some(Ordering::Equal),
        1 => Some(Ordering::Greater),
        _ => None,
    }
}

/// Test helper: the long double nearest to `v`, as 16 bytes.
#[cfg(test)]
pub(super) fn from_f64(v: f64) -> [u8; LD_SIZE] {
    let mut out = [0u8; LD_SIZE];
    // SAFETY: `out` has LD_SIZE bytes.
    unsafe { wanmpi_ld_from_f64(v, out.as_mut_ptr()) };
    out
}

/// Test helper: a long double rounded to f64.
#[cfg(test)]
pub(super) fn to_f64(b: &[u8]) -> f64 {
    assert!(b.len() >= LD_SIZE);
    // SAFETY: `b` has at least LD_SIZE bytes (asserted).
    unsafe { wanmpi_ld_to_f64(b.as_ptr()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cat(vals: &[f64]) -> Vec<u8> {
        vals.iter().flat_map(|v| from_f64(*v)).collect()
    }

    #[test]
    fn sum_keeps_more_precision_than_f64() {
        // 1 + 2^-60 is exact in a 64-bit mantissa and rounds to 1 in f64:
        // only real long double arithmetic gets 2^-60 back after adding -1.
        let tiny = (2.0f64).powi(-60);
        let mut acc = cat(&[tiny]);
        assert!(reduce_real(LdOp::Sum, &cat(&[1.0]), &mut acc));
        assert!(reduce_real(LdOp::Sum, &cat(&[-1.0]), &mut acc));
        assert_eq!(to_f64(&acc), tiny);
    }

    #[test]
    fn unaligned_buffers_and_all_ops() {
        let mut input = [0u8; 1 + 2 * LD_SIZE];
        input[1..].copy_from_slice(&cat(&[3.0, -2.0]));
        let mut inout = [0u8; 3 + 2 * LD_SIZE];
        inout[3..].copy_from_slice(&cat(&[5.0, 7.0]));
        assert!(reduce_real(LdOp::Prod, &input[1..], &mut inout[3..]));
        assert_eq!((to_f64(&inout[3..]), to_f64(&inout[3 + LD_SIZE..])), (15.0, -14.0));
        let mut io = cat(&[5.0, -7.0]);
        assert!(reduce_real(LdOp::Max, &cat(&[3.0, -2.0]), &mut io));
        assert_eq!((to_f64(&io), to_f64(&io[LD_SIZE..])), (5.0, -2.0));
        let mut io = cat(&[5.0, -7.0]);
        assert!(reduce_real(LdOp::Min, &cat(&[3.0, -2.0]), &mut io));
        assert_eq!((to_f64(&io), to_f64(&io[LD_SIZE..])), (3.0, -7.0));
    }

    #[test]
    fn complex_product() {
        // (1 + 2i)(3 - 4i) = 11 + 2i
        let mut io = cat(&[3.0, -4.0]);
        assert!(reduce_complex(LdOp::Prod, &cat(&[1.0, 2.0]), &mut io));
        assert_eq!((to_f64(&io), to_f64(&io[LD_SIZE..])), (11.0, 2.0));
        assert!(!reduce_complex(LdOp::Max, &cat(&[1.0, 2.0]), &mut io), "max is not a complex op");
    }

    #[test]
    fn mismatched_lengths_are_refused_before_c() {
        let mut io = cat(&[1.0]);
        assert!(!reduce_real(LdOp::Sum, &cat(&[1.0, 2.0]), &mut io));
        assert!(!reduce_real(LdOp::Sum, &[0u8; 15], &mut io[..15]));
    }

    #[test]
    fn compare_orders_and_nan() {
        assert_eq!(compare(&from_f64(1.0), &from_f64(2.0)), Some(Ordering::Less));
        assert_eq!(compare(&from_f64(2.0), &from_f64(2.0)), Some(Ordering::Equal));
        assert_eq!(compare(&from_f64(f64::NAN), &from_f64(2.0)), None);
    }
}
