//! A reduction in one round, for inter-communicators (whose groups reduce
//! each other's data): the input goes to every peer of `to`, a
//! contribution comes from every peer of `from`, and buffer 0 becomes
//! their combination in peer order (`from[0] op from[1] op ...`), so
//! non-commutative operations keep rank order. A side that receives
//! nothing keeps `init` in buffer 0.

use super::{tag, Local, Msg, Round, Schedule, Span};
use crate::coll::args::{check_len, reduction_bytes};
use crate::coll::comm::CollError;
use crate::datatype::BasicType;
use crate::op::Op;

// The reduction's arguments plus both peer lists, tag family and sequence number.
#[allow(clippy::too_many_arguments)]
pub fn fold(
    init: Vec<u8>,
    input: Vec<u8>,
    to: &[usize],
    from: &[usize],
    count: usize,
    ty: BasicType,
    op: &Op,
    family: i32,
    seq: u32,
) -> Result<Schedule, CollError> {
    let n = reduction_bytes(count, ty, op)?;
    if !to.is_empty() {
        check_len("reduction send buffer", input.len(), n)?;
    }
    if !from.is_empty() {
        check_len("reduction receive buffer", init.len(), n)?;
    }
    let t = tag(family, seq);
    let mut bufs = vec![init, input];
    bufs.extend(from.iter().map(|_| vec![0u8; n]));
    let mut s = Schedule::new(bufs);
    s.reduction = Some((op.clone(), ty));
    let part = |j: usize| Span::whole(j + 2, n);
    let acc = Span::whole(0, n);
    let mut round = Round {
        sends: to.iter().map(|&peer| Msg { peer, tag: t, span: Span::whole(1, n) }).collect(),
        recvs: from.iter().enumerate().map(|(j, &peer)| Msg { peer, tag: t, span: part(j) }).collect(),
        then: vec![],
    };
    // Right to left: acc = from[j] op acc, which by associativity is the
    // left-to-right combination.
    if let Some(last) = from.len().checked_sub(1) {
        round.then.push(Local::Copy { from: part(last), to: acc });
        for j in (0..last).rev() {
            round.then.push(Local::Reduce { input: part(j), inout: acc, count });
        }
    }
    s.push(round);
    Ok(s)
}
