//! The wamp datagram format: a cleartext header (authenticated as AEAD
//! associated data), then a sealed payload of chunks. Parsing is checked:
//! anything truncated, oversized or out of range is an error, never a panic.
//!
//! ```text
//! header (20 bytes, cleartext)
//!   0..2   magic "WP"
//!   2      version (1)
//!   3      kind: 0 sealed (AEAD tag follows the payload), 1 plain
//!   4..8   sender rank      u32
//!   8..12  receiver rank    u32
//!   12..20 packet number    u64   (never reused in one direction: AEAD nonce, replay check)
//! payload (sealed)
//!   0..8   floor            u64   (the sender resolved every packet below it)
//!   chunks, each starting with its type byte:
//!   DATA    1 | channel u16 | seq u32 | frame_len u32 | index u32 | chunk u16 | bytes
//!           bytes = frame[index*chunk .. min(frame_len, (index+1)*chunk)], length implied
//!   ACK     2 | cum u64 | base u64 | delay_us u32 | max_data u64 | nbits u16 | bitmap
//!           every packet below cum arrived or was resolved; bit i of the bitmap
//!           (LSB first) says whether packet base+i arrived
//!   PING    3                       (asks for an ACK)
//!   CLOSE   4                       (nothing more will be sent)
//!   REPAIR  5 | first u64 | k u8 | m u8 | index u8 | len u16 | shard
//!           parity shard `index` (0..m) over packets first..first+k (fec.rs)
//! ```
//!
//! All integers are big-endian.

use thiserror::Error;

pub const MAGIC: [u8; 2] = *b"WP";
pub const VERSION: u8 = 1;
pub const HEADER_LEN: usize = 20;
pub const FLOOR_LEN: usize = 8;
/// AES-GCM's tag, appended to sealed payloads.
pub const TAG_LEN: usize = 16;
pub const DATA_HEADER_LEN: usize = 17;
pub const ACK_FIXED_LEN: usize = 1 + 8 + 8 + 4 + 8 + 2;
pub const REPAIR_HEADER_LEN: usize = 1 + 8 + 1 + 1 + 1 + 2;
/// Most bits one ACK carries (1 KiB of bitmap).
pub const MAX_ACK_BITS: usize = 8192;

const T_DATA: u8 = 1;
const T_ACK: u8 = 2;
const T_PING: u8 = 3;
const T_CLOSE: u8 = 4;
const T_REPAIR: u8 = 5;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Sealed,
    Plain,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub kind: Kind,
    pub from: u32,
    pub to: u32,
    pub pn: u64,
}

#[derive(Debug, Error, PartialEq, Eq)]
pub enum PacketError {
    #[error("datagram of {0} bytes is shorter than a header")]
    Short(usize),
    #[error("not a wamp datagram (magic/version)")]
    Magic,
    #[error("unknown packet kind {0}")]
    Kind(u8),
    #[error("truncated {0} chunk")]
    Truncated(&'static str),
    #[error("unknown chunk type {0}")]
    ChunkType(u8),
    #[error("bad {0} chunk: {1}")]
    Bad(&'static str, &'static str),
}

impl Header {
    pub fn parse(d: &[u8]) -> Result<Header, PacketError> {
        if d.len() < HEADER_LEN {
            return Err(PacketError::Short(d.len()));
        }
        if d[0..2] != MAGIC || d[2] != VERSION {
            return Err(PacketError::Magic);
        }
        let kind = match d[3] {
            0 => Kind::Sealed,
            1 => Kind::Plain,
            k => return Err(PacketError::Kind(k)),
        };
        Ok(Header { kind, from: be32(&d[4..8]), to: be32(&d[8..12]), pn: be64(&d[12..20]) })
    }

    pub fn emit(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&MAGIC);
        out.push(VERSION);
        out.push(match self.kind {
            Kind::Sealed => 0,
            Kind::Plain => 1,
        });
        out.extend_from_slice(&self.from.to_be_bytes());
        out.extend_from_slice(&self.to.to_be_bytes());
        out.extend_from_slice(&self.pn.to_be_bytes());
    }
}

/// One piece of a frame: chunk `index` of `frame_len` bytes cut into
/// `chunk`-byte pieces, on `channel`, the `seq`-th frame of that channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DataChunk<'a> {
    pub channel: u16,
    pub seq: u32,
    pub frame_len: u32,
    pub index: u32,
    pub chunk: u16,
    pub bytes: &'a [u8],
}

