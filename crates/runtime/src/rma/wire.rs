//! The messages of one-sided communication, as bytes. They travel as
//! ordinary messages on the window's private context (`TAG_REQ` from an
//! origin to a target, `TAG_REP` back), so every transport carries them
//! and the engine's ordering per sender keeps them in issue order.
//!
//! The target never sees the origin's datatypes: a request names where the
//! data goes as byte blocks relative to the target address (the target
//! datatype flattened at the origin) and, for accumulates, the one basic
//! type the op works on. Everything read from the wire is checked; a
//! malformed message is an error, never a panic.

use wanmpi_engine::datatype::BasicType;
use wanmpi_engine::op::PredefOp;

/// Requests, from an origin to a target (and PSCW notices both ways).
pub const TAG_REQ: i32 = 1;
/// Replies, from a target to the origin of a request.
pub const TAG_REP: i32 = 2;

/// Where a request's data lives at the target: `disp` (in the target's
/// displacement units, or an absolute address in a dynamic window) and the
/// byte blocks from there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    pub disp: i64,
    pub blocks: Vec<(i64, u64)>,
}

impl Place {
    pub fn bytes(&self) -> u64 {
        self.blocks.iter().map(|b| b.1).sum()
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    Put {
        id: u64,
        place: Place,
        data: Vec<u8>,
    },
    Get {
        id: u64,
        place: Place,
    },
    /// Accumulate; `fetch` asks for the old contents back (get_accumulate,
    /// fetch_and_op).
    Acc {
        id: u64,
        place: Place,
        op: PredefOp,
        ty: BasicType,
        fetch: bool,
        data: Vec<u8>,
    },
    /// Compare-and-swap of one element: `data` is the compare value then
    /// the new value.
    Cas {
        id: u64,
        disp: i64,
        ty: BasicType,
        data: Vec<u8>,
    },
    Lock {
        id: u64,
        exclusive: bool,
    },
    Unlock {
        id: u64,
    },
    /// PSCW: the target exposed its window to this origin (MPI_Win_post).
    Post,
    /// PSCW: the origin's access epoch ended (MPI_Win_complete).
    Complete,
}

/// A reply to request `id`: data (get-like requests), nothing (acks,
/// grants) or an error class and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub id: u64,
    pub result: Result<Vec<u8>, (i32, String)>,
}

const PUT: u8 = 1;
const GET: u8 = 2;
const ACC: u8 = 3;
const CAS: u8 = 4;
const LOCK: u8 = 5;
const UNLOCK: u8 = 6;
const POST: u8 = 7;
const COMPLETE: u8 = 8;

/// Why bytes from a peer are not a request or reply.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed one-sided message: {0}")]
pub struct Malformed(pub &'static str);

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], Malformed> {
        if self.0.len() < n {
            return Err(Malformed("truncated"));
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Ok(a)
    }
    fn u8(&mut self) -> Result<u8, Malformed> {
        Ok(self.take(1)?[0])
    }
    fn u64(&mut self) -> Result<u64, Malformed> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().map_err(|_| Malformed("truncated"))?))
    }
    fn i64(&mut self) -> Result<i64, Malformed> {
        Ok(self.u64()? as i64)
    }
    fn rest(self) -> Vec<u8> {
        self.0.to_vec()
    }
    fn place(&mut self) -> Result<Place, Malformed> {
        let disp = self.i64()?;
        let n = self.u64()?;
        // Each block is 16 bytes: a count beyond what is left is a lie.
        if n > (self.0.len() / 16) as u64 {
            return Err(Malformed("block count exceeds the message"));
        }
        let blocks = (0..n).map(|_| Ok((self.i64()?, self.u64()?))).collect::<Result<_, Malformed>>()?;
        Ok(Place { disp, blocks })
    }
    fn basic(&mut self) -> Result<BasicType, Malformed> {
        BasicType::ALL.get(self.u8()? as usize).copied().ok_or(Malformed("unknown basic type"))
    }
    fn op(&mut self) -> Result<PredefOp, Malformed> {
        PredefOp::ALL.get(self.u8()? as usize).copied().ok_or(Malformed("unknown operation"))
    }
}

fn put_place(out: &mut Vec<u8>, p: &Place) {
    out.extend_from_slice(&p.disp.to_le_bytes());
    out.extend_from_slice(&(p.blocks.len() as u64).to_le_bytes());
    for (off, len) in &p.blocks {
        out.extend_from_slice(&off.to_le_bytes());
        out.extend_from_slice(&len.to_le_bytes());
    }
}

fn index_of<T: PartialEq>(all: &[T], x: &T) -> u8 {
    all.iter().position(|y| y == x).unwrap_or(0) as u8
}

