//! Receiving side of one connection: reads the byte stream and cuts it into
//! frames (u32 little-endian length, then that many bytes).
//!
//! Frames that fit the per-connection buffer are handed out as slices of it,
//! with no copy; a frame that spans reads is completed in place (moving its
//! head to the front of the buffer when needed); a frame larger than the
//! buffer is read straight into a dedicated buffer of its size.
//!
//! On a sealed connection (`record`) a frame's wire bytes are its records;
//! they are opened in place where they arrived (a large frame's records as
//! each completes, while the rest is still on its way) and the frame is
//! handed out only once every record opened. A record that fails to open
//! stops the connection: nothing after it is delivered.
//!
//! A length prefix with its top bit set (`stream::CONTROL`) is a control
//! frame of the transport (an acknowledgement); it is cut and opened like
//! any frame and handed out flagged.

use crate::record::{wire_len, Progress};
use crate::seal::Opener;
use crate::stream::CONTROL;
use std::io::{self, Read};
use thiserror::Error;

/// Per-connection receive buffer: big enough that one read takes many small
/// frames or a good slice of a big one.
pub(crate) const RX_BUF: usize = 256 * 1024;

/// Bytes read from one connection per drain before giving the others a turn
/// (epoll is level-triggered, so the rest is reported on the next call).
pub(crate) const DRAIN_BUDGET: usize = 16 << 20;

const LEN_PREFIX: usize = 4;

#[derive(Debug, Error)]
pub(crate) enum RxError {
    #[error("connection closed by peer{}", if *.mid_frame { " in the middle of a frame" } else { "" })]
    Closed { mid_frame: bool },
    #[error("protocol violation: frame length {len} exceeds the maximum of {max}")]
    TooLarge { len: usize, max: usize },
    #[error("receive failed: {0}")]
    Io(io::Error),
    #[error("integrity check failed on record {record}: bytes were altered, injected, dropped, replayed or reordered on the way; the connection is no longer trusted")]
    Tampered { record: u64 },
}

/// Why a drain stopped without error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Drained {
    /// The socket has nothing more now.
    Empty,
    /// The budget ran out; more may be waiting.
    Budget,
}

pub(crate) struct RxBuf {
    buf: Box<[u8]>,
    start: usize,
    end: usize,
    /// A frame too big for `buf`, being filled: its bytes and how many arrived.
    large: Vec<u8>,
    /// Wire bytes of the large frame (its length, plus tags when sealed).
    large_len: Option<usize>,
    large_filled: usize,
    /// Some on a sealed connection.
    opener: Option<Opener>,
    /// The large frame's prefix and how far its records are opened.
    large_aad: [u8; LEN_PREFIX],
    large_progress: Progress,
    /// How far the records of the frame at `start` are opened (once
    /// `head_started`); offsets from its body, so compaction keeps them.
    head: Progress,
    head_started: bool,
}

fn read_some<R: Read>(r: &mut R, buf: &mut [u8], mid_frame: bool) -> Result<Option<usize>, RxError> {
    loop {
        match r.read(buf) {
            Ok(0) => return Err(RxError::Closed { mid_frame }),
            Ok(n) => return Ok(Some(n)),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(None),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(RxError::Io(e)),
        }
    }
}

impl RxBuf {
    pub(crate) fn new(capacity: usize, opener: Option<Opener>) -> RxBuf {
        RxBuf {
            buf: vec![0u8; capacity.max(2 * LEN_PREFIX)].into_boxed_slice(),
            start: 0,
            end: 0,
            large: Vec::new(),
            large_len: None,
            large_filled: 0,
            opener,
            large_aad: [0; LEN_PREFIX],
            large_progress: Progress::new(0),
            head: Progress::new(0),
            head_started: false,
        }
    }

    /// Bytes a frame of `len` bytes takes on the wire after its prefix.
    fn wire(&self, len: usize) -> usize {
        if self.opener.is_some() {
            wire_len(len)
        } else {
            len
        }
    }

