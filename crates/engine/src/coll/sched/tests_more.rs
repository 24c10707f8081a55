//! The reduce, scan and one-round schedules against the blocking
//! algorithms and references, on the threaded channel port of `tests.rs`.

use super::tests::{finish, one, run};
use super::{direct, fold, reduce, scan, Block, LocalCopy};
use crate::coll::tests::{data, ints, mat_bytes, matmul_op, product_of, rank_ints, rank_mats, read_ints, sum, sum_of, MAT_TY, SIZES};
use crate::coll::CollComm;
use crate::datatype::BasicType;
use crate::op::{Op, PredefOp};

#[test]
fn reduce_equals_the_blocking_algorithm_at_every_root() {
    for size in SIZES.into_iter().chain([5, 9]) {
        for root in 0..size {
            for op in [PredefOp::Sum, PredefOp::Max, PredefOp::Bxor] {
                let op = Op::Predef(op);
                let blocking = crate::coll::testing::run(size, |c| {
                    let (mut r, mine) = (vec![0u8; 12], ints(&rank_ints(c.rank(), 3)));
                    crate::coll::reduce(c, Some(&mine), &mut r, 3, BasicType::Int, &op, root).unwrap();
                    r
                });
                let sched = run(size, |rank, p| one(p, reduce(rank, size, ints(&rank_ints(rank, 3)), 3, BasicType::Int, &op, root, 4).unwrap()));
                assert_eq!(blocking[root].0, sched[root], "size {size} root {root} {op:?}");
            }
        }
    }
}

#[test]
fn reduce_keeps_rank_order_for_non_commutative_ops_at_any_root() {
    for size in 1..=9 {
        for root in [0, size / 2, size - 1] {
            let out = run(size, |rank, p| one(p, reduce(rank, size, mat_bytes(&rank_mats(rank, 2)), 8, MAT_TY, &matmul_op(), root, 9).unwrap()));
            assert_eq!(out[root], mat_bytes(&product_of(0..size, 2)), "size {size} root {root}");
        }
    }
}

#[test]
fn scan_and_exscan_give_every_prefix_in_rank_order() {
    for size in 1..=9 {
        let out = run(size, |rank, p| one(p, scan(rank, size, ints(&rank_ints(rank, 4)), vec![0; 16], true, 4, BasicType::Int, &sum(), 2).unwrap()));
        for (r, b) in out.iter().enumerate() {
            assert_eq!(read_ints(b), sum_of(0..=r, 4), "scan size {size} rank {r}");
        }
        let out = run(size, |rank, p| one(p, scan(rank, size, ints(&rank_ints(rank, 4)), vec![7; 16], false, 4, BasicType::Int, &sum(), 3).unwrap()));
        assert_eq!(out[0], vec![7; 16], "exscan leaves rank 0's buffer alone");
        for (r, b) in out.iter().enumerate().skip(1) {
            assert_eq!(read_ints(b), sum_of(0..r, 4), "exscan size {size} rank {r}");
        }
        let out =
            run(size, |rank, p| one(p, scan(rank, size, mat_bytes(&rank_mats(rank, 1)), vec![0; 16], true, 4, MAT_TY, &matmul_op(), 5).unwrap()));
        for (r, b) in out.iter().enumerate() {
            assert_eq!(*b, mat_bytes(&product_of(0..=r, 1)), "matmul scan size {size} rank {r}");
        }
    }
}

/// All-to-all as one round: block j of rank i lands as block i of rank j.
fn alltoall(rank: usize, size: usize, block: usize, seq: u32) -> super::Schedule {
    let input: Vec<u8> = (0..size).flat_map(|j| data(rank * 100 + j, block, 1)).collect();
    let others = (0..size).filter(|&j| j != rank);
    let sends: Vec<Block> = others.clone().map(|j| Block { peer: j, at: j * block, len: block, family: 10 }).collect();
    let recvs: Vec<Block> = others.map(|j| Block { peer: j, at: j * block, len: block, family: 10 }).collect();
    let copies = [LocalCopy { from: rank * block, to: rank * block, len: block }];
    direct(vec![0; size * block], input, &sends, &recvs, &copies, seq).unwrap()
}

#[test]
fn one_round_alltoall_places_every_block() {
    for size in SIZES {
        let out = run(size, |rank, p| one(p, alltoall(rank, size, 5, 1)));
        for (r, b) in out.iter().enumerate() {
            let want: Vec<u8> = (0..size).flat_map(|j| data(j * 100 + r, 5, 1)).collect();
            assert_eq!(*b, want, "size {size} rank {r}");
        }
    }
}

#[test]
fn one_round_keeps_the_output_where_no_block_lands() {
    // A gather to rank 0 whose own block is already in place (MPI_IN_PLACE).
    let out = run(3, |rank, p| {
        let s = if rank == 0 {
            let recvs = [Block { peer: 1, at: 2, len: 2, family: 5 }, Block { peer: 2, at: 4, len: 2, family: 5 }];
            direct(vec![9, 9, 0, 0, 0, 0], vec![], &[], &recvs, &[], 0).unwrap()
        } else {
            direct(vec![], vec![rank as u8; 2], &[Block { peer: 0, at: 0, len: 2, family: 5 }], &[], &[], 0).unwrap()
        };
        one(p, s)
    });
    assert_eq!(out[0], vec![9, 9, 1, 1, 2, 2]);
}

#[test]
fn same_peer_and_family_match_in_posting_order() {
    // Two blocks each way between two ranks on one family: order decides.
    let out = run(2, |rank, p| {
        let peer = 1 - rank;
        let input = vec![rank as u8 * 10, rank as u8 * 10 + 1];
        let blocks = [Block { peer, at: 0, len: 1, family: 20 }, Block { peer, at: 1, len: 1, family: 20 }];
        one(p, direct(vec![0; 2], input, &blocks, &blocks, &[], 0).unwrap())
    });
    assert_eq!(out, vec![vec![10, 11], vec![0, 1]]);
}

