//! Every predefined operation on every basic type, against reference
//! arithmetic written independently of the implementation (i128 and f64),
//! and `NotDefined` for every combination MPI does not define.

use std::sync::Arc;

use super::long_double::{from_f64 as ld, to_f64 as ld_f64, LD_SIZE};
use super::{Op, OpError, PredefOp};
use crate::datatype::BasicType::{self, *};

/// (size, signed) of the C integer types on x86_64 Linux.
const INTEGERS: [(BasicType, usize, bool); 23] = [
    (Char, 1, true),
    (SignedChar, 1, true),
    (UnsignedChar, 1, false),
    (WChar, 4, true),
    (Short, 2, true),
    (UnsignedShort, 2, false),
    (Int, 4, true),
    (Unsigned, 4, false),
    (Long, 8, true),
    (UnsignedLong, 8, false),
    (LongLong, 8, true),
    (UnsignedLongLong, 8, false),
    (Int8, 1, true),
    (Int16, 2, true),
    (Int32, 4, true),
    (Int64, 8, true),
    (Uint8, 1, false),
    (Uint16, 2, false),
    (Uint32, 4, false),
    (Uint64, 8, false),
    (Aint, 8, true),
    (Offset, 8, true),
    (Count, 8, true),
];
const FLOATS: [BasicType; 3] = [Float, Double, LongDouble];
const COMPLEXES: [BasicType; 3] = [CFloatComplex, CDoubleComplex, CLongDoubleComplex];
const PAIRS: [BasicType; 8] = [FloatInt, DoubleInt, LongInt, TwoInt, ShortInt, LongDoubleInt, TwoFloat, TwoDouble];

fn is_int(ty: BasicType) -> bool {
    INTEGERS.iter().any(|(t, _, _)| *t == ty)
}

/// MPI-3.1 §5.9.2 as a plain table (plus MPI_CHAR/MPI_WCHAR arithmetic,
/// logical/bitwise on MPI_AINT/OFFSET/COUNT and logical on real floating
/// types, as MPICH allows).
fn expected_defined(op: PredefOp, ty: BasicType) -> bool {
    use PredefOp::*;
    let int = is_int(ty);
    let float = FLOATS.contains(&ty);
    match op {
        Replace | NoOp => true,
        Max | Min => int || float,
        Sum | Prod => int || float || COMPLEXES.contains(&ty),
        Land | Lor | Lxor => int || float || ty == CBool,
        Band | Bor | Bxor => int || ty == Byte,
        Minloc | Maxloc => PAIRS.contains(&ty),
    }
}

fn apply(op: PredefOp, ty: BasicType, count: usize, input: &[u8], inout: &mut [u8]) -> Result<(), OpError> {
    Op::Predef(op).apply(ty, count, input, inout)
}

#[test]
fn undefined_combinations_are_refused_and_leave_inout_alone() {
    let mut refused = 0;
    for ty in BasicType::ALL {
        for op in PredefOp::ALL {
            assert_eq!(op.is_defined_for(ty), expected_defined(op, ty), "{op:?} on {ty:?}");
            if expected_defined(op, ty) {
                continue;
            }
            let input = vec![0x5a; 2 * ty.extent()];
            let mut inout = vec![0xa5; 2 * ty.extent()];
            assert_eq!(apply(op, ty, 2, &input, &mut inout), Err(OpError::NotDefined { op, ty }));
            assert!(inout.iter().all(|b| *b == 0xa5));
            refused += 1;
        }
    }
    // 40 types x 12 ops, less the defined ones: 23 integers x 10, 3 floats
    // x 7, 3 complexes x 2, C bool x 3, byte x 3, 8 pairs x 2.
    assert_eq!(refused, 40 * 12 - (230 + 21 + 6 + 3 + 3 + 16));
    let err = apply(PredefOp::Sum, CBool, 1, &[1], &mut [1]).unwrap_err();
    assert_eq!(err.to_string(), "MPI_SUM is not defined for MPI_C_BOOL (MPI-3.1 §5.9.2)");
}

fn enc_int(v: i128, size: usize) -> Vec<u8> {
    // Truncating casts: the reference's wrapping.
    match size {
        1 => (v as i8).to_ne_bytes().to_vec(),
        2 => (v as i16).to_ne_bytes().to_vec(),
        4 => (v as i32).to_ne_bytes().to_vec(),
        _ => (v as i64).to_ne_bytes().to_vec(),
    }
}