    /// Reads from `r` until it would block (or `budget` bytes), handing each
    /// complete frame to `deliver` (true: a control frame). Returns the
    /// number of frames delivered.
    pub(crate) fn drain<R: Read>(
        &mut self,
        r: &mut R,
        max_frame: usize,
        budget: usize,
        deliver: &mut dyn FnMut(bool, &[u8]),
    ) -> Result<(usize, Drained), RxError> {
        let mut frames = 0;
        let mut read_total = 0;
        loop {
            if let Some(len) = self.large_len {
                let Some(n) = read_some(r, &mut self.large[self.large_filled..len], true)? else {
                    return Ok((frames, Drained::Empty));
                };
                self.large_filled += n;
                read_total += n;
                let opened = match &mut self.opener {
                    // Open the records complete so far, while the rest arrives.
                    Some(o) => self
                        .large_progress
                        .advance(o, &self.large_aad, &mut self.large[..len], self.large_filled)
                        .map_err(|e| RxError::Tampered { record: e.record })?,
                    None => true,
                };
                if self.large_filled == len && opened {
                    let raw = u32::from_le_bytes(self.large_aad);
                    let plain = (raw & !CONTROL) as usize;
                    deliver(raw & CONTROL != 0, &self.large[..plain]);
                    frames += 1;
                    self.large_len = None;
                }
            } else {
                frames += self.deliver_complete(max_frame, deliver)?;
                if self.start_large_frame() {
                    continue;
                }
                let mid_frame = self.end > self.start;
                let Some(n) = read_some(r, &mut self.buf[self.end..], mid_frame)? else {
                    return Ok((frames, Drained::Empty));
                };
                self.end += n;
                read_total += n;
            }
            if read_total >= budget {
                frames += self.deliver_complete(max_frame, deliver)?;
                return Ok((frames, Drained::Budget));
            }
        }
    }

