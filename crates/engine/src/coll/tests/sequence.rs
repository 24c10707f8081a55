//! Different collectives back to back, with roots that move, as a program
//! would call them: fixed per-family tags and per-(source, tag) order must
//! keep every message with its own call even when fast ranks run ahead.

use super::*;
use crate::coll::testing::run;
use crate::coll::*;

#[test]
fn mixed_collectives_in_sequence() {
    for size in [3, 7, 8] {
        let out = run(size, |c| {
            let r = c.rank();
            let mut log: Vec<Vec<u8>> = Vec::new();
            for round in 0..4 {
                let root = (round * 3) % size;
                let mut b = if r == root { data(root, 6, round) } else { vec![0; 6] };
                bcast(c, &mut b, root).unwrap();
                log.push(b);

                let mine = ints(&rank_ints(r, 2));
                let mut red = vec![0; 8];
                reduce(c, Some(&mine), &mut red, 2, BasicType::Int, &sum(), root).unwrap();
                if r == root {
                    log.push(red);
                }

                let mut all = mat_bytes(&rank_mats(r, 1));
                allreduce(c, None, &mut all, 4, MAT_TY, &matmul_op()).unwrap();
                log.push(all);

                let mut g = vec![0; 2 * size];
                allgather(c, Some(&data(r, 2, round)), &mut g, 2).unwrap();
                log.push(g);

                barrier(c).unwrap();

                let mut s = vec![0; 16];
                scan(c, Some(&mat_bytes(&rank_mats(r, 1))), &mut s, 4, MAT_TY, &matmul_op()).unwrap();
                log.push(s);
            }
            log
        });
        for (r, (log, _)) in out.iter().enumerate() {
            let mut want: Vec<Vec<u8>> = Vec::new();
            for round in 0..4 {
                let root = (round * 3) % size;
                want.push(data(root, 6, round));
                if r == root {
                    want.push(ints(&sum_of(0..size, 2)));
                }
                want.push(mat_bytes(&product_of(0..size, 1)));
                want.push((0..size).flat_map(|i| data(i, 2, round)).collect());
                want.push(mat_bytes(&product_of(0..=r, 1)));
            }
            assert_eq!(log, &want, "size {size} rank {r}");
        }
    }
}