fn dec_int(b: &[u8], size: usize, signed: bool) -> i128 {
    match (size, signed) {
        (1, true) => i8::from_ne_bytes([b[0]]) as i128,
        (1, false) => b[0] as i128,
        (2, true) => i16::from_ne_bytes([b[0], b[1]]) as i128,
        (2, false) => u16::from_ne_bytes([b[0], b[1]]) as i128,
        (4, true) => i32::from_ne_bytes(b[..4].try_into().unwrap()) as i128,
        (4, false) => u32::from_ne_bytes(b[..4].try_into().unwrap()) as i128,
        (_, true) => i64::from_ne_bytes(b[..8].try_into().unwrap()) as i128,
        (_, false) => u64::from_ne_bytes(b[..8].try_into().unwrap()) as i128,
    }
}

fn int_reference(op: PredefOp, a: i128, b: i128) -> i128 {
    use PredefOp::*;
    let t = |x: bool| x as i128;
    match op {
        Max => a.max(b),
        Min => a.min(b),
        Sum => a + b,
        Prod => a.wrapping_mul(b),
        Land => t(a != 0 && b != 0),
        Lor => t(a != 0 || b != 0),
        Lxor => t((a != 0) != (b != 0)),
        Band => a & b,
        Bor => a | b,
        Bxor => a ^ b,
        Replace => a,
        Minloc | Maxloc | NoOp => b,
    }
}

#[test]
fn integer_ops_match_wrapping_reference() {
    // Chosen to hit overflow, sign, zero and bit-pattern cases in every width.
    let xs: [i128; 10] = [0, 5, -3, 100, 127, -128, 0x7fff_ffff, 3_000_000_000_000, -1, 0x55];
    let ys: [i128; 10] = [7, 0, -3, 100, 1, -1, 2, -2, 0x0f, 0xaa];
    for (ty, size, signed) in INTEGERS {
        let input: Vec<u8> = xs.iter().flat_map(|v| enc_int(*v, size)).collect();
        let start: Vec<u8> = ys.iter().flat_map(|v| enc_int(*v, size)).collect();
        for op in PredefOp::ALL {
            let mut inout = start.clone();
            let r = apply(op, ty, xs.len(), &input, &mut inout);
            if !expected_defined(op, ty) {
                assert!(r.is_err());
                continue;
            }
            r.unwrap();
            for i in 0..xs.len() {
                let a = dec_int(&input[i * size..], size, signed);
                let b = dec_int(&start[i * size..], size, signed);
                let want = enc_int(int_reference(op, a, b), size);
                assert_eq!(&inout[i * size..(i + 1) * size], &want[..], "{op:?} {ty:?} on {a} and {b}");
            }
        }
    }
}

#[test]
fn integer_overflow_wraps() {
    let mut io = i32::MAX.to_ne_bytes();
    apply(PredefOp::Sum, Int, 1, &1i32.to_ne_bytes(), &mut io).unwrap();
    assert_eq!(i32::from_ne_bytes(io), i32::MIN);
    let mut io = 200u8.to_ne_bytes();
    apply(PredefOp::Prod, UnsignedChar, 1, &[3], &mut io).unwrap();
    assert_eq!(io[0], 88); // 600 mod 256
                           // MPI_CHAR is signed on x86_64: 100 + 100 wraps negative, and max sees it.
    let mut io = [100u8];
    apply(PredefOp::Sum, Char, 1, &[100], &mut io).unwrap();
    assert_eq!(io[0] as i8, -56);
}

fn floats_of(ty: BasicType, v: &[f64]) -> Vec<u8> {
    match ty {
        Float => v.iter().flat_map(|x| (*x as f32).to_ne_bytes()).collect(),
        Double => v.iter().flat_map(|x| x.to_ne_bytes()).collect(),
        _ => v.iter().flat_map(|x| ld(*x)).collect(),
    }
}

fn read_floats(ty: BasicType, b: &[u8]) -> Vec<f64> {
    match ty {
        Float => b.chunks_exact(4).map(|c| f32::from_ne_bytes(c.try_into().unwrap()) as f64).collect(),
        Double => b.chunks_exact(8).map(|c| f64::from_ne_bytes(c.try_into().unwrap())).collect(),
        _ => b.chunks_exact(LD_SIZE).map(ld_f64).collect(),
    }
}

#[test]
fn floating_ops_match_reference() {
    // Values exact in every width so that the expected results are too.
    let xs = [1.5, -2.0, 3.25, 0.0, 1e10];
    let ys = [2.0, 4.0, -1.0, 7.5, -1e10];
    for ty in FLOATS {
        for (op, f) in [
            (PredefOp::Sum, (|a, b| a + b) as fn(f64, f64) -> f64),
            (PredefOp::Prod, |a, b| a * b),
            (PredefOp::Max, f64::max),
            (PredefOp::Min, f64::min),
        ] {
            let mut inout = floats_of(ty, &ys);
            apply(op, ty, xs.len(), &floats_of(ty, &xs), &mut inout).unwrap();
            let want: Vec<f64> = xs.iter().zip(ys).map(|(a, b)| f(*a, b)).collect();
            let want = read_floats(ty, &floats_of(ty, &want));
            assert_eq!(read_floats(ty, &inout), want, "{op:?} on {ty:?}");
        }
    }
}