impl Request {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        let head = |out: &mut Vec<u8>, kind: u8, id: u64| {
            out.push(kind);
            out.extend_from_slice(&id.to_le_bytes());
        };
        match self {
            Request::Put { id, place, data } => {
                head(&mut out, PUT, *id);
                put_place(&mut out, place);
                out.extend_from_slice(data);
            }
            Request::Get { id, place } => {
                head(&mut out, GET, *id);
                put_place(&mut out, place);
            }
            Request::Acc { id, place, op, ty, fetch, data } => {
                head(&mut out, ACC, *id);
                out.push(index_of(&PredefOp::ALL, op));
                out.push(index_of(&BasicType::ALL, ty));
                out.push(*fetch as u8);
                put_place(&mut out, place);
                out.extend_from_slice(data);
            }
            Request::Cas { id, disp, ty, data } => {
                head(&mut out, CAS, *id);
                out.push(index_of(&BasicType::ALL, ty));
                out.extend_from_slice(&disp.to_le_bytes());
                out.extend_from_slice(data);
            }
            Request::Lock { id, exclusive } => {
                head(&mut out, LOCK, *id);
                out.push(*exclusive as u8);
            }
            Request::Unlock { id } => head(&mut out, UNLOCK, *id),
            Request::Post => head(&mut out, POST, 0),
            Request::Complete => head(&mut out, COMPLETE, 0),
        }
        out
    }

    pub fn decode(bytes: &[u8]) -> Result<Request, Malformed> {
        let mut r = Reader(bytes);
        let kind = r.u8()?;
        let id = r.u64()?;
        Ok(match kind {
            PUT => {
                let place = r.place()?;
                Request::Put { id, place, data: r.rest() }
            }
            GET => Request::Get { id, place: r.place()? },
            ACC => {
                let op = r.op()?;
                let ty = r.basic()?;
                let fetch = r.u8()? != 0;
                let place = r.place()?;
                Request::Acc { id, place, op, ty, fetch, data: r.rest() }
            }
            CAS => {
                let ty = r.basic()?;
                let disp = r.i64()?;
                Request::Cas { id, disp, ty, data: r.rest() }
            }
            LOCK => Request::Lock { id, exclusive: r.u8()? != 0 },
            UNLOCK => Request::Unlock { id },
            POST => Request::Post,
            COMPLETE => Request::Complete,
            _ => return Err(Malformed("unknown request kind")),
        })
    }
}

impl Reply {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = self.id.to_le_bytes().to_vec();
        match &self.result {
            Ok(data) => {
                out.extend_from_slice(&0i32.to_le_bytes());
                out.extend_from_slice(data);
            }
            Err((class, msg)) => {
                out.extend_from_slice(&class.to_le_bytes());
                out.extend_from_slice(msg.as_bytes());
            }
        }
        out
    }

    pub fn decode(bytes: &[u8]) -> Result<Reply, Malformed> {
        let mut r = Reader(bytes);
        let id = r.u64()?;
        let class = i32::from_le_bytes(r.take(4)?.try_into().map_err(|_| Malformed("truncated"))?);
        let rest = r.rest();
        let result = if class == 0 { Ok(rest) } else { Err((class, String::from_utf8_lossy(&rest).into_owned())) };
        Ok(Reply { id, result })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn place() -> Place {
        Place { disp: -3, blocks: vec![(0, 8), (16, 4)] }
    }

    #[test]
    fn every_request_survives_a_round_trip() {
        let all = [
            Request::Put { id: 7, place: place(), data: vec![1, 2, 3] },
            Request::Get { id: u64::MAX, place: place() },
            Request::Acc { id: 9, place: place(), op: PredefOp::Sum, ty: BasicType::Double, fetch: true, data: vec![0; 16] },
            Request::Cas { id: 1, disp: 5, ty: BasicType::Int, data: vec![0; 8] },
            Request::Lock { id: 2, exclusive: true },
            Request::Unlock { id: 3 },
            Request::Post,
            Request::Complete,
        ];
        for r in all {
            assert_eq!(Request::decode(&r.encode()), Ok(r));
        }
    }

    #[test]
    fn replies_carry_data_or_an_error() {
        for rep in [Reply { id: 4, result: Ok(vec![9; 5]) }, Reply { id: 5, result: Err((55, "out of range".into())) }] {
            assert_eq!(Reply::decode(&rep.encode()), Ok(rep));
        }
    }

    #[test]
    fn put_layout_on_raw_bytes() {
        let b = Request::Put { id: 1, place: Place { disp: 2, blocks: vec![(0, 4)] }, data: vec![0xaa; 4] }.encode();
        assert_eq!(b[0], PUT);
        assert_eq!(&b[1..9], &1u64.to_le_bytes());
        assert_eq!(&b[9..17], &2i64.to_le_bytes());
        assert_eq!(&b[17..25], &1u64.to_le_bytes());
        assert_eq!(b.len(), 1 + 8 + 16 + 16 + 4);
    }

    #[test]
    fn malformed_bytes_are_rejected_not_trusted() {
        assert!(Request::decode(&[]).is_err());
        assert!(Request::decode(&[99, 0, 0, 0, 0, 0, 0, 0, 0]).is_err());
        // A block count far beyond the message length.
        let mut b = vec![GET];
        b.extend_from_slice(&1u64.to_le_bytes());
        b.extend_from_slice(&0i64.to_le_bytes());
        b.extend_from_slice(&u64::MAX.to_le_bytes());
        assert_eq!(Request::decode(&b), Err(Malformed("block count exceeds the message")));
        let mut acc = Request::Acc { id: 1, place: place(), op: PredefOp::Sum, ty: BasicType::Int, fetch: false, data: vec![] }.encode();
        acc[9] = 200; // no such op
        assert!(Request::decode(&acc).is_err());
        assert!(Reply::decode(&[1, 2, 3]).is_err());
        // Every truncation of a valid request fails cleanly.
        let full = Request::Put { id: 1, place: place(), data: vec![] }.encode();
        for n in 0..full.len() {
            assert!(Request::decode(&full[..n]).is_err(), "prefix of {n} bytes");
        }
    }
}