/// Bytes chunk `index` of a `frame_len`-byte frame carries, or None when
/// the index lies past the frame's end.
pub fn chunk_span(frame_len: u32, chunk: u16, index: u32) -> Option<(usize, usize)> {
    let start = index as u64 * chunk as u64;
    if chunk == 0 || (start >= frame_len as u64 && !(frame_len == 0 && index == 0)) {
        return None;
    }
    let end = (start + chunk as u64).min(frame_len as u64);
    Some((start as usize, end as usize))
}

/// Number of chunks of a frame (an empty frame has one, empty, chunk).
pub fn chunk_count(frame_len: u32, chunk: u16) -> u32 {
    (frame_len.div_ceil(chunk as u32)).max(1)
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ack<'a> {
    pub cum: u64,
    pub base: u64,
    pub delay_us: u32,
    pub max_data: u64,
    pub nbits: u16,
    pub bitmap: &'a [u8],
}

impl Ack<'_> {
    /// Whether packet `pn` is acknowledged by this ACK.
    pub fn covers(&self, pn: u64) -> bool {
        if pn < self.cum {
            return true;
        }
        if pn < self.base {
            return false;
        }
        let i = pn - self.base;
        i < self.nbits as u64 && self.bitmap[(i / 8) as usize] & (1 << (i % 8)) != 0
    }

    /// The highest packet number this ACK acknowledges, if any.
    pub fn largest(&self) -> Option<u64> {
        (0..self.nbits as u64).rev().find(|&i| self.bitmap[(i / 8) as usize] & (1 << (i % 8)) != 0).map(|i| self.base + i).or(self.cum.checked_sub(1))
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repair<'a> {
    pub first: u64,
    pub k: u8,
    pub m: u8,
    pub index: u8,
    pub shard: &'a [u8],
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Chunk<'a> {
    Data(DataChunk<'a>),
    Ack(Ack<'a>),
    Ping,
    Close,
    Repair(Repair<'a>),
}

impl Chunk<'_> {
    /// Whether the receiver must acknowledge a packet carrying this chunk.
    pub fn ack_eliciting(&self) -> bool {
        matches!(self, Chunk::Data(_) | Chunk::Ping | Chunk::Close)
    }
}

/// Iterates over the chunks of a payload after its floor.
pub struct Chunks<'a> {
    rest: &'a [u8],
}

/// The payload's floor and an iterator over its chunks.
pub fn parse_payload(p: &[u8]) -> Result<(u64, Chunks<'_>), PacketError> {
    if p.len() < FLOOR_LEN {
        return Err(PacketError::Truncated("floor"));
    }
    Ok((be64(&p[..8]), Chunks { rest: &p[8..] }))
}

impl<'a> Iterator for Chunks<'a> {
    type Item = Result<Chunk<'a>, PacketError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() {
            return None;
        }
        let r = parse_chunk(self.rest);
        match r {
            Ok((c, used)) => {
                self.rest = &self.rest[used..];
                Some(Ok(c))
            }
            Err(e) => {
                self.rest = &[];
                Some(Err(e))
            }
        }
    }
}