#[test]
fn logical_ops_on_floating_types_give_one_or_zero() {
    // Non-zero (including -0.5 and 1e10) is true; -0.0 is zero.
    let xs = [0.0, 0.0, -0.5, 1e10, -0.0];
    let ys = [0.0, 2.0, 0.0, 3.0, 1.0];
    for ty in FLOATS {
        for (op, want) in
            [(PredefOp::Land, [0.0, 0.0, 0.0, 1.0, 0.0]), (PredefOp::Lor, [0.0, 1.0, 1.0, 1.0, 1.0]), (PredefOp::Lxor, [0.0, 1.0, 1.0, 0.0, 1.0])]
        {
            let mut inout = floats_of(ty, &ys);
            apply(op, ty, xs.len(), &floats_of(ty, &xs), &mut inout).unwrap();
            assert_eq!(read_floats(ty, &inout), want, "{op:?} on {ty:?}");
        }
    }
}

#[test]
fn complex_sum_and_product() {
    // (1 + 2i) + (3 - 4i) = 4 - 2i; (1 + 2i)(3 - 4i) = 11 + 2i; (0.5i)(0.5i) = -0.25
    let xs = [1.0, 2.0, 0.0, 0.5];
    let ys = [3.0, -4.0, 0.0, 0.5];
    for (ty, part) in [(CFloatComplex, Float), (CDoubleComplex, Double), (CLongDoubleComplex, LongDouble)] {
        let mut inout = floats_of(part, &ys);
        apply(PredefOp::Sum, ty, 2, &floats_of(part, &xs), &mut inout).unwrap();
        assert_eq!(read_floats(part, &inout), [4.0, -2.0, 0.0, 1.0], "sum on {ty:?}");
        let mut inout = floats_of(part, &ys);
        apply(PredefOp::Prod, ty, 2, &floats_of(part, &xs), &mut inout).unwrap();
        assert_eq!(read_floats(part, &inout), [11.0, 2.0, -0.25, 0.0], "prod on {ty:?}");
    }
}

#[test]
fn c_bool_logical_ops() {
    // Every combination, with 2 standing for a non-canonical true.
    let xs = [0u8, 0, 1, 1, 2];
    let ys = [0u8, 1, 0, 1, 1];
    for (op, want) in [(PredefOp::Land, [0u8, 0, 0, 1, 1]), (PredefOp::Lor, [0, 1, 1, 1, 1]), (PredefOp::Lxor, [0, 1, 1, 0, 0])] {
        let mut inout = ys;
        apply(op, CBool, 5, &xs, &mut inout).unwrap();
        assert_eq!(inout, want, "{op:?}");
    }
}

#[test]
fn byte_bitwise_ops() {
    for (op, want) in [(PredefOp::Band, [0x00u8, 0x0c]), (PredefOp::Bor, [0xff, 0x3f]), (PredefOp::Bxor, [0xff, 0x33])] {
        let mut inout = [0xaau8, 0x0f];
        apply(op, Byte, 2, &[0x55, 0x3c], &mut inout).unwrap();
        assert_eq!(inout, want, "{op:?}");
    }
}

/// One pair element: value bytes, index, padding filled with `pad`.
fn pair(ty: BasicType, value: f64, index: i32, pad: u8) -> Vec<u8> {
    // Fortran's pairs hold the index in the value's type.
    match ty {
        TwoFloat => return [(value as f32).to_ne_bytes(), (index as f32).to_ne_bytes()].concat(),
        TwoDouble => return [value.to_ne_bytes(), f64::from(index).to_ne_bytes()].concat(),
        _ => {}
    }
    let mut b = vec![pad; ty.extent()];
    let (v, at): (Vec<u8>, usize) = match ty {
        FloatInt => ((value as f32).to_ne_bytes().to_vec(), 4),
        DoubleInt => (value.to_ne_bytes().to_vec(), 8),
        LongInt => ((value as i64).to_ne_bytes().to_vec(), 8),
        TwoInt => ((value as i32).to_ne_bytes().to_vec(), 4),
        ShortInt => ((value as i16).to_ne_bytes().to_vec(), 4),
        _ => (ld(value).to_vec(), 16),
    };
    // x87 long doubles carry 6 bytes of padding inside their 16: compare
    // only what the reduction may change by building expected values alike.
    b[..v.len()].copy_from_slice(&v);
    b[at..at + 4].copy_from_slice(&index.to_ne_bytes());
    b
}

