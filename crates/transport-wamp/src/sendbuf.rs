//! The sender's copy of every frame until all of it is acknowledged: the
//! paper's "preallocated buffer per message", cut into fixed chunks that
//! are sent, acknowledged and resent by index. New chunks go out in the order
//! the engine offered their frames; resends of lost chunks go first.

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
        let f = self.frame(self.cursor)?;
        if f.next_new == 0 && self.admitted + f.bytes.len() as u64 > credit {
            return None;
        }
        let (s, e) = chunk_span(f.bytes.len() as u32, f.chunk, f.next_new).expect("index within frame");
        Some(e - s)
    }

    /// Takes the piece `peek` described.
    pub fn take(&mut self) -> Option<Piece<'_>> {
        let r = match self.resend.pop_front() {
            Some(r) => r,
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
                if f.next_new == f.count {
                    self.cursor += 1;
                }
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
    fn frames_cut_into_chunks_in_order_and_freed_when_acked() {
        let mut b = SendBuf::new(2, 4);
        b.offer(1, &[b"abc", b"defgh"]);
        b.offer(0, &[b"xy"]);
        assert_eq!(b.unsent_bytes(), 10);
        let v = take_all(&mut b, u64::MAX);
        let bytes: Vec<&[u8]> = v.iter().map(|x| &x.1[..]).collect();
        assert_eq!(bytes, [&b"abcd"[..], b"efgh", b"xy"]);
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
    fn empty_frame_is_one_chunk() {
        let mut b = SendBuf::new(1, 100);
        b.offer(0, &[]);
        let v = take_all(&mut b, u64::MAX);
        assert_eq!(v.len(), 1);
        b.ack(v[0].0);
        assert!(b.all_acked());
    }
}
