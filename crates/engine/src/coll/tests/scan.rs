use super::*;
use crate::coll::testing::run;
use crate::coll::{exscan, scan, CollComm};

#[test]
fn scan_sum_is_the_inclusive_prefix() {
    for size in SIZES {
        for in_place in [false, true] {
            let out = run(size, |c| {
                let mine = ints(&rank_ints(c.rank(), 3));
                let mut recv = if in_place { mine.clone() } else { vec![0; 12] };
                scan(c, (!in_place).then_some(&mine[..]), &mut recv, 3, BasicType::Int, &sum()).unwrap();
                recv
            });
            for (r, (recv, _)) in out.iter().enumerate() {
                assert_eq!(read_ints(recv), sum_of(0..=r, 3), "size {size} rank {r} in place {in_place}");
            }
        }
    }
}

#[test]
fn scan_non_commutative_keeps_rank_order() {
    for size in SIZES {
        let out = run(size, |c| {
            let mut recv = mat_bytes(&rank_mats(c.rank(), 2));
            scan(c, None, &mut recv, 8, MAT_TY, &matmul_op()).unwrap();
            recv
        });
        for (r, (recv, _)) in out.iter().enumerate() {
            assert_eq!(recv, &mat_bytes(&product_of(0..=r, 2)), "size {size} rank {r}");
        }
    }
}

#[test]
fn exscan_is_the_exclusive_prefix_and_leaves_rank_0_alone() {
    for size in SIZES {
        for in_place in [false, true] {
            let out = run(size, |c| {
                let mine = mat_bytes(&rank_mats(c.rank(), 2));
                let mut recv = if in_place { mine.clone() } else { vec![0xee; 32] };
                exscan(c, (!in_place).then_some(&mine[..]), &mut recv, 8, MAT_TY, &matmul_op()).unwrap();
                recv
            });
            let untouched = if in_place { mat_bytes(&rank_mats(0, 2)) } else { vec![0xee; 32] };
            assert_eq!(out[0].0, untouched, "size {size}: rank 0 must be left alone");
            for (r, (recv, _)) in out.iter().enumerate().skip(1) {
                assert_eq!(recv, &mat_bytes(&product_of(0..r, 2)), "size {size} rank {r} in place {in_place}");
            }
        }
    }
}

#[test]
fn exscan_sum() {
    for size in SIZES {
        let out = run(size, |c| {
            let mut recv = vec![0; 8];
            let mine = ints(&rank_ints(c.rank(), 2));
            exscan(c, Some(&mine), &mut recv, 2, BasicType::Int, &sum()).unwrap();
            recv
        });
        for (r, (recv, _)) in out.iter().enumerate().skip(1) {
            assert_eq!(read_ints(recv), sum_of(0..r, 2), "size {size} rank {r}");
        }
    }
}