    /// Hands out every complete frame in the buffer, then makes room so the
    /// pending partial frame (if any) can complete in place.
    fn deliver_complete(&mut self, max_frame: usize, deliver: &mut dyn FnMut(bool, &[u8])) -> Result<usize, RxError> {
        let mut frames = 0;
        while let Some(len) = self.pending_len() {
            if len > max_frame {
                return Err(RxError::TooLarge { len, max: max_frame });
            }
            let body = self.start + LEN_PREFIX;
            let wire = self.wire(len);
            let arrived = (self.end - body).min(wire);
            match &mut self.opener {
                // Too big for the buffer: start_large_frame takes it.
                Some(_) if LEN_PREFIX + wire > self.buf.len() => break,
                Some(o) => {
                    // Records open as they complete, even before the frame does.
                    if !self.head_started {
                        self.head = Progress::new(len);
                        self.head_started = true;
                    }
                    let mut aad = [0u8; LEN_PREFIX];
                    aad.copy_from_slice(&self.buf[self.start..body]);
                    let whole = self
                        .head
                        .advance(o, &aad, &mut self.buf[body..body + arrived], arrived)
                        .map_err(|e| RxError::Tampered { record: e.record })?;
                    if !whole {
                        break;
                    }
                }
                None if arrived < wire => break,
                None => {}
            }
            let control = self.buf[self.start + LEN_PREFIX - 1] & (CONTROL >> 24) as u8 != 0;
            deliver(control, &self.buf[body..body + len]);
            frames += 1;
            self.start = body + wire;
            self.head_started = false;
        }
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
        let need = self.pending_len().map_or(LEN_PREFIX, |l| LEN_PREFIX + self.wire(l));
        if need <= self.buf.len() && (self.start + need > self.buf.len() || self.end == self.buf.len()) {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        Ok(frames)
    }

    /// Length of the frame at `start`, once its prefix has arrived (the
    /// control bit left out).
    fn pending_len(&self) -> Option<usize> {
        let p = self.buf.get(self.start..self.start + LEN_PREFIX).filter(|_| self.end - self.start >= LEN_PREFIX)?;
        Some((u32::from_le_bytes([p[0], p[1], p[2], p[3]]) & !CONTROL) as usize)
    }

    /// Moves a frame too large for the buffer into its own right-sized one.
    fn start_large_frame(&mut self) -> bool {
        let Some(plain) = self.pending_len() else { return false };
        let len = self.wire(plain);
        if LEN_PREFIX + len <= self.buf.len() {
            return false;
        }
        self.large_aad.copy_from_slice(&self.buf[self.start..self.start + LEN_PREFIX]);
        self.large_progress = Progress::new(plain);
        if self.large.len() < len {
            // Grows only; reused for later large frames without re-zeroing.
            self.large.resize(len, 0);
        }
        let head = &self.buf[self.start + LEN_PREFIX..self.end];
        self.large[..head.len()].copy_from_slice(head);
        self.large_filled = head.len();
        self.large_len = Some(len);
        self.start = 0;
        self.end = 0;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;

    /// A reader that returns scripted chunks, then WouldBlock, or EOF.
    struct Script {
        chunks: VecDeque<Vec<u8>>,
        eof: bool,
    }

    impl Read for Script {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            let Some(mut c) = self.chunks.pop_front() else {
                return if self.eof { Ok(0) } else { Err(io::ErrorKind::WouldBlock.into()) };
            };
            let n = c.len().min(out.len());
            out[..n].copy_from_slice(&c[..n]);
            if n < c.len() {
                c.drain(..n);
                self.chunks.push_front(c);
            }
            Ok(n)
        }
    }

    fn frame(body: &[u8]) -> Vec<u8> {
        let mut v = (body.len() as u32).to_le_bytes().to_vec();
        v.extend_from_slice(body);
        v
    }

    fn split(bytes: &[u8], chunk: usize) -> VecDeque<Vec<u8>> {
        bytes.chunks(chunk).map(|c| c.to_vec()).collect()
    }

    type Collected = (Result<(usize, Drained), RxError>, Vec<Vec<u8>>);

    fn collect(rx: &mut RxBuf, s: &mut Script, max: usize) -> Collected {
        let mut got = vec![];
        let r = rx.drain(s, max, usize::MAX, &mut |_, f| got.push(f.to_vec()));
        (r, got)
    }

    #[test]
    fn frames_split_at_every_chunk_size_arrive_whole_and_in_order() {
        let bodies: Vec<Vec<u8>> = (0..40usize).map(|i| (0..i * 7).map(|b| (b ^ i) as u8).collect()).collect();
        let stream: Vec<u8> = bodies.iter().flat_map(|b| frame(b)).collect();
        for chunk in [1, 3, 4, 5, 64, 1000, stream.len()] {
            let mut rx = RxBuf::new(64, None); // small buffer: forces compaction and large frames
            let mut s = Script { chunks: split(&stream, chunk), eof: false };
            let (r, got) = collect(&mut rx, &mut s, 1 << 20);
            assert_eq!(r.unwrap(), (bodies.len(), Drained::Empty), "chunk {chunk}");
            assert_eq!(got, bodies, "chunk {chunk}");
        }
    }

    #[test]
    fn a_frame_larger_than_the_buffer_is_read_into_its_own() {
        let big: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        let mut stream = frame(b"a");
        stream.extend(frame(&big));
        stream.extend(frame(b"z"));
        let mut rx = RxBuf::new(1024, None);
        let mut s = Script { chunks: split(&stream, 700), eof: false };
        let (r, got) = collect(&mut rx, &mut s, 1 << 20);
        assert_eq!(r.unwrap().0, 3);
        assert_eq!(got, vec![b"a".to_vec(), big, b"z".to_vec()]);
    }

    #[test]
    fn control_frames_are_flagged_and_not_counted_against_max_frame() {
        let mut stream = frame(b"data");
        stream.extend_from_slice(&crate::stream::ack_frame(5));
        stream.extend(frame(b"more"));
        let mut rx = RxBuf::new(64, None);
        let mut s = Script { chunks: split(&stream, 5), eof: false };
        let mut got = vec![];
        rx.drain(&mut s, 8, usize::MAX, &mut |c, f| got.push((c, f.to_vec()))).unwrap();
        assert_eq!(got, vec![(false, b"data".to_vec()), (true, 5u64.to_le_bytes().to_vec()), (false, b"more".to_vec())]);
    }

    #[test]
    fn a_length_over_the_maximum_is_a_violation() {
        let mut rx = RxBuf::new(1024, None);
        let mut s = Script { chunks: split(&frame(&[0u8; 11]), 100), eof: false };
        let (r, _) = collect(&mut rx, &mut s, 10);
        assert!(matches!(r, Err(RxError::TooLarge { len: 11, max: 10 })));
    }

    #[test]
    fn eof_is_reported_after_the_complete_frames() {
        let mut stream = frame(b"whole");
        stream.extend_from_slice(&frame(b"partial")[..6]);
        let mut rx = RxBuf::new(1024, None);
        let mut s = Script { chunks: split(&stream, 3), eof: true };
        let (r, got) = collect(&mut rx, &mut s, 100);
        assert!(matches!(r, Err(RxError::Closed { mid_frame: true })));
        assert_eq!(got, vec![b"whole".to_vec()]);
    }

    /// A sealed stream of `bodies`, as a sealed sender writes it.
    fn sealed_stream(bodies: &[Vec<u8>]) -> Vec<u8> {
        use crate::record::{records, seal_record, Gather};
        let mut s = crate::seal::Keys::derive(&[5; 32], b"rx", true).sealer;
        let mut out = vec![];
        for b in bodies {
            let aad = (b.len() as u32).to_le_bytes();
            out.extend_from_slice(&aad);
            let parts: [&[u8]; 1] = [b];
            let mut g = Gather::new(&parts);
            for i in 0..records(b.len()) {
                seal_record(&mut s, &aad, b.len(), i, &mut g, &mut out);
            }
        }
        out
    }

    fn sealed_rx(capacity: usize) -> RxBuf {
        RxBuf::new(capacity, Some(crate::seal::Keys::derive(&[5; 32], b"rx", false).opener))
    }

    #[test]
    fn sealed_frames_split_anywhere_open_whole_in_and_beyond_the_buffer() {
        let sizes = [0usize, 1, 12, 5000, crate::record::RECORD, 3 * crate::record::RECORD + 5, 300];
        let bodies: Vec<Vec<u8>> = sizes.iter().enumerate().map(|(k, &n)| (0..n).map(|i| (i * 7 + k) as u8).collect()).collect();
        let stream = sealed_stream(&bodies);
        // 100 KiB of buffer: the small frames in it, the 192 KiB one beyond
        // it; 256 KiB: all in it, the big one opened record by record there.
        for (chunk, cap) in [1, 17, 4096, 70_000, stream.len()].into_iter().flat_map(|c| [(c, 100 * 1024), (c, 256 * 1024)]) {
            let mut rx = sealed_rx(cap);
            let mut s = Script { chunks: split(&stream, chunk), eof: false };
            let (r, got) = collect(&mut rx, &mut s, 1 << 20);
            assert_eq!(r.unwrap(), (bodies.len(), Drained::Empty), "chunk {chunk}");
            assert_eq!(got, bodies, "chunk {chunk}");
        }
    }

    #[test]
    fn a_sealed_stream_altered_anywhere_stops_at_the_altered_record() {
        let bodies = vec![vec![1u8; 100], vec![2u8; 200_000], vec![3u8; 50]];
        let stream = sealed_stream(&bodies);
        // Byte offsets: in frame 0's record, in frame 1's third record, in frame 2's tag.
        for (at, delivered, record) in [(10, 0, 0), (4 + 116 + 4 + 2 * (65536 + 16) + 9, 1, 3), (stream.len() - 1, 2, 5)] {
            let mut t = stream.clone();
            t[at] ^= 0x80;
            for cap in [64 * 1024, 256 * 1024] {
                let mut rx = sealed_rx(cap);
                let mut s = Script { chunks: split(&t, 3000), eof: false };
                let (r, got) = collect(&mut rx, &mut s, 1 << 20);
                assert!(matches!(r, Err(RxError::Tampered { record: n }) if n == record), "byte {at}, buffer {cap}: {r:?}");
                assert_eq!(got, bodies[..delivered].to_vec(), "byte {at}, buffer {cap}: only what came before");
            }
        }
    }

    #[test]
    fn the_budget_stops_a_drain_and_the_next_one_resumes() {
        let stream: Vec<u8> = (0..10).flat_map(|i| frame(&[i as u8; 100])).collect();
        let mut rx = RxBuf::new(4096, None);
        let mut s = Script { chunks: split(&stream, 104), eof: false };
        let mut got = vec![];
        let first = rx.drain(&mut s, 1000, 300, &mut |_, f| got.push(f[0])).unwrap();
        assert_eq!(first.1, Drained::Budget);
        let second = rx.drain(&mut s, 1000, usize::MAX, &mut |_, f| got.push(f[0])).unwrap();
        assert_eq!(first.0 + second.0, 10);
        assert_eq!(got, (0..10).collect::<Vec<u8>>());
    }
}
