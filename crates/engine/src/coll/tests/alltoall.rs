use super::SIZES;
use crate::coll::testing::run;
use crate::coll::{alltoall, alltoallv, Blocks, CollComm};

/// The bytes rank `from` sends to rank `to`.
fn piece(from: usize, to: usize, len: usize) -> Vec<u8> {
    (0..len).map(|i| (from * 16 + to * 3 + i) as u8).collect()
}

#[test]
fn alltoall_transposes_blocks_in_one_step() {
    for size in SIZES {
        for in_place in [false, true] {
            let out = run(size, |c| {
                let r = c.rank();
                let send: Vec<u8> = (0..size).flat_map(|to| piece(r, to, 3)).collect();
                let mut recv = if in_place { send.clone() } else { vec![0; 3 * size] };
                alltoall(c, (!in_place).then_some(&send[..]), &mut recv, 3).unwrap();
                recv
            });
            for (r, (recv, ex)) in out.iter().enumerate() {
                let want: Vec<u8> = (0..size).flat_map(|from| piece(from, r, 3)).collect();
                assert_eq!(recv, &want, "size {size} rank {r} in place {in_place}");
                assert_eq!(*ex, usize::from(size > 1), "one exchange: one wide-area round trip");
            }
        }
    }
}

#[test]
fn alltoallv_with_variable_counts() {
    for size in SIZES {
        // count(i -> j) = (i + 2j) % 3, zero included.
        let count = |i: usize, j: usize| (i + 2 * j) % 3;
        let out = run(size, |c| {
            let r = c.rank();
            let scounts: Vec<usize> = (0..size).map(|j| count(r, j)).collect();
            let sdispls: Vec<usize> = (0..size).map(|j| scounts[..j].iter().sum()).collect();
            let send: Vec<u8> = (0..size).flat_map(|j| piece(r, j, scounts[j])).collect();
            // Receive in reverse rank order with a gap byte after each block.
            let rcounts: Vec<usize> = (0..size).map(|i| count(i, r)).collect();
            let mut rdispls = vec![0; size];
            let mut at = 0;
            for i in (0..size).rev() {
                rdispls[i] = at;
                at += rcounts[i] + 1;
            }
            let mut recv = vec![0xee; at];
            alltoallv(c, Some((&send, Blocks::new(&scounts, &sdispls))), &mut recv, Blocks::new(&rcounts, &rdispls)).unwrap();
            (recv, rcounts, rdispls)
        });
        for (r, ((recv, rcounts, rdispls), _)) in out.iter().enumerate() {
            let mut want = vec![0xee; recv.len()];
            for i in 0..size {
                want[rdispls[i]..rdispls[i] + rcounts[i]].copy_from_slice(&piece(i, r, count(i, r)));
            }
            assert_eq!(recv, &want, "size {size} rank {r}");
        }
    }
}

#[test]
fn alltoallv_in_place() {
    for size in SIZES {
        let out = run(size, |c| {
            let r = c.rank();
            let counts: Vec<usize> = (0..size).map(|j| (r + j) % 2 + 1).collect();
            let displs: Vec<usize> = (0..size).map(|j| counts[..j].iter().sum()).collect();
            let mut buf: Vec<u8> = (0..size).flat_map(|j| piece(r, j, counts[j])).collect();
            alltoallv(c, None, &mut buf, Blocks::new(&counts, &displs)).unwrap();
            buf
        });
        for (r, (buf, _)) in out.iter().enumerate() {
            let want: Vec<u8> = (0..size).flat_map(|i| piece(i, r, (i + r) % 2 + 1)).collect();
            assert_eq!(buf, &want, "size {size} rank {r}");
        }
    }
}

#[test]
fn alltoallv_with_overlapping_receive_blocks_leaves_the_highest_rank_where_they_meet() {
    for size in SIZES {
        let out = run(size, |c| {
            let r = c.rank();
            // Rank r sends i + 1 bytes to rank i, placed at 0 there by every sender.
            let scounts: Vec<usize> = vec![r + 1; size];
            let sdispls: Vec<usize> = (0..size).map(|j| j * (r + 1)).collect();
            let send: Vec<u8> = (0..size).flat_map(|j| piece(r, j, r + 1)).collect();
            let rcounts: Vec<usize> = (0..size).map(|i| i + 1).collect();
            let mut recv = vec![0xee; size + 1];
            alltoallv(c, Some((&send, Blocks::new(&scounts, &sdispls))), &mut recv, Blocks::new(&rcounts, &vec![0; size])).unwrap();
            recv
        });
        for (r, (recv, _)) in out.iter().enumerate() {
            let mut want = piece(size - 1, r, size);
            want.push(0xee);
            assert_eq!(recv, &want, "size {size} rank {r}");
        }
    }
}