#[test]
fn mixed_outstanding_schedules_stay_apart() {
    for size in [2, 3, 5] {
        let out = run(size, |rank, p| {
            let scheds = vec![
                alltoall(rank, size, 3, 0),
                reduce(rank, size, ints(&rank_ints(rank, 2)), 2, BasicType::Int, &sum(), size - 1, 1).unwrap(),
                alltoall(rank, size, 3, 2),
                scan(rank, size, ints(&rank_ints(rank, 2)), vec![0; 8], true, 2, BasicType::Int, &sum(), 3).unwrap(),
            ];
            let order: Vec<usize> = if rank % 2 == 0 { vec![3, 2, 1, 0] } else { vec![0, 1, 2, 3] };
            finish(p, scheds, &order)
        });
        for (r, res) in out.iter().enumerate() {
            let want: Vec<u8> = (0..size).flat_map(|j| data(j * 100 + r, 3, 1)).collect();
            assert_eq!(res[0], want, "size {size} rank {r}");
            assert_eq!(res[2], want, "size {size} rank {r}");
            assert_eq!(read_ints(&res[3]), sum_of(0..=r, 2), "size {size} rank {r}");
        }
        assert_eq!(read_ints(&out[size - 1][1]), sum_of(0..size, 2));
    }
}

#[test]
fn blocks_outside_their_buffers_are_refused() {
    let b = [Block { peer: 1, at: 3, len: 2, family: 5 }];
    assert!(direct(vec![0; 4], vec![], &[], &b, &[], 0).is_err());
    assert!(direct(vec![], vec![0; 4], &b, &[], &[], 0).is_err());
    assert!(direct(vec![0; 2], vec![0; 2], &[], &[], &[LocalCopy { from: 0, to: 1, len: 2 }], 0).is_err());
    assert!(reduce(0, 2, vec![0; 3], 1, BasicType::Int, &sum(), 0, 0).is_err());
    assert!(reduce(0, 2, vec![0; 4], 1, BasicType::Int, &sum(), 2, 0).is_err());
}

#[test]
fn fold_combines_what_came_in_peer_order() {
    // Ranks 0..3 send to rank 3, which folds them with a non-commutative op.
    let out = run(4, |rank, p| {
        let s = if rank == 3 {
            fold(vec![0; 16], vec![], &[], &[0, 1, 2], 4, MAT_TY, &matmul_op(), 30, 0).unwrap()
        } else {
            fold(vec![], mat_bytes(&rank_mats(rank, 1)), &[3], &[], 4, MAT_TY, &matmul_op(), 30, 0).unwrap()
        };
        one(p, s)
    });
    assert_eq!(out[3], mat_bytes(&product_of(0..3, 1)));
    // Nothing received: the initial bytes stay.
    let kept = run(1, |_, p| one(p, fold(vec![5; 4], vec![], &[], &[], 1, BasicType::Int, &sum(), 30, 0).unwrap()));
    assert_eq!(kept[0], vec![5; 4]);
}

/// A port whose peer indices are translated to the channel ranks (`map`).
struct Mapped<'a> {
    inner: &'a mut super::tests::ChanPort,
    map: Vec<usize>,
}

impl super::Port for Mapped<'_> {
    type Handle = super::tests::Handle;
    fn isend(&mut self, data: Vec<u8>, peer: usize, tag: i32) -> Result<Self::Handle, crate::coll::CollError> {
        self.inner.isend(data, self.map[peer], tag)
    }
    fn irecv(&mut self, len: usize, peer: usize, tag: i32) -> Result<Self::Handle, crate::coll::CollError> {
        self.inner.irecv(len, self.map[peer], tag)
    }
    fn test(&mut self, h: &mut Self::Handle) -> Result<Option<Vec<u8>>, crate::coll::CollError> {
        self.inner.test(h)
    }
}

#[test]
fn bridged_allreduce_gives_both_sides_the_total_of_both() {
    use super::bridged_allreduce;
    for (a, b) in [(1, 1), (1, 3), (2, 2), (3, 4), (5, 2)] {
        let out = run(a + b, |world, p| {
            // Side A is ranks 0..a, side B the rest; each side's peers are
            // its own members, then the other side's leader.
            let (side, other) = if world < a { (0..a, a) } else { (a..a + b, 0) };
            let (rank, lsize) = (world - side.start, side.len());
            let mut map: Vec<usize> = side.collect();
            map.push(other);
            let mine = (world as u64 + 1).to_le_bytes().to_vec();
            let s = bridged_allreduce(rank, lsize, (rank == 0).then_some(lsize), mine, 1, BasicType::Uint64, &Op::Predef(PredefOp::Sum), 7)
                .expect("schedule");
            let mut m = Mapped { inner: p, map };
            let mut r = super::Run::new(s);
            let start = std::time::Instant::now();
            while !r.progress(&mut m).expect("progress") {
                assert!(start.elapsed() < std::time::Duration::from_secs(20), "hung");
                std::thread::yield_now();
            }
            u64::from_le_bytes(r.result().expect("result")[..8].try_into().expect("8 bytes"))
        });
        let n = (a + b) as u64;
        assert!(out.iter().all(|&t| t == n * (n + 1) / 2), "{a}+{b}: {out:?}");
    }
}

#[test]
fn bridged_allreduce_refuses_a_non_commutative_op() {
    let op = matmul_op();
    assert!(super::bridged_allreduce(0, 1, Some(1), mat_bytes(&[[1, 0, 0, 1]]), 4, MAT_TY, &op, 0).is_err());
}
