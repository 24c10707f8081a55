//! Reductions with a root and prefix reductions as schedules: the same
//! trees, messages and combining order as `coll/reduce.rs` and
//! `coll/scan.rs`, so results are bit-identical to the blocking calls and
//! non-commutative operations keep rank order.

use super::{tag, Local, Msg, Round, Schedule, Span};
use crate::coll::args::{check_len, check_root, reduction_bytes};
use crate::coll::comm::CollError;
use crate::coll::tree::Binomial;
use crate::coll::{TAG_EXSCAN, TAG_REDUCE, TAG_SCAN};
use crate::datatype::BasicType;
use crate::op::Op;

fn msg(peer: usize, tag: i32, span: Span) -> Msg {
    Msg { peer, tag, span }
}

/// Binomial reduce of `input` (`count` elements of `ty`) to `root`. A
/// non-commutative op reduces over the tree rooted at rank 0 (every partial
/// a contiguous run of ranks, lower runs on the left), which then forwards
/// to the root. Buffer 0 holds the result at the root.
// The reduction's arguments, as MPI_Reduce has them, plus the sequence number.
#[allow(clippy::too_many_arguments)]
pub fn reduce(rank: usize, size: usize, input: Vec<u8>, count: usize, ty: BasicType, op: &Op, root: usize, seq: u32) -> Result<Schedule, CollError> {
    check_root(root, size)?;
    let n = reduction_bytes(count, ty, op)?;
    check_len("reduce buffer", input.len(), n)?;
    let t = tag(TAG_REDUCE, seq);
    let tree_root = if op.is_commutative() { root } else { 0 };
    let tree = Binomial::new(size, rank, tree_root);
    let children = tree.children();
    let acc = Span::whole(0, n);
    let mut bufs = vec![input];
    bufs.extend(children.iter().map(|_| vec![0u8; n]));
    let mut s = Schedule::new(bufs);
    s.reduction = Some((op.clone(), ty));
    // Each child's partial covers higher ranks: acc = acc op partial.
    let mut gather = Round::default();
    for (i, c) in children.iter().enumerate() {
        let part = Span::whole(i + 1, n);
        gather.recvs.push(msg(Binomial::real(size, c.rel, tree_root), t, part));
        gather.then.push(Local::Reduce { input: acc, inout: part, count });
        gather.then.push(Local::Copy { from: part, to: acc });
    }
    s.push(gather);
    if let Some(parent) = tree.parent() {
        s.push(Round { sends: vec![msg(Binomial::real(size, parent, tree_root), t, acc)], ..Round::default() });
    }
    if tree_root != root {
        if rank == tree_root {
            s.push(Round { sends: vec![msg(root, t, acc)], ..Round::default() });
        } else if rank == root {
            s.push(Round { recvs: vec![msg(tree_root, t, acc)], ..Round::default() });
        }
    }
    Ok(s)
}

/// Recursive-doubling scan (`inclusive`) or exscan of `input`. Buffer 0
/// holds the prefix (for exscan, left as `prefix` on rank 0, where MPI
/// leaves it undefined).
// The scan's arguments plus the sequence number.
#[allow(clippy::too_many_arguments)]
pub fn scan(
    rank: usize,
    size: usize,
    input: Vec<u8>,
    prefix: Vec<u8>,
    inclusive: bool,
    count: usize,
    ty: BasicType,
    op: &Op,
    seq: u32,
) -> Result<Schedule, CollError> {
    let n = reduction_bytes(count, ty, op)?;
    check_len("scan send buffer", input.len(), n)?;
    check_len("scan receive buffer", prefix.len(), n)?;
    let t = tag(if inclusive { TAG_SCAN } else { TAG_EXSCAN }, seq);
    let (pre, total, tmp) = (Span::whole(0, n), Span::whole(1, n), Span::whole(2, n));
    let prefix = if inclusive { input.clone() } else { prefix };
    let mut s = Schedule::new(vec![prefix, input, vec![0u8; n]]);
    s.reduction = Some((op.clone(), ty));
    let mut have_prefix = inclusive;
    let mut mask = 1;
    while mask < size {
        let peer = rank ^ mask;
        if peer < size {
            let then = if peer < rank {
                // The lower block is the left operand.
                let mut v = vec![Local::Reduce { input: tmp, inout: total, count }];
                v.push(if have_prefix { Local::Reduce { input: tmp, inout: pre, count } } else { Local::Copy { from: tmp, to: pre } });
                have_prefix = true;
                v
            } else {
                vec![Local::Reduce { input: total, inout: tmp, count }, Local::Copy { from: tmp, to: total }]
            };
            s.push(Round { sends: vec![msg(peer, t, total)], recvs: vec![msg(peer, t, tmp)], then });
        }
        mask <<= 1;
    }
    Ok(s)
}
