//! Every collective against a straightforward reference, on 1, 2, 3, 4, 7
//! and 8 ranks (powers of two and not), over the threaded test comm.

mod allgather;
mod alltoall;
mod barrier;
mod bcast;
mod errors;
mod gather;
mod hier;
mod reduce;
mod reduce_scatter;
mod scan;
mod scatter;
mod sequence;
mod sites;

use std::sync::Arc;

use crate::datatype::BasicType;
use crate::op::{Op, PredefOp, UserFn};

pub(super) const SIZES: [usize; 6] = [1, 2, 3, 4, 7, 8];

/// Distinct bytes for each (rank, salt), so misplaced blocks show.
pub(super) fn data(rank: usize, len: usize, salt: usize) -> Vec<u8> {
    (0..len).map(|i| (rank * 37 + i * 11 + salt * 101 + 1) as u8).collect()
}

pub(super) fn ints(v: &[i32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_ne_bytes()).collect()
}

pub(super) fn read_ints(b: &[u8]) -> Vec<i32> {
    b.chunks_exact(4).map(|c| i32::from_ne_bytes(c.try_into().unwrap())).collect()
}

/// A rank's `count` ints for sum tests: large enough to wrap when summed.
pub(super) fn rank_ints(rank: usize, count: usize) -> Vec<i32> {
    (0..count).map(|i| (rank as i32 + 1).wrapping_mul(1_000_000_007_i32.wrapping_mul(i as i32 + 1))).collect()
}

pub(super) fn sum() -> Op {
    Op::Predef(PredefOp::Sum)
}

/// Element-wise wrapping sum of `rank_ints` over `ranks`.
pub(super) fn sum_of(ranks: impl Iterator<Item = usize>, count: usize) -> Vec<i32> {
    let mut acc = vec![0i32; count];
    for r in ranks {
        for (a, v) in acc.iter_mut().zip(rank_ints(r, count)) {
            *a = a.wrapping_add(v);
        }
    }
    acc
}

/// 2x2 matrices of u32 (row-major, wrapping), one per 4 elements of
/// MPI_UINT32_T: matrix multiplication is not commutative, so any algorithm
/// that combines out of rank order gets a different product.
pub(super) const MAT_TY: BasicType = BasicType::Uint32;
pub(super) type Mat = [u32; 4];

pub(super) fn matmul(a: Mat, b: Mat) -> Mat {
    [
        a[0].wrapping_mul(b[0]).wrapping_add(a[1].wrapping_mul(b[2])),
        a[0].wrapping_mul(b[1]).wrapping_add(a[1].wrapping_mul(b[3])),
        a[2].wrapping_mul(b[0]).wrapping_add(a[3].wrapping_mul(b[2])),
        a[2].wrapping_mul(b[1]).wrapping_add(a[3].wrapping_mul(b[3])),
    ]
}

pub(super) fn matmul_op() -> Op {
    let f: UserFn = Arc::new(|input: &[u8], inout: &mut [u8], count: usize| {
        assert_eq!(count % 4, 0, "whole matrices only");
        for (a, b) in input.chunks_exact(16).zip(inout.chunks_exact_mut(16)) {
            let p = matmul(read_mat(a), read_mat(b));
            b.copy_from_slice(&mat_bytes(&[p]));
        }
    });
    Op::User { func: f, commute: false }
}

pub(super) fn read_mat(b: &[u8]) -> Mat {
    let mut m = [0u32; 4];
    for (i, v) in m.iter_mut().enumerate() {
        *v = u32::from_ne_bytes(b[i * 4..i * 4 + 4].try_into().unwrap());
    }
    m
}

pub(super) fn mat_bytes(ms: &[Mat]) -> Vec<u8> {
    ms.iter().flat_map(|m| m.iter().flat_map(|v| v.to_ne_bytes())).collect()
}

/// `n` matrices for `rank`.
pub(super) fn rank_mats(rank: usize, n: usize) -> Vec<Mat> {
    (0..n)
        .map(|j| {
            let (r, j) = (rank as u32, j as u32);
            [r * 3 + j + 1, r + 2, j * 5 + 1, r * r + 7]
        })
        .collect()
}

/// The ordered product of `rank_mats` over `ranks` (lowest rank leftmost).
pub(super) fn product_of(ranks: impl Iterator<Item = usize>, n: usize) -> Vec<Mat> {
    let mut acc: Vec<Mat> = vec![[1, 0, 0, 1]; n];
    for r in ranks {
        for (a, m) in acc.iter_mut().zip(rank_mats(r, n)) {
            *a = matmul(*a, m);
        }
    }
    acc
}

#[test]
fn matrices_do_not_commute() {
    let (a, b) = (rank_mats(0, 1)[0], rank_mats(1, 1)[0]);
    assert_ne!(matmul(a, b), matmul(b, a));
}