#[test]
fn minloc_maxloc_with_ties_taking_the_lower_index() {
    // (in, inout) -> expected for MINLOC and MAXLOC.
    let cases = [
        // in smaller
        ((1.0, 9), (2.0, 3), (1.0, 9), (2.0, 3)),
        // in larger
        ((5.0, 1), (2.0, 3), (2.0, 3), (5.0, 1)),
        // tie, lower index in `in`
        ((4.0, 2), (4.0, 7), (4.0, 2), (4.0, 2)),
        // tie, lower index in `inout`
        ((4.0, 7), (4.0, 2), (4.0, 2), (4.0, 2)),
        // negative values
        ((-3.0, 0), (-2.0, 1), (-3.0, 0), (-2.0, 1)),
    ];
    for ty in PAIRS {
        let input: Vec<u8> = cases.iter().flat_map(|c| pair(ty, c.0 .0, c.0 .1, 0x11)).collect();
        let start: Vec<u8> = cases.iter().flat_map(|c| pair(ty, c.1 .0, c.1 .1, 0xee)).collect();
        for (op, pick) in [(PredefOp::Minloc, 2), (PredefOp::Maxloc, 3)] {
            let mut inout = start.clone();
            apply(op, ty, cases.len(), &input, &mut inout).unwrap();
            let want: Vec<u8> = cases
                .iter()
                .flat_map(|c| {
                    let (v, i) = if pick == 2 { c.2 } else { c.3 };
                    pair(ty, v, i, 0xee)
                })
                .collect();
            if ty == LongDoubleInt {
                // Compare the numeric value and index; padding inside the x87
                // value is not ours to define.
                for (got, exp) in inout.chunks(32).zip(want.chunks(32)) {
                    assert_eq!(ld_f64(got), ld_f64(exp), "{op:?} {ty:?}");
                    assert_eq!(&got[16..], &exp[16..], "{op:?} {ty:?}");
                }
            } else {
                assert_eq!(inout, want, "{op:?} {ty:?} (padding must stay untouched)");
            }
        }
    }
}

#[test]
fn replace_and_no_op_on_any_type() {
    for ty in BasicType::ALL {
        let input = vec![1u8; 3 * ty.extent()];
        let mut inout = vec![2u8; 3 * ty.extent()];
        apply(PredefOp::NoOp, ty, 3, &input, &mut inout).unwrap();
        assert!(inout.iter().all(|b| *b == 2), "{ty:?}");
        apply(PredefOp::Replace, ty, 3, &input, &mut inout).unwrap();
        assert_eq!(inout, input, "{ty:?}");
    }
}

#[test]
fn buffer_lengths_are_checked() {
    let err = apply(PredefOp::Sum, Int, 2, &[0; 8], &mut [0; 7]).unwrap_err();
    assert_eq!(err, OpError::BufferLength { ty: Int, count: 2, needed: 8, input: 8, inout: 7 });
    // Pair extents include padding: 2 x MPI_DOUBLE_INT is 32 bytes, not 24.
    assert!(apply(PredefOp::Minloc, DoubleInt, 2, &[0; 24], &mut [0; 24]).is_err());
    assert!(apply(PredefOp::Sum, Int, usize::MAX, &[], &mut []).is_err());
}

#[test]
fn user_op_gets_operands_in_mpi_order() {
    // inout = in * 10 + inout on one-byte elements: order is visible.
    let f: super::UserFn = Arc::new(|input: &[u8], inout: &mut [u8], count: usize| {
        assert_eq!(count, 2);
        for (a, b) in input.iter().zip(inout.iter_mut()) {
            *b += *a * 10;
        }
    });
    let op = Op::User { func: f, commute: false };
    let mut inout = [3u8, 4];
    op.apply(Byte, 2, &[1, 2], &mut inout).unwrap();
    assert_eq!(inout, [13, 24]);
    assert!(!op.is_commutative());
}

#[test]
fn commutativity() {
    for op in PredefOp::ALL {
        let commutes = !matches!(op, PredefOp::Replace | PredefOp::NoOp);
        assert_eq!(Op::Predef(op).is_commutative(), commutes, "{op:?}");
    }
    let f: super::UserFn = Arc::new(|_: &[u8], _: &mut [u8], _: usize| {});
    assert!(Op::User { func: f, commute: true }.is_commutative());
}
