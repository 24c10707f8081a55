use super::*;
use crate::coll::testing::run;
use crate::coll::{reduce_scatter, reduce_scatter_block, CollComm};

#[test]
fn reduce_scatter_sum_with_variable_counts() {
    for size in SIZES {
        for in_place in [false, true] {
            let counts: Vec<usize> = (0..size).map(|i| (i * 2) % 3).collect();
            let total: usize = counts.iter().sum();
            let out = run(size, |c| {
                let r = c.rank();
                let mine = ints(&rank_ints(r, total));
                let mut recv = if in_place { mine.clone() } else { vec![0; 4 * counts[r]] };
                reduce_scatter(c, (!in_place).then_some(&mine[..]), &mut recv, &counts, BasicType::Int, &sum()).unwrap();
                recv.truncate(4 * counts[r]);
                recv
            });
            let full = sum_of(0..size, total);
            let mut at = 0;
            for (r, (recv, _)) in out.iter().enumerate() {
                assert_eq!(read_ints(recv), &full[at..at + counts[r]], "size {size} rank {r} in place {in_place}");
                at += counts[r];
            }
        }
    }
}

#[test]
fn reduce_scatter_block_non_commutative() {
    for size in SIZES {
        for in_place in [false, true] {
            let out = run(size, |c| {
                let mine = mat_bytes(&rank_mats(c.rank(), size));
                let mut recv = if in_place { mine.clone() } else { vec![0; 16] };
                let send = (!in_place).then_some(&mine[..]);
                reduce_scatter_block(c, send, &mut recv, 4, MAT_TY, &matmul_op()).unwrap();
                recv.truncate(16);
                recv
            });
            let full = product_of(0..size, size);
            for (r, (recv, _)) in out.iter().enumerate() {
                assert_eq!(recv, &mat_bytes(&full[r..r + 1]), "size {size} rank {r} in place {in_place}");
            }
        }
    }
}
