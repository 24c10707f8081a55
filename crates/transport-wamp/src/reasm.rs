//! The receiver's side of frames: chunks are placed at their offset in the
//! frame's buffer in any order (the paper's direct placement), a complete
//! frame is delivered when every earlier frame of its channel was, so each
//! channel is in order and a loss delays only its own channel. Memory is
//! bounded: buffers for a peer's frames never exceed the credit we granted
//! it (plus one frame of slack); a packet that would pass that is refused
//! whole and not acknowledged, so nothing is lost.

use crate::packet::{chunk_count, DataChunk};
use std::collections::{HashMap, VecDeque};

/// How far ahead of the next expected frame a channel's sequence number
/// may be.
const MAX_SEQ_AHEAD: u32 = 1 << 20;

struct Partial {
    buf: Vec<u8>,
    chunk: u16,
    got: Vec<bool>,
    missing: u32,
}

#[derive(Default)]
struct Channel {
    next: u32,
    frames: HashMap<u32, Partial>,
}

#[derive(Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Malformed or impossible for this job: drop the packet, count it.
    Bad(&'static str),
    /// No room now; the sender will resend.
    NoRoom,
}

pub struct Reasm {
    channels: Vec<Channel>,
    max_frame: u32,
    /// Bytes of frame buffers held (partial, complete-but-waiting, ready).
    held: u64,
    limit: u64,
    /// Bytes handed to the engine so far (credit comes back with them).
    delivered: u64,
    ready: VecDeque<(u16, Vec<u8>)>,
    /// Buffers of delivered frames, for the next frames: a fresh large
    /// allocation is a fresh mapping, and its page faults and zeroing cost
    /// as much as the data's own copy on loopback.
    spare: Vec<Vec<u8>>,
}

/// Buffers kept for reuse.
const SPARE: usize = 8;

/// An empty buffer with room for `len` bytes, from `spare` when one is
/// large enough.
pub(crate) fn take_capacity(spare: &mut Vec<Vec<u8>>, len: usize) -> Vec<u8> {
    match spare.iter().position(|b| b.capacity() >= len) {
        Some(i) => {
            let mut b = spare.swap_remove(i);
            b.clear();
            b
        }
        None => Vec::with_capacity(len),
    }
}

/// A buffer of `len` zero bytes, from `spare` when one is large enough.
fn take_buffer(spare: &mut Vec<Vec<u8>>, len: usize) -> Vec<u8> {
    let mut b = take_capacity(spare, len);
    b.resize(len, 0);
    b
}

/// Keeps `b` for reuse if it is worth keeping and there is room.
pub(crate) fn keep_buffer(spare: &mut Vec<Vec<u8>>, b: Vec<u8>) {
    if b.capacity() >= 4096 && spare.len() < SPARE {
        spare.push(b);
    }
}

impl Reasm {
    pub fn new(channels: u16, max_frame: usize, limit: u64) -> Reasm {
        Reasm {
            channels: (0..channels).map(|_| Channel::default()).collect(),
            max_frame: max_frame as u32,
            held: 0,
            limit,
            delivered: 0,
            ready: VecDeque::new(),
            spare: vec![],
        }
    }

    pub fn delivered(&self) -> u64 {
        self.delivered
    }

    /// Checks a chunk; returns the bytes a new buffer for it would take.
    pub fn check(&self, d: &DataChunk<'_>) -> Result<u64, Refusal> {
        let ch = self.channels.get(d.channel as usize).ok_or(Refusal::Bad("channel out of range"))?;
        if d.frame_len > self.max_frame {
            return Err(Refusal::Bad("frame longer than the maximum"));
        }
        let ahead = d.seq.wrapping_sub(ch.next);
        if ahead >= u32::MAX / 2 {
            return Ok(0); // an old frame, already delivered: a duplicate
        }
        if ahead >= MAX_SEQ_AHEAD {
            return Err(Refusal::Bad("frame sequence too far ahead"));
        }
        match ch.frames.get(&d.seq) {
            Some(p) if p.buf.len() != d.frame_len as usize || p.chunk != d.chunk => Err(Refusal::Bad("chunk disagrees with its frame")),
            Some(_) => Ok(0),
            None => Ok(d.frame_len as u64),
        }
    }

