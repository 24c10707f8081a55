use super::{data, SIZES};
use crate::coll::testing::run;
use crate::coll::{allgather, allgatherv, Blocks, CollComm};

#[test]
fn allgather_gives_everyone_all_blocks() {
    for size in SIZES {
        for in_place in [false, true] {
            let out = run(size, |c| {
                let r = c.rank();
                let mut recv = vec![0; 3 * size];
                if in_place {
                    recv[r * 3..r * 3 + 3].copy_from_slice(&data(r, 3, 5));
                    allgather(c, None, &mut recv, 3).unwrap();
                } else {
                    allgather(c, Some(&data(r, 3, 5)), &mut recv, 3).unwrap();
                }
                recv
            });
            let want: Vec<u8> = (0..size).flat_map(|r| data(r, 3, 5)).collect();
            for (r, (recv, ex)) in out.iter().enumerate() {
                assert_eq!(recv, &want, "size {size} rank {r} in place {in_place}");
                assert_eq!(*ex, size.next_power_of_two().trailing_zeros() as usize, "Bruck rounds");
            }
        }
    }
}

#[test]
fn allgatherv_with_variable_blocks_and_gaps() {
    for size in SIZES {
        for in_place in [false, true] {
            // Zero-length blocks included; reversed placement with gaps.
            let counts: Vec<usize> = (0..size).map(|i| (i * 5) % 4).collect();
            let mut displs = vec![0; size];
            let mut at = 2;
            for i in (0..size).rev() {
                displs[i] = at;
                at += counts[i] + 2;
            }
            let out = run(size, |c| {
                let r = c.rank();
                let mine = data(r, counts[r], 8);
                let mut recv = vec![0xee; at];
                let send = if in_place {
                    recv[displs[r]..displs[r] + counts[r]].copy_from_slice(&mine);
                    None
                } else {
                    Some(&mine[..])
                };
                allgatherv(c, send, &mut recv, Blocks::new(&counts, &displs)).unwrap();
                recv
            });
            let mut want = vec![0xee; at];
            for i in 0..size {
                want[displs[i]..displs[i] + counts[i]].copy_from_slice(&data(i, counts[i], 8));
            }
            for (r, (recv, _)) in out.iter().enumerate() {
                assert_eq!(recv, &want, "size {size} rank {r} in place {in_place}");
            }
        }
    }
}

#[test]
fn allgatherv_with_overlapping_blocks_leaves_the_highest_rank_where_they_meet() {
    for size in SIZES {
        for in_place in [false, true] {
            // Every block starts at 0 (MPICH's allgatherv4 does this); rank
            // i's block is i + 1 bytes long.
            let counts: Vec<usize> = (0..size).map(|i| i + 1).collect();
            let displs = vec![0; size];
            let out = run(size, |c| {
                let r = c.rank();
                let mine = data(r, counts[r], 3);
                let mut recv = vec![0xee; size + 1];
                let send = if in_place {
                    recv[..counts[r]].copy_from_slice(&mine);
                    None
                } else {
                    Some(&mine[..])
                };
                allgatherv(c, send, &mut recv, Blocks::new(&counts, &displs)).unwrap();
                recv
            });
            // The last rank's block covers all the others.
            let mut want = data(size - 1, size, 3);
            want.push(0xee);
            for (r, (recv, _)) in out.iter().enumerate() {
                assert_eq!(recv, &want, "size {size} rank {r} in place {in_place}");
            }
        }
    }
}
