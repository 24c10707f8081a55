//! One-round collectives: every block to or from every peer posted at
//! once, then the rank's own blocks copied locally. Gather(v), scatter(v),
//! allgather(v), alltoall(v/w) and the neighbourhood collectives are all
//! this shape; on a wide-area link one round is one crossing, the fewest
//! any algorithm can take (the price is p - 1 messages at the root or per
//! rank instead of log2 p).

use super::{tag, Local, Msg, Round, Schedule, Span};
use crate::coll::args::bad;
use crate::coll::comm::CollError;

/// Bytes `at..at + len` of the input (a send) or the output (a receive),
/// to or from `peer`, on tag family `family` (< 65536).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Block {
    pub peer: usize,
    pub at: usize,
    pub len: usize,
    pub family: i32,
}

/// A local copy of input bytes `from..from + len` to output bytes `to..`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LocalCopy {
    pub from: usize,
    pub to: usize,
    pub len: usize,
}

/// The schedule: buffer 0 is `out` (its initial content is kept where no
/// block lands: MPI_IN_PLACE data, gaps between blocks), buffer 1 `input`.
/// Blocks with the same peer and family match in posting order.
pub fn direct(out: Vec<u8>, input: Vec<u8>, sends: &[Block], recvs: &[Block], copies: &[LocalCopy], seq: u32) -> Result<Schedule, CollError> {
    let within = |what: &str, at: usize, len: usize, buf: &[u8]| {
        if at.checked_add(len).is_some_and(|end| end <= buf.len()) {
            Ok(())
        } else {
            Err(bad(format!("{what} block {at}..{at}+{len} outside a buffer of {} bytes", buf.len())))
        }
    };
    for b in sends {
        within("send", b.at, b.len, &input)?;
    }
    for b in recvs {
        within("receive", b.at, b.len, &out)?;
    }
    for c in copies {
        within("local send", c.from, c.len, &input)?;
        within("local receive", c.to, c.len, &out)?;
    }
    let msg = |b: &Block, buf: usize| Msg { peer: b.peer, tag: tag(b.family, seq), span: Span { buf, off: b.at, len: b.len } };
    let round = Round {
        sends: sends.iter().map(|b| msg(b, 1)).collect(),
        recvs: recvs.iter().map(|b| msg(b, 0)).collect(),
        then: copies
            .iter()
            .map(|c| Local::Copy { from: Span { buf: 1, off: c.from, len: c.len }, to: Span { buf: 0, off: c.to, len: c.len } })
            .collect(),
    };
    let mut s = Schedule::new(vec![out, input]);
    s.push(round);
    Ok(s)
}