fn parse_chunk(b: &[u8]) -> Result<(Chunk<'_>, usize), PacketError> {
    match b[0] {
        T_DATA => {
            if b.len() < DATA_HEADER_LEN {
                return Err(PacketError::Truncated("DATA"));
            }
            let (channel, seq, frame_len, index, chunk) = (be16(&b[1..3]), be32(&b[3..7]), be32(&b[7..11]), be32(&b[11..15]), be16(&b[15..17]));
            let (s, e) = chunk_span(frame_len, chunk, index).ok_or(PacketError::Bad("DATA", "chunk index past the frame"))?;
            let end = DATA_HEADER_LEN + (e - s);
            if b.len() < end {
                return Err(PacketError::Truncated("DATA"));
            }
            Ok((Chunk::Data(DataChunk { channel, seq, frame_len, index, chunk, bytes: &b[DATA_HEADER_LEN..end] }), end))
        }
        T_ACK => {
            if b.len() < ACK_FIXED_LEN {
                return Err(PacketError::Truncated("ACK"));
            }
            let (cum, base, delay_us, max_data, nbits) = (be64(&b[1..9]), be64(&b[9..17]), be32(&b[17..21]), be64(&b[21..29]), be16(&b[29..31]));
            if nbits as usize > MAX_ACK_BITS {
                return Err(PacketError::Bad("ACK", "bitmap too long"));
            }
            if base < cum || base.checked_add(nbits as u64).is_none() {
                return Err(PacketError::Bad("ACK", "bitmap below cum or past the number space"));
            }
            let end = ACK_FIXED_LEN + (nbits as usize).div_ceil(8);
            if b.len() < end {
                return Err(PacketError::Truncated("ACK"));
            }
            Ok((Chunk::Ack(Ack { cum, base, delay_us, max_data, nbits, bitmap: &b[ACK_FIXED_LEN..end] }), end))
        }
        T_PING => Ok((Chunk::Ping, 1)),
        T_CLOSE => Ok((Chunk::Close, 1)),
        T_REPAIR => {
            if b.len() < REPAIR_HEADER_LEN {
                return Err(PacketError::Truncated("REPAIR"));
            }
            let (first, k, m, index, len) = (be64(&b[1..9]), b[9], b[10], b[11], be16(&b[12..14]) as usize);
            if k == 0 || m == 0 || index >= m || k as usize + m as usize > 255 {
                return Err(PacketError::Bad("REPAIR", "bad group shape"));
            }
            let end = REPAIR_HEADER_LEN + len;
            if b.len() < end {
                return Err(PacketError::Truncated("REPAIR"));
            }
            Ok((Chunk::Repair(Repair { first, k, m, index, shard: &b[REPAIR_HEADER_LEN..end] }), end))
        }
        t => Err(PacketError::ChunkType(t)),
    }
}

pub fn emit_data_header(out: &mut Vec<u8>, channel: u16, seq: u32, frame_len: u32, index: u32, chunk: u16) {
    out.push(T_DATA);
    out.extend_from_slice(&channel.to_be_bytes());
    out.extend_from_slice(&seq.to_be_bytes());
    out.extend_from_slice(&frame_len.to_be_bytes());
    out.extend_from_slice(&index.to_be_bytes());
    out.extend_from_slice(&chunk.to_be_bytes());
}

pub fn emit_ack(out: &mut Vec<u8>, cum: u64, base: u64, delay_us: u32, max_data: u64, nbits: u16, bitmap: &[u8]) {
    debug_assert_eq!(bitmap.len(), (nbits as usize).div_ceil(8));
    out.push(T_ACK);
    out.extend_from_slice(&cum.to_be_bytes());
    out.extend_from_slice(&base.to_be_bytes());
    out.extend_from_slice(&delay_us.to_be_bytes());
    out.extend_from_slice(&max_data.to_be_bytes());
    out.extend_from_slice(&nbits.to_be_bytes());
    out.extend_from_slice(bitmap);
}

pub fn emit_ping(out: &mut Vec<u8>) {
    out.push(T_PING);
}

pub fn emit_close(out: &mut Vec<u8>) {
    out.push(T_CLOSE);
}

pub fn emit_repair(out: &mut Vec<u8>, first: u64, k: u8, m: u8, index: u8, shard: &[u8]) {
    out.push(T_REPAIR);
    out.extend_from_slice(&first.to_be_bytes());
    out.extend_from_slice(&[k, m, index]);
    out.extend_from_slice(&(shard.len() as u16).to_be_bytes());
    out.extend_from_slice(shard);
}