    /// Checks every data chunk of one packet; returns the bytes new buffers
    /// for them would take. Chunks of a frame the packet itself opens must
    /// agree with each other too: `place` sizes the frame by the first.
    pub fn check_packet<'a>(&self, chunks: impl Iterator<Item = &'a DataChunk<'a>>) -> Result<u64, Refusal> {
        let mut opened: Vec<(u16, u32, u32, u16)> = vec![];
        let mut new_bytes = 0;
        for d in chunks {
            let n = self.check(d)?;
            // An empty frame opens with n == 0, so ask whether it is new.
            if !self.is_new(d) {
                continue;
            }
            match opened.iter().find(|o| (o.0, o.1) == (d.channel, d.seq)) {
                Some(o) if (o.2, o.3) != (d.frame_len, d.chunk) => return Err(Refusal::Bad("chunk disagrees with its frame")),
                Some(_) => {}
                None => {
                    opened.push((d.channel, d.seq, d.frame_len, d.chunk));
                    new_bytes += n;
                }
            }
        }
        Ok(new_bytes)
    }

    /// Whether a checked chunk would open a frame buffer.
    fn is_new(&self, d: &DataChunk<'_>) -> bool {
        let ch = &self.channels[d.channel as usize];
        d.seq.wrapping_sub(ch.next) < u32::MAX / 2 && !ch.frames.contains_key(&d.seq)
    }

    /// Room for `new_bytes` more of buffers.
    pub fn has_room(&self, new_bytes: u64) -> bool {
        new_bytes == 0 || self.held + new_bytes <= self.limit + self.max_frame as u64
    }

    /// Places a checked chunk; completes and releases frames in order.
    pub fn place(&mut self, d: &DataChunk<'_>) {
        let ch = &mut self.channels[d.channel as usize];
        if d.seq.wrapping_sub(ch.next) >= u32::MAX / 2 {
            return;
        }
        let spare = &mut self.spare;
        let p = ch.frames.entry(d.seq).or_insert_with(|| {
            let n = chunk_count(d.frame_len, d.chunk);
            self.held += d.frame_len as u64;
            Partial { buf: take_buffer(spare, d.frame_len as usize), chunk: d.chunk, got: vec![false; n as usize], missing: n }
        });
        let i = d.index as usize;
        if p.got[i] {
            return;
        }
        let off = i * d.chunk as usize;
        p.buf[off..off + d.bytes.len()].copy_from_slice(d.bytes);
        p.got[i] = true;
        p.missing -= 1;
        while ch.frames.get(&ch.next).is_some_and(|p| p.missing == 0) {
            let p = ch.frames.remove(&ch.next).expect("checked above");
            self.ready.push_back((d.channel, p.buf));
            ch.next = ch.next.wrapping_add(1);
        }
    }

    /// Fraction of frame (channel, seq) received, if it is being assembled.
    pub fn progress(&self, channel: u16, seq: u32) -> Option<(u32, u32)> {
        let p = self.channels.get(channel as usize)?.frames.get(&seq)?;
        Some((p.got.len() as u32 - p.missing, p.got.len() as u32))
    }

    /// A delivered frame's buffer, back for reuse.
    pub fn recycle(&mut self, b: Vec<u8>) {
        keep_buffer(&mut self.spare, b);
    }

    /// The next frame for the engine, in channel order.
    pub fn pop(&mut self) -> Option<(u16, Vec<u8>)> {
        let (c, b) = self.ready.pop_front()?;
        self.held -= b.len() as u64;
        self.delivered += b.len() as u64;
        Some((c, b))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(channel: u16, seq: u32, frame: &[u8], index: u32, size: u16) -> DataChunk<'_> {
        let (s, e) = crate::packet::chunk_span(frame.len() as u32, size, index).unwrap();
        DataChunk { channel, seq, frame_len: frame.len() as u32, index, chunk: size, bytes: &frame[s..e] }
    }

    #[test]
    fn chunks_in_any_order_make_the_frame() {
        let mut r = Reasm::new(1, 100, 1000);
        let f = b"0123456789";
        for i in [2, 0, 1] {
            let c = chunk(0, 0, f, i, 4);
            assert_eq!(r.check(&c).unwrap(), if i == 2 { 10 } else { 0 });
            r.place(&c);
        }
        assert_eq!(r.pop(), Some((0, f.to_vec())));
        assert_eq!(r.delivered(), 10);
    }

    #[test]
    fn a_channel_keeps_order_and_another_is_not_held_up() {
        let mut r = Reasm::new(2, 100, 1000);
        r.place(&chunk(0, 1, b"second", 0, 100));
        r.place(&chunk(1, 0, b"other", 0, 100));
        assert_eq!(r.pop(), Some((1, b"other".to_vec())));
        assert_eq!(r.pop(), None);
        r.place(&chunk(0, 0, b"first", 0, 100));
        assert_eq!(r.pop(), Some((0, b"first".to_vec())));
        assert_eq!(r.pop(), Some((0, b"second".to_vec())));
    }

    #[test]
    fn duplicates_and_old_frames_are_ignored() {
        let mut r = Reasm::new(1, 100, 1000);
        let c = chunk(0, 0, b"abc", 0, 100);
        r.place(&c);
        assert_eq!(r.check(&c), Ok(0));
        r.place(&c);
        assert_eq!(r.pop(), Some((0, b"abc".to_vec())));
        assert_eq!(r.pop(), None);
    }

    #[test]
    fn chunks_of_one_packet_that_disagree_on_their_new_frame_are_refused() {
        let r = Reasm::new(1, 100, 1000);
        let short = b"a";
        let long = [7u8; 40];
        let first = chunk(0, 3, short, 0, 4);
        let second = chunk(0, 3, &long, 9, 4);
        assert_eq!(r.check(&first), Ok(1));
        assert_eq!(r.check(&second), Ok(40), "each alone looks fine");
        assert!(matches!(r.check_packet([&first, &second].into_iter()), Err(Refusal::Bad(_))));
        let empty = chunk(0, 4, b"", 0, 4);
        let later = chunk(0, 4, &long, 9, 4);
        assert!(matches!(r.check_packet([&empty, &later].into_iter()), Err(Refusal::Bad(_))), "an empty frame is a frame");
        let again = chunk(0, 3, short, 0, 4);
        assert_eq!(r.check_packet([&first, &again].into_iter()), Ok(1), "a new frame counts once");
    }

    #[test]
    fn hostile_chunks_are_refused() {
        let r = Reasm::new(1, 100, 1000);
        let big = vec![0u8; 200];
        assert!(matches!(r.check(&chunk(0, 0, &big, 0, 100)), Err(Refusal::Bad(_))));
        assert!(matches!(r.check(&chunk(3, 0, b"x", 0, 100)), Err(Refusal::Bad(_))));
        assert!(matches!(r.check(&chunk(0, MAX_SEQ_AHEAD, b"x", 0, 100)), Err(Refusal::Bad(_))));
        let mut r = Reasm::new(1, 100, 1000);
        r.place(&chunk(0, 1, b"abcdef", 0, 4));
        assert!(matches!(r.check(&chunk(0, 1, b"abcdefg", 1, 4)), Err(Refusal::Bad(_))), "length disagrees");
    }

    #[test]
    fn memory_is_bounded_by_the_limit() {
        let mut r = Reasm::new(4, 100, 150);
        let f = [0u8; 100];
        assert!(r.has_room(100));
        r.place(&chunk(0, 1, &f, 0, 10));
        assert!(r.has_room(100));
        r.place(&chunk(1, 1, &f, 0, 10));
        assert!(!r.has_room(100), "held 200 of 150 + one frame");
    }
}
