//! The sender's copy of every frame until all of it is acknowledged: the
//! paper's "preallocated buffer per message", cut into fixed chunks that
//! are sent, acknowledged and resent by index. New chunks go out in the order
//! the engine offered their frames, but a frame of one chunk (a control
//! frame, a short message) goes ahead of the unsent chunks of longer ones;
//! resends of lost chunks go first of all.
//!
//! Why short frames go ahead: the send queue holds megabytes, seconds of a
//! WAN connection's early rate, and a receiver's answers (the WAN window's
//! returned bytes, a clear-to-send) waited behind all of it. In the plain-MPI
//! farm at 80 ms the returned window came so late that workers fell back to
//! rendezvous, which the manager's one posted receive paid a round trip
//! each: 2-10x the compute bound instead of 1.4x. Order within a channel is
//! the receiver's to keep (frames carry their channel sequence).

use crate::packet::{chunk_count, chunk_span};
use std::collections::VecDeque;

/// A chunk of a frame, by the frame's id (its place in offer order).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkRef {
    pub frame: u64,
    pub index: u32,
}

struct OutFrame {
    channel: u16,
    seq: u32,
    bytes: Vec<u8>,
    chunk: u16,
    count: u32,
    /// Chunks never sent start here.
    next_new: u32,
    acked: Vec<bool>,
    unacked: u32,
}

/// A chunk ready to go: where it belongs and its bytes.
pub struct Piece<'a> {
    pub r: ChunkRef,
    pub channel: u16,
    pub seq: u32,
    pub frame_len: u32,
    pub chunk: u16,
    pub bytes: &'a [u8],
}

pub struct SendBuf {
    frames: VecDeque<OutFrame>,
    /// Id of `frames[0]`.
    base: u64,
    /// First frame that still has never-sent chunks.
    cursor: u64,
    next_seq: Vec<u32>,
    resend: VecDeque<ChunkRef>,
    /// Frames of one chunk not sent yet, by id: they go before `cursor`'s.
    short: VecDeque<u64>,
    /// Buffers of acknowledged frames, for the next offers (reasm.rs says why).
    spare: Vec<Vec<u8>>,
    /// Bytes offered but never sent once.
    unsent: usize,
    /// Sum of the lengths of frames whose first chunk went out: what the
    /// receiver's credit (max_data) is counted against.
    admitted: u64,
    chunk: u16,
}

impl SendBuf {
    pub fn new(channels: u16, chunk: u16) -> SendBuf {
        SendBuf {
            frames: VecDeque::new(),
            base: 0,
            cursor: 0,
            next_seq: vec![0; channels as usize],
            resend: VecDeque::new(),
            short: VecDeque::new(),
            spare: vec![],
            unsent: 0,
            admitted: 0,
            chunk,
        }
    }

    pub fn unsent_bytes(&self) -> usize {
        self.unsent
    }

    pub fn admitted(&self) -> u64 {
        self.admitted
    }

    /// Nothing is waiting for its first send or a resend.
    pub fn nothing_to_send(&self) -> bool {
        self.resend.is_empty() && self.cursor >= self.base + self.frames.len() as u64
    }

    /// Every frame offered was acknowledged whole.
    pub fn all_acked(&self) -> bool {
        self.frames.is_empty()
    }

    /// Takes a copy of a frame (the parts concatenated) for `channel`.
    pub fn offer(&mut self, channel: u16, parts: &[&[u8]]) {
        let len: usize = parts.iter().map(|p| p.len()).sum();
        let mut bytes = crate::reasm::take_capacity(&mut self.spare, len);
        for p in parts {
            bytes.extend_from_slice(p);
        }
        let seq = self.next_seq[channel as usize];
        self.next_seq[channel as usize] = seq.wrapping_add(1);
        let count = chunk_count(len as u32, self.chunk);
        self.unsent += len;
        if count == 1 {
            self.short.push_back(self.base + self.frames.len() as u64);
        }
        self.frames.push_back(OutFrame {
            channel,
            seq,
            bytes,
            chunk: self.chunk,
            count,
            next_new: 0,
            acked: vec![false; count as usize],
            unacked: count,
        });
    }

