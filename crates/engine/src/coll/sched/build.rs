//! The flat algorithms of `coll/` written down as schedules: the same
//! messages and the same combining order as their blocking versions, so
//! results are identical (tests compare them).

use super::{tag, Local, Msg, Round, Schedule, Span};
use crate::coll::args::{check_len, check_root, reduction_bytes};
use crate::coll::comm::CollError;
use crate::coll::tree::Binomial;
use crate::coll::{TAG_ALLREDUCE, TAG_BARRIER, TAG_BCAST};
use crate::datatype::BasicType;
use crate::op::Op;

fn msg(peer: usize, tag: i32, span: Span) -> Msg {
    Msg { peer, tag, span }
}

/// Dissemination barrier (`barrier.rs`): ceil(log2 size) rounds.
pub fn barrier(rank: usize, size: usize, seq: u32) -> Schedule {
    let t = tag(TAG_BARRIER, seq);
    let mut s = Schedule::new(vec![Vec::new()]);
    let mut dist = 1;
    while dist < size {
        let (to, from) = ((rank + dist) % size, (rank + size - dist) % size);
        s.push(Round { sends: vec![msg(to, t, Span::EMPTY)], recvs: vec![msg(from, t, Span::EMPTY)], then: vec![] });
        dist *= 2;
    }
    s
}

/// Binomial bcast (`bcast.rs`) of `buf` (meaningful at the root; its
/// length everywhere). The result is buffer 0.
pub fn bcast(rank: usize, size: usize, buf: Vec<u8>, root: usize, seq: u32) -> Result<Schedule, CollError> {
    check_root(root, size)?;
    let t = tag(TAG_BCAST, seq);
    let all = Span::whole(0, buf.len());
    let mut s = Schedule::new(vec![buf]);
    let tree = Binomial::new(size, rank, root);
    if let Some(p) = tree.parent() {
        s.push(Round { recvs: vec![msg(Binomial::real(size, p, root), t, all)], ..Round::default() });
    }
    let sends = tree.children().iter().rev().map(|c| msg(Binomial::real(size, c.rel, root), t, all)).collect();
    s.push(Round { sends, ..Round::default() });
    Ok(s)
}

/// Recursive-doubling allreduce (`allreduce.rs`, flat) of `data` (`count`
/// elements of `ty`), order-preserving, so non-commutative ops are safe.
/// The result is buffer 0.
pub fn allreduce(rank: usize, size: usize, data: Vec<u8>, count: usize, ty: BasicType, op: &Op, seq: u32) -> Result<Schedule, CollError> {
    let n = reduction_bytes(count, ty, op)?;
    check_len("allreduce buffer", data.len(), n)?;
    let t = tag(TAG_ALLREDUCE, seq);
    let (acc, tmp) = (Span::whole(0, n), Span::whole(1, n));
    let mut s = Schedule::new(vec![data, vec![0; n]]);
    s.reduction = Some((op.clone(), ty));
    let pof2 = if size.is_power_of_two() { size } else { size.next_power_of_two() / 2 };
    let rem = size - pof2;
    let folded = if rank < 2 * rem {
        if rank.is_multiple_of(2) {
            s.push(Round { sends: vec![msg(rank + 1, t, acc)], ..Round::default() });
            None
        } else {
            let then = vec![Local::Reduce { input: tmp, inout: acc, count }];
            s.push(Round { recvs: vec![msg(rank - 1, t, tmp)], then, ..Round::default() });
            Some(rank / 2)
        }
    } else {
        Some(rank - rem)
    };
    if let Some(me) = folded {
        let mut mask = 1;
        while mask < pof2 {
            let other = me ^ mask;
            let peer = if other < rem { other * 2 + 1 } else { other + rem };
            // The lower rank's partial is always the left operand.
            let then = if peer < rank {
                vec![Local::Reduce { input: tmp, inout: acc, count }]
            } else {
                vec![Local::Reduce { input: acc, inout: tmp, count }, Local::Copy { from: tmp, to: acc }]
            };
            s.push(Round { sends: vec![msg(peer, t, acc)], recvs: vec![msg(peer, t, tmp)], then });
            mask <<= 1;
        }
    }
    if rank < 2 * rem {
        if rank % 2 == 1 {
            s.push(Round { sends: vec![msg(rank - 1, t, acc)], ..Round::default() });
        } else {
            s.push(Round { recvs: vec![msg(rank + 1, t, acc)], ..Round::default() });
        }
    }
    Ok(s)
}
