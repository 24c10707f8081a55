//! Bad arguments are refused before any message moves, the same way on
//! every rank; failures from below come back as errors, not hangs.

use super::*;
use crate::coll::comm::{RecvItem, SendItem};
use crate::coll::testing::run;
use crate::coll::*;
use crate::op::OpError;

/// A rank of a communicator on which no message may move.
struct Silent {
    rank: usize,
    size: usize,
}

impl CollComm for Silent {
    fn rank(&self) -> usize {
        self.rank
    }
    fn size(&self) -> usize {
        self.size
    }
    fn exchange(&mut self, _: &[SendItem<'_>], _: &mut [RecvItem<'_>]) -> Result<(), CollError> {
        panic!("argument errors must be found before any message");
    }
}

fn is_bad_arg<T: std::fmt::Debug>(r: Result<T, CollError>) -> bool {
    matches!(r, Err(CollError::BadArgument(_)))
}

#[test]
fn bad_root() {
    let c = &mut Silent { rank: 0, size: 4 };
    assert!(is_bad_arg(bcast(c, &mut [0; 4], 4)));
    assert!(is_bad_arg(reduce(c, Some(&[0; 4]), &mut [0; 4], 1, BasicType::Int, &sum(), 9)));
    assert!(is_bad_arg(gather(c, Some(&[0; 4]), &mut [0; 16], 4, 4)));
    assert!(is_bad_arg(scatterv(c, &[], Blocks::new(&[], &[]), Some(&mut []), 5)));
}

#[test]
fn in_place_where_mpi_does_not_allow_it() {
    let c = &mut Silent { rank: 1, size: 3 };
    assert!(is_bad_arg(reduce(c, None, &mut [0; 4], 1, BasicType::Int, &sum(), 0)));
    assert!(is_bad_arg(gather(c, None, &mut [], 4, 0)));
    assert!(is_bad_arg(gatherv(c, None, &mut [], Blocks::new(&[], &[]), 0)));
    assert!(is_bad_arg(scatter(c, &[], None, 4, 0)));
    assert!(is_bad_arg(scatterv(c, &[], Blocks::new(&[], &[]), None, 0)));
}

#[test]
fn wrong_buffer_sizes_and_blocks() {
    let c = &mut Silent { rank: 0, size: 3 };
    assert!(is_bad_arg(allreduce(c, Some(&[0; 8]), &mut [0; 4], 1, BasicType::Int, &sum())));
    assert!(is_bad_arg(gather(c, Some(&[0; 2]), &mut [0; 6], 3, 0)));
    assert!(is_bad_arg(allgather(c, Some(&[0; 2]), &mut [0; 5], 2)));
    assert!(is_bad_arg(alltoall(c, Some(&[0; 5]), &mut [0; 6], 2)));
    // A receive block at the root that leaves the buffer.
    assert!(is_bad_arg(gatherv(c, Some(&[0; 2]), &mut [0; 8], Blocks::new(&[2, 2, 2], &[0, 2, 7]), 0)));
    // Wrong number of counts.
    assert!(is_bad_arg(allgatherv(c, Some(&[0; 2]), &mut [0; 8], Blocks::new(&[2, 2], &[0, 2]))));
    assert!(is_bad_arg(reduce_scatter(c, Some(&[0; 8]), &mut [0; 4], &[1, 1], BasicType::Int, &sum())));
    assert!(is_bad_arg(scan(c, Some(&[0; 4]), &mut [0; 8], 1, BasicType::Int, &sum())));
}

#[test]
fn undefined_op_is_refused_on_every_rank_before_any_message() {
    let bad_op = Op::Predef(PredefOp::Sum);
    for rank in 0..3 {
        let c = &mut Silent { rank, size: 3 };
        let want = CollError::Op(OpError::NotDefined { op: PredefOp::Sum, ty: BasicType::CBool });
        assert_eq!(allreduce(c, Some(&[1]), &mut [0], 1, BasicType::CBool, &bad_op), Err(want.clone()));
        assert_eq!(reduce(c, Some(&[1]), &mut [0], 1, BasicType::CBool, &bad_op, 0), Err(want.clone()));
        assert_eq!(scan(c, Some(&[1]), &mut [0], 1, BasicType::CBool, &bad_op), Err(want.clone()));
        assert_eq!(exscan(c, Some(&[1]), &mut [0], 1, BasicType::CBool, &bad_op), Err(want.clone()));
        assert_eq!(reduce_scatter_block(c, Some(&[1; 3]), &mut [0], 1, BasicType::CBool, &bad_op), Err(want));
    }
}

#[test]
fn a_short_message_is_a_length_mismatch() {
    let out = run(2, |c| {
        let mut buf = if c.rank() == 0 { vec![1; 4] } else { vec![0; 8] };
        bcast(c, &mut buf, 0)
    });
    assert_eq!(out[0].0, Ok(()));
    assert_eq!(out[1].0, Err(CollError::LengthMismatch { peer: 0, expected: 8, got: 4 }));
}

#[test]
fn single_rank_needs_no_messages() {
    let c = &mut Silent { rank: 0, size: 1 };
    let mut buf = [7u8; 4];
    barrier(c).unwrap();
    bcast(c, &mut buf, 0).unwrap();
    let mut out = [0u8; 4];
    reduce(c, Some(&[1, 0, 0, 0]), &mut out, 1, BasicType::Int, &sum(), 0).unwrap();
    assert_eq!(out, [1, 0, 0, 0]);
    allreduce(c, None, &mut out, 1, BasicType::Int, &sum()).unwrap();
    assert_eq!(out, [1, 0, 0, 0]);
}