    fn frame(&self, id: u64) -> Option<&OutFrame> {
        id.checked_sub(self.base).and_then(|i| self.frames.get(i as usize))
    }

    fn still_needed(&self, r: ChunkRef) -> bool {
        self.frame(r.frame).is_some_and(|f| !f.acked[r.index as usize])
    }

    /// Size of the DATA bytes of the next piece, if any (for fitting it into
    /// a datagram), and whether it needs `credit` more bytes of receiver
    /// credit (a frame's first chunk).
    pub fn peek(&mut self, credit: u64) -> Option<usize> {
        while let Some(&r) = self.resend.front() {
            if self.still_needed(r) {
                let f = self.frame(r.frame).expect("needed chunk has its frame");
                let (s, e) = chunk_span(f.bytes.len() as u32, f.chunk, r.index).expect("index within frame");
                return Some(e - s);
            }
            self.resend.pop_front();
        }
        while let Some(&id) = self.short.front() {
            match self.frame(id) {
                Some(f) if f.next_new == 0 => {
                    return (self.admitted + f.bytes.len() as u64 <= credit).then_some(f.bytes.len());
                }
                _ => {
                    self.short.pop_front();
                }
            }
        }
        let f = self.frame(self.cursor)?;
        if f.next_new == 0 && self.admitted + f.bytes.len() as u64 > credit {
            return None;
        }
        let (s, e) = chunk_span(f.bytes.len() as u32, f.chunk, f.next_new).expect("index within frame");
        Some(e - s)
    }

    /// Moves `cursor` past frames whose every chunk went out (a short frame
    /// sent ahead of its turn).
    fn skip_sent(&mut self) {
        while self.frame(self.cursor).is_some_and(|f| f.next_new == f.count) {
            self.cursor += 1;
        }
    }

