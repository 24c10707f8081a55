use super::{data, SIZES};
use crate::coll::testing::run;
use crate::coll::{gather, gatherv, Blocks, CollComm};

#[test]
fn gather_puts_each_block_in_rank_order() {
    for size in SIZES {
        for root in 0..size {
            for block in [0, 3] {
                let out = run(size, |c| {
                    let mut recv = if c.rank() == root { vec![0; block * size] } else { Vec::new() };
                    let mine = data(c.rank(), block, 0);
                    gather(c, Some(&mine), &mut recv, block, root).unwrap();
                    recv
                });
                let want: Vec<u8> = (0..size).flat_map(|r| data(r, block, 0)).collect();
                assert_eq!(out[root].0, want, "size {size} root {root} block {block}");
            }
        }
    }
}

#[test]
fn gather_in_place_at_root() {
    for size in SIZES {
        for root in 0..size {
            let out = run(size, |c| {
                if c.rank() == root {
                    let mut recv = vec![0; 4 * size];
                    recv[root * 4..root * 4 + 4].copy_from_slice(&data(root, 4, 9));
                    gather(c, None, &mut recv, 4, root).unwrap();
                    recv
                } else {
                    let mine = data(c.rank(), 4, 9);
                    gather(c, Some(&mine), &mut [], 4, root).unwrap();
                    Vec::new()
                }
            });
            let want: Vec<u8> = (0..size).flat_map(|r| data(r, 4, 9)).collect();
            assert_eq!(out[root].0, want, "size {size} root {root}");
        }
    }
}

/// Rank i sends `i % 3 + i / 4` bytes (some zero); the root stores them in
/// reverse rank order with one-byte gaps that must stay untouched.
fn v_layout(size: usize) -> (Vec<usize>, Vec<usize>, usize) {
    let counts: Vec<usize> = (0..size).map(|i| i % 3 + i / 4).collect();
    let mut displs = vec![0; size];
    let mut at = 1;
    for i in (0..size).rev() {
        displs[i] = at;
        at += counts[i] + 1;
    }
    (counts, displs, at)
}

#[test]
fn gatherv_places_variable_blocks_at_their_displacements() {
    for size in SIZES {
        for root in 0..size {
            for in_place in [false, true] {
                let (counts, displs, len) = v_layout(size);
                let out = run(size, |c| {
                    let r = c.rank();
                    let mine = data(r, counts[r], 4);
                    if r != root {
                        gatherv(c, Some(&mine), &mut [], Blocks::new(&[], &[]), root).unwrap();
                        return Vec::new();
                    }
                    let mut recv = vec![0xee; len];
                    let send = if in_place {
                        recv[displs[r]..displs[r] + counts[r]].copy_from_slice(&mine);
                        None
                    } else {
                        Some(&mine[..])
                    };
                    gatherv(c, send, &mut recv, Blocks::new(&counts, &displs), root).unwrap();
                    recv
                });
                let mut want = vec![0xee; len];
                for i in 0..size {
                    want[displs[i]..displs[i] + counts[i]].copy_from_slice(&data(i, counts[i], 4));
                }
                assert_eq!(out[root].0, want, "size {size} root {root} in place {in_place}");
            }
        }
    }
}

#[test]
fn gatherv_with_overlapping_blocks_leaves_the_highest_rank_where_they_meet() {
    for size in SIZES {
        for root in [0, size - 1] {
            // Every block at 0, rank i's i + 1 bytes long.
            let counts: Vec<usize> = (0..size).map(|i| i + 1).collect();
            let displs = vec![0; size];
            let out = run(size, |c| {
                let r = c.rank();
                let mine = data(r, counts[r], 4);
                let mut recv = vec![0xee; size + 1];
                gatherv(c, Some(&mine), &mut recv, Blocks::new(&counts, &displs), root).unwrap();
                recv
            });
            let mut want = data(size - 1, size, 4);
            want.push(0xee);
            assert_eq!(out[root].0, want, "size {size} root {root}");
        }
    }
}
