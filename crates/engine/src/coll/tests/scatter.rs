use super::{data, SIZES};
use crate::coll::testing::run;
use crate::coll::{scatter, scatterv, Blocks, CollComm};

#[test]
fn scatter_hands_each_rank_its_block() {
    for size in SIZES {
        for root in 0..size {
            for block in [0, 5] {
                let all: Vec<u8> = (0..size).flat_map(|r| data(r, block, 2)).collect();
                let out = run(size, |c| {
                    let send = if c.rank() == root { &all[..] } else { &[][..] };
                    let mut recv = vec![0; block];
                    scatter(c, send, Some(&mut recv), block, root).unwrap();
                    recv
                });
                for (r, (recv, _)) in out.iter().enumerate() {
                    assert_eq!(recv, &data(r, block, 2), "size {size} root {root} rank {r}");
                }
            }
        }
    }
}

#[test]
fn scatter_in_place_at_root_leaves_its_block() {
    for size in SIZES {
        for root in 0..size {
            let all: Vec<u8> = (0..size).flat_map(|r| data(r, 3, 6)).collect();
            let out = run(size, |c| {
                if c.rank() == root {
                    scatter(c, &all, None, 3, root).unwrap();
                    Vec::new()
                } else {
                    let mut recv = vec![0; 3];
                    scatter(c, &[], Some(&mut recv), 3, root).unwrap();
                    recv
                }
            });
            for (r, (recv, _)) in out.iter().enumerate().filter(|(r, _)| *r != root) {
                assert_eq!(recv, &data(r, 3, 6), "size {size} root {root} rank {r}");
            }
        }
    }
}

#[test]
fn scatterv_sends_variable_and_overlapping_blocks() {
    for size in SIZES {
        for root in 0..size {
            // Rank i gets `i % 4` bytes starting at byte i of one shared
            // buffer: blocks overlap, which MPI allows for sends.
            let counts: Vec<usize> = (0..size).map(|i| i % 4).collect();
            let displs: Vec<usize> = (0..size).collect();
            let send = data(99, size + 4, 1);
            let out = run(size, |c| {
                let r = c.rank();
                let mut recv = vec![0xee; counts[r]];
                if r != root {
                    scatterv(c, &[], Blocks::new(&[], &[]), Some(&mut recv), root).unwrap();
                } else if root % 2 == 0 {
                    scatterv(c, &send, Blocks::new(&counts, &displs), Some(&mut recv), root).unwrap();
                } else {
                    // MPI_IN_PLACE on odd roots: the root's buffer stays as it was.
                    scatterv(c, &send, Blocks::new(&counts, &displs), None, root).unwrap();
                }
                recv
            });
            for (r, (recv, _)) in out.iter().enumerate() {
                if r == root && root % 2 == 1 {
                    assert!(recv.iter().all(|b| *b == 0xee), "in-place root untouched");
                } else {
                    assert_eq!(recv, &send[r..r + counts[r]], "size {size} root {root} rank {r}");
                }
            }
        }
    }
}