    /// Takes the piece `peek` described.
    pub fn take(&mut self) -> Option<Piece<'_>> {
        let short = self.short.front().copied().filter(|&id| self.frame(id).is_some_and(|f| f.next_new == 0));
        let r = match self.resend.pop_front() {
            Some(r) => r,
            None if short.is_some() => {
                let id = self.short.pop_front().expect("checked");
                let i = (id - self.base) as usize;
                let f = &mut self.frames[i];
                f.next_new = 1;
                self.admitted += f.bytes.len() as u64;
                self.unsent -= f.bytes.len();
                self.skip_sent();
                ChunkRef { frame: id, index: 0 }
            }
            None => {
                let cursor = self.cursor;
                let i = (cursor - self.base) as usize;
                let f = self.frames.get_mut(i)?;
                let index = f.next_new;
                if index == 0 {
                    self.admitted += f.bytes.len() as u64;
                }
                f.next_new += 1;
                let (s, e) = chunk_span(f.bytes.len() as u32, f.chunk, index).expect("index within frame");
                self.unsent -= e - s;
                self.skip_sent();
                ChunkRef { frame: cursor, index }
            }
        };
        let f = self.frame(r.frame)?;
        let (s, e) = chunk_span(f.bytes.len() as u32, f.chunk, r.index).expect("index within frame");
        Some(Piece { r, channel: f.channel, seq: f.seq, frame_len: f.bytes.len() as u32, chunk: f.chunk, bytes: &f.bytes[s..e] })
    }

    /// A packet carrying `r` was acknowledged.
    pub fn ack(&mut self, r: ChunkRef) {
        let Some(i) = r.frame.checked_sub(self.base) else { return };
        let Some(f) = self.frames.get_mut(i as usize) else { return };
        if !f.acked[r.index as usize] {
            f.acked[r.index as usize] = true;
            f.unacked -= 1;
        }
        while self.frames.front().is_some_and(|f| f.unacked == 0) {
            let f = self.frames.pop_front().expect("checked");
            crate::reasm::keep_buffer(&mut self.spare, f.bytes);
            self.base += 1;
        }
        self.cursor = self.cursor.max(self.base);
        self.skip_sent();
    }

    /// A packet carrying `r` was lost: send it again unless already acked.
    pub fn lost(&mut self, r: ChunkRef) {
        if self.still_needed(r) {
            self.resend.push_back(r);
        }
    }

    /// Resend `r` first, as a probe (nothing was declared lost).
    pub fn probe(&mut self, r: ChunkRef) {
        if self.still_needed(r) && !self.resend.contains(&r) {
            self.resend.push_front(r);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn take_all(b: &mut SendBuf, credit: u64) -> Vec<(ChunkRef, Vec<u8>)> {
        let mut v = vec![];
        while b.peek(credit).is_some() {
            let p = b.take().unwrap();
            v.push((p.r, p.bytes.to_vec()));
        }
        v
    }

    #[test]
    fn frames_cut_into_chunks_and_freed_when_acked() {
        let mut b = SendBuf::new(2, 4);
        b.offer(1, &[b"abc", b"defgh"]);
        b.offer(0, &[b"xy"]);
        assert_eq!(b.unsent_bytes(), 10);
        let v = take_all(&mut b, u64::MAX);
        let bytes: Vec<&[u8]> = v.iter().map(|x| &x.1[..]).collect();
        // The short frame goes ahead of the long one's chunks.
        assert_eq!(bytes, [&b"xy"[..], b"abcd", b"efgh"]);
        assert!(b.nothing_to_send() && !b.all_acked());
        for (r, _) in &v {
            b.ack(*r);
        }
        assert!(b.all_acked());
    }

    #[test]
    fn lost_chunks_go_first_and_acked_ones_are_not_resent() {
        let mut b = SendBuf::new(1, 2);
        b.offer(0, &[b"aabbcc"]);
        let v = take_all(&mut b, u64::MAX);
        b.lost(v[0].0);
        b.lost(v[2].0);
        b.ack(v[2].0);
        let again = take_all(&mut b, u64::MAX);
        assert_eq!(again.len(), 1);
        assert_eq!(again[0].1, b"aa");
    }

    #[test]
    fn credit_holds_back_a_new_frame() {
        let mut b = SendBuf::new(1, 100);
        b.offer(0, &[&[0u8; 60]]);
        b.offer(0, &[&[0u8; 60]]);
        assert_eq!(take_all(&mut b, 100).len(), 1);
        assert_eq!(b.admitted(), 60);
        assert_eq!(take_all(&mut b, 120).len(), 1);
    }

    #[test]
    fn short_frames_go_ahead_of_a_long_one_and_nothing_goes_twice() {
        let mut b = SendBuf::new(2, 4);
        b.offer(1, &[b"aaaabbbbcccc"]);
        let first = b.take().unwrap().bytes.to_vec();
        b.offer(0, &[b"x"]);
        b.offer(1, &[b"y"]);
        b.offer(1, &[b"ddddeeee"]);
        let rest: Vec<Vec<u8>> = take_all(&mut b, u64::MAX).into_iter().map(|x| x.1).collect();
        assert_eq!(first, b"aaaa");
        assert_eq!(rest, [&b"x"[..], b"y", b"bbbb", b"cccc", b"dddd", b"eeee"]);
        assert!(b.nothing_to_send());
        assert_eq!(b.unsent_bytes(), 0);
    }

    #[test]
    fn a_short_frame_waits_for_credit_like_any_other() {
        let mut b = SendBuf::new(1, 100);
        b.offer(0, &[&[0u8; 150]]);
        b.offer(0, &[&[0u8; 10]]);
        assert_eq!(take_all(&mut b, 160).len(), 3);
        assert_eq!(b.admitted(), 160);
        let mut c = SendBuf::new(1, 100);
        c.offer(0, &[&[0u8; 150]]);
        c.take().unwrap();
        c.offer(0, &[&[0u8; 20]]);
        assert!(c.peek(160).is_none(), "no credit for the short frame: it waits");
    }

    #[test]
    fn empty_frame_is_one_chunk() {
        let mut b = SendBuf::new(1, 100);
        b.offer(0, &[]);
        let v = take_all(&mut b, u64::MAX);
        assert_eq!(v.len(), 1);
        b.ack(v[0].0);
        assert!(b.all_acked());
    }
}
