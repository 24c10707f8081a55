//! An allreduce over both groups of an inter-communicator, as a schedule:
//! each group reduces among itself, the two leaders (rank 0 of each side)
//! swap their partials and combine them, and each leader broadcasts the
//! total to its group. Used to agree a context for MPI_Comm_idup of an
//! inter-communicator; the op must be commutative (the leaders combine the
//! two sides in opposite orders).

use super::{build, tag, Msg, Round, Schedule, Span};
use crate::coll::comm::CollError;
use crate::coll::tree::Binomial;
use crate::coll::{TAG_ALLREDUCE, TAG_BCAST};
use crate::datatype::BasicType;
use crate::op::Op;

/// `rank` and `lsize` are this side's; `remote_leader` is the peer index
/// of the other side's leader (given at rank 0 only). Buffer 0 holds the
/// result everywhere.
// The reduction's arguments, plus this side's shape and the sequence number.
#[allow(clippy::too_many_arguments)]
pub fn bridged_allreduce(
    rank: usize,
    lsize: usize,
    remote_leader: Option<usize>,
    data: Vec<u8>,
    count: usize,
    ty: BasicType,
    op: &Op,
    seq: u32,
) -> Result<Schedule, CollError> {
    if !op.is_commutative() {
        return Err(CollError::BadArgument("a bridged allreduce needs a commutative op".into()));
    }
    if (rank == 0) != remote_leader.is_some() {
        return Err(CollError::BadArgument("only rank 0 of each side talks to the other side's leader".into()));
    }
    let mut s = build::allreduce(rank, lsize, data, count, ty, op, seq)?;
    let n = s.bufs[0].len();
    let (acc, tmp) = (Span::whole(0, n), Span::whole(1, n));
    if let Some(peer) = remote_leader {
        let t = tag(TAG_ALLREDUCE, seq);
        let then = vec![super::Local::Reduce { input: tmp, inout: acc, count }];
        s.push(Round { sends: vec![Msg { peer, tag: t, span: acc }], recvs: vec![Msg { peer, tag: t, span: tmp }], then });
    }
    // Binomial broadcast of the total from rank 0 (as `build::bcast`).
    let t = tag(TAG_BCAST, seq);
    let tree = Binomial::new(lsize, rank, 0);
    if let Some(p) = tree.parent() {
        s.push(Round { recvs: vec![Msg { peer: Binomial::real(lsize, p, 0), tag: t, span: acc }], ..Round::default() });
    }
    let sends = tree.children().iter().rev().map(|c| Msg { peer: Binomial::real(lsize, c.rel, 0), tag: t, span: acc }).collect();
    s.push(Round { sends, ..Round::default() });
    Ok(s)
}
