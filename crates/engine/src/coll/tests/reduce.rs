use super::*;
use crate::coll::testing::run;
use crate::coll::{allreduce, reduce, CollComm};

const COUNT: usize = 5;

#[test]
fn reduce_sum_reaches_the_root_only() {
    for size in SIZES {
        for root in 0..size {
            let out = run(size, |c| {
                let mut recv = vec![0xee; 4 * COUNT];
                let mine = ints(&rank_ints(c.rank(), COUNT));
                reduce(c, Some(&mine), &mut recv, COUNT, BasicType::Int, &sum(), root).unwrap();
                recv
            });
            for (r, (recv, _)) in out.iter().enumerate() {
                if r == root {
                    assert_eq!(read_ints(recv), sum_of(0..size, COUNT), "size {size} root {root}");
                } else {
                    assert!(recv.iter().all(|b| *b == 0xee), "non-root recv touched");
                }
            }
        }
    }
}

#[test]
fn reduce_in_place_at_root() {
    for size in SIZES {
        for root in 0..size {
            let out = run(size, |c| {
                let mine = ints(&rank_ints(c.rank(), COUNT));
                if c.rank() == root {
                    let mut recv = mine;
                    reduce(c, None, &mut recv, COUNT, BasicType::Int, &sum(), root).unwrap();
                    recv
                } else {
                    reduce(c, Some(&mine), &mut [], COUNT, BasicType::Int, &sum(), root).unwrap();
                    Vec::new()
                }
            });
            assert_eq!(read_ints(&out[root].0), sum_of(0..size, COUNT), "size {size} root {root}");
        }
    }
}

#[test]
fn reduce_non_commutative_keeps_rank_order() {
    for size in SIZES {
        for root in 0..size {
            let out = run(size, |c| {
                let mut recv = vec![0; 16 * 3];
                let mine = mat_bytes(&rank_mats(c.rank(), 3));
                reduce(c, Some(&mine), &mut recv, 12, MAT_TY, &matmul_op(), root).unwrap();
                recv
            });
            assert_eq!(out[root].0, mat_bytes(&product_of(0..size, 3)), "size {size} root {root}");
        }
    }
}

#[test]
fn reduce_minloc_ties_pick_the_lowest_rank() {
    // Values repeat every 3 ranks; the minimum 0 is held by ranks 0, 3, 6.
    for size in SIZES {
        let out = run(size, |c| {
            let r = c.rank() as i32;
            let mine = ints(&[5 - r % 3, r, r % 3, r]);
            let mut recv = vec![0; 16];
            reduce(c, Some(&mine), &mut recv, 2, BasicType::TwoInt, &Op::Predef(PredefOp::Minloc), size - 1).unwrap();
            recv
        });
        let top = (size as i32 - 1).min(2);
        let lowest_with_top = top;
        assert_eq!(read_ints(&out[size - 1].0), [5 - top, lowest_with_top, 0, 0], "size {size}");
    }
}

#[test]
fn allreduce_sum_on_every_rank() {
    for size in SIZES {
        for in_place in [false, true] {
            let out = run(size, |c| {
                let mine = ints(&rank_ints(c.rank(), COUNT));
                let mut recv = if in_place { mine.clone() } else { vec![0; 4 * COUNT] };
                let send = (!in_place).then_some(&mine[..]);
                allreduce(c, send, &mut recv, COUNT, BasicType::Int, &sum()).unwrap();
                recv
            });
            for (recv, _) in &out {
                assert_eq!(read_ints(recv), sum_of(0..size, COUNT), "size {size} in place {in_place}");
            }
        }
    }
}

#[test]
fn allreduce_non_commutative_keeps_rank_order() {
    for size in SIZES {
        let out = run(size, |c| {
            let mut recv = mat_bytes(&rank_mats(c.rank(), 2));
            allreduce(c, None, &mut recv, 8, MAT_TY, &matmul_op()).unwrap();
            recv
        });
        for (r, (recv, _)) in out.iter().enumerate() {
            assert_eq!(recv, &mat_bytes(&product_of(0..size, 2)), "size {size} rank {r}");
        }
    }
}

#[test]
fn allreduce_doubles_max() {
    let out = run(7, |c| {
        let r = c.rank() as f64;
        let mine: Vec<u8> = [r, -r, (r - 3.0).abs()].iter().flat_map(|v| v.to_ne_bytes()).collect();
        let mut recv = vec![0; 24];
        allreduce(c, Some(&mine), &mut recv, 3, BasicType::Double, &Op::Predef(PredefOp::Max)).unwrap();
        recv
    });
    for (recv, _) in out {
        let got: Vec<f64> = recv.chunks_exact(8).map(|c| f64::from_ne_bytes(c.try_into().unwrap())).collect();
        assert_eq!(got, [6.0, 0.0, 3.0]);
    }
}

#[test]
fn allreduce_rounds_are_logarithmic() {
    // Power of two: log2 p exchanges per rank; otherwise at most 2 more.
    for size in SIZES {
        let out = run(size, |c| {
            let mut recv = vec![0; 4];
            allreduce(c, Some(&[0; 4]), &mut recv, 1, BasicType::Int, &sum()).unwrap();
        });
        let log = size.next_power_of_two().trailing_zeros() as usize;
        let most = out.iter().map(|(_, ex)| *ex).max().unwrap_or(0);
        if size.is_power_of_two() {
            assert_eq!(most, log, "size {size}");
        } else {
            assert!(most <= log + 1, "size {size}: {most} exchanges");
        }
    }
}