fn be16(b: &[u8]) -> u16 {
    u16::from_be_bytes([b[0], b[1]])
}
fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}
fn be64(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[..8]);
    u64::from_be_bytes(a)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn payload(build: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
        let mut p = 7u64.to_be_bytes().to_vec();
        build(&mut p);
        p
    }

    #[test]
    fn header_round_trip_and_raw_bytes() {
        let h = Header { kind: Kind::Sealed, from: 3, to: 9, pn: 0x0102 };
        let mut b = vec![];
        h.emit(&mut b);
        assert_eq!(b, [b'W', b'P', 1, 0, 0, 0, 0, 3, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 1, 2]);
        assert_eq!(Header::parse(&b), Ok(h));
        assert_eq!(Header::parse(&b[..19]), Err(PacketError::Short(19)));
        b[3] = 7;
        assert_eq!(Header::parse(&b), Err(PacketError::Kind(7)));
        b[0] = b'X';
        assert_eq!(Header::parse(&b), Err(PacketError::Magic));
    }

    #[test]
    fn data_chunk_length_is_implied_by_its_span() {
        let p = payload(|o| {
            emit_data_header(o, 2, 5, 10, 1, 4);
            o.extend_from_slice(b"abcd");
            emit_data_header(o, 2, 5, 10, 2, 4);
            o.extend_from_slice(b"ef");
            emit_ping(o);
        });
        let (floor, chunks) = parse_payload(&p).unwrap();
        assert_eq!(floor, 7);
        let v: Vec<_> = chunks.collect::<Result<_, _>>().unwrap();
        assert_eq!(v.len(), 3);
        assert!(matches!(v[0], Chunk::Data(DataChunk { index: 1, bytes: b"abcd", .. })));
        assert!(matches!(v[1], Chunk::Data(DataChunk { index: 2, bytes: b"ef", .. })));
        assert_eq!(v[2], Chunk::Ping);
    }

    #[test]
    fn data_past_the_frame_or_truncated_is_rejected() {
        let p = payload(|o| emit_data_header(o, 0, 0, 10, 3, 4));
        assert_eq!(parse_payload(&p).unwrap().1.next(), Some(Err(PacketError::Bad("DATA", "chunk index past the frame"))));
        let p = payload(|o| {
            emit_data_header(o, 0, 0, 10, 0, 4);
            o.extend_from_slice(b"abc");
        });
        assert_eq!(parse_payload(&p).unwrap().1.next(), Some(Err(PacketError::Truncated("DATA"))));
        let p = payload(|o| emit_data_header(o, 0, 0, 10, 0, 0));
        assert!(parse_payload(&p).unwrap().1.next().unwrap().is_err());
    }

    #[test]
    fn empty_frame_has_one_empty_chunk() {
        assert_eq!(chunk_count(0, 1400), 1);
        assert_eq!(chunk_span(0, 1400, 0), Some((0, 0)));
        assert_eq!(chunk_span(0, 1400, 1), None);
        assert_eq!(chunk_count(2800, 1400), 2);
        assert_eq!(chunk_span(2801, 1400, 2), Some((2800, 2801)));
    }

    #[test]
    fn ack_bitmap_semantics() {
        // cum 10: 0..10 acked; bitmap from 12: bits 0 and 2 -> 12, 14.
        let p = payload(|o| emit_ack(o, 10, 12, 5, 99, 3, &[0b101]));
        let Some(Ok(Chunk::Ack(a))) = parse_payload(&p).unwrap().1.next() else { panic!() };
        assert!(a.covers(9) && !a.covers(10) && !a.covers(11) && a.covers(12) && !a.covers(13) && a.covers(14) && !a.covers(15));
        assert_eq!(a.largest(), Some(14));
        assert_eq!(a.max_data, 99);
        let p = payload(|o| emit_ack(o, 0, 0, 0, 0, 0, &[]));
        let Some(Ok(Chunk::Ack(a))) = parse_payload(&p).unwrap().1.next() else { panic!() };
        assert_eq!(a.largest(), None);
    }

    #[test]
    fn hostile_acks_are_rejected() {
        let p = payload(|o| emit_ack(o, 10, 5, 0, 0, 0, &[]));
        assert!(parse_payload(&p).unwrap().1.next().unwrap().is_err(), "base below cum");
        let mut p = payload(|o| emit_ack(o, 0, 0, 0, 0, 16, &[0xff, 0xff]));
        p.truncate(p.len() - 1);
        assert_eq!(parse_payload(&p).unwrap().1.next(), Some(Err(PacketError::Truncated("ACK"))));
        let p = payload(|o| emit_ack(o, 0, u64::MAX - 2, 0, 0, 8, &[1]));
        assert!(parse_payload(&p).unwrap().1.next().unwrap().is_err(), "bitmap past u64");
    }

    #[test]
    fn repair_shapes() {
        let p = payload(|o| emit_repair(o, 100, 4, 2, 1, b"xyz"));
        let Some(Ok(Chunk::Repair(r))) = parse_payload(&p).unwrap().1.next() else { panic!() };
        assert_eq!((r.first, r.k, r.m, r.index, r.shard), (100, 4, 2, 1, &b"xyz"[..]));
        let p = payload(|o| emit_repair(o, 100, 4, 2, 2, b"xyz"));
        assert!(parse_payload(&p).unwrap().1.next().unwrap().is_err(), "index >= m");
    }

    #[test]
    fn unknown_chunk_type_ends_parsing() {
        let p = payload(|o| o.push(0xee));
        let mut it = parse_payload(&p).unwrap().1;
        assert_eq!(it.next(), Some(Err(PacketError::ChunkType(0xee))));
        assert_eq!(it.next(), None);
    }
}
