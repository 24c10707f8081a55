//! A single-producer/single-consumer ring of whole frames on raw memory.
//!
//! Layout: `cap` data bytes (a power of two) and two counters that only grow,
//! `tail` (bytes ever written, stored by the producer) and `head` (bytes ever
//! consumed, stored by the consumer). A byte position `p` lives at offset
//! `p & (cap - 1)`. Every record starts at an 8-aligned offset with an 8-byte
//! header word, `len` (bits 0..32) | `channel` (32..48) | `kind` (48..64),
//! followed by `len` bytes padded to 8. A record never wraps: when one would
//! not fit before the end of the data area, the producer first writes a
//! `PAD` record covering the rest, so a frame's bytes are contiguous and can
//! be handed out in place. A producer that finds the ring empty once it is
//! `RECYCLE_AT` bytes in pads to the end early (`Producer::recycle`), so
//! short messages going back and forth reuse the ring's first pages.
//!
//! Memory ordering: a record's header word is its publication. The
//! producer writes the bytes, then the header word with Release; the
//! consumer polls the word at its `head` with Acquire (zero: nothing yet),
//! so a small frame costs the consumer one cache line, not a counter and a
//! line. Before publishing a record the producer zeroes the word right after
//! it (the next record's place, inside free space): old bytes from an
//! earlier lap are never read as a header. When a record would not fit
//! before the end, the producer writes it at offset 0 first and publishes
//! the `PAD` record last. `tail` is still stored (Release) for the
//! consumer's space estimate; the consumer stores `head` with Release after
//! it is done with a record, and the producer loads `head` with Acquire
//! before reusing that space. Each side keeps its own counter locally and
//! only publishes it, so a peer scribbling on shared memory cannot make
//! this side read or write outside the data area: every value read from
//! shared memory (the other side's counter, a header word) is read once,
//! then checked against the ring before use.

use std::sync::atomic::{AtomicU64, Ordering};
use thiserror::Error;

/// Bytes of the header word in front of every record.
pub(crate) const REC_HDR: usize = 8;
const KIND_FRAME: u64 = 1;
const KIND_PAD: u64 = 2;

/// Rounds up to the record alignment.
pub(crate) const fn align8(n: usize) -> usize {
    (n + 7) & !7
}

fn word(len: usize, channel: u16, kind: u64) -> u64 {
    len as u64 | (channel as u64) << 32 | kind << 48
}

/// What a ring's content or counters broke; the peer that wrote it is
/// treated as lost.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum RingError {
    #[error("ring counters out of range (head {head}, tail {tail}, capacity {cap})")]
    BadCounters { head: u64, tail: u64, cap: usize },
    #[error("bad record at offset {off} (header {word:#018x}): {why}")]
    BadRecord { off: usize, word: u64, why: &'static str },
}

/// Where one ring lives: its two counters and its data area.
#[derive(Clone, Copy)]
pub(crate) struct RingMem {
    head: *const AtomicU64,
    tail: *const AtomicU64,
    data: *mut u8,
    cap: usize,
}

// SAFETY: RingMem is only addresses; the memory is shared by design and
// every access goes through atomics or the SPSC protocol above.
unsafe impl Send for RingMem {}

impl RingMem {
    /// # Safety
    /// `head` and `tail` must point to live `AtomicU64`s and `data` to `cap`
    /// writable, 8-aligned bytes, all valid for as long as any `Producer` or
    /// `Consumer` built from this lives. `cap` must be a power of two of at
    /// least 64.
    pub(crate) unsafe fn new(head: *const AtomicU64, tail: *const AtomicU64, data: *mut u8, cap: usize) -> RingMem {
        debug_assert!(cap.is_power_of_two() && cap >= 64 && data as usize & 7 == 0);
        RingMem { head, tail, data, cap }
    }
    fn head(&self) -> &AtomicU64 {
        // SAFETY: valid per `new`'s contract.
        unsafe { &*self.head }
    }
    fn tail(&self) -> &AtomicU64 {
        // SAFETY: valid per `new`'s contract.
        unsafe { &*self.tail }
    }
    /// The header word at an 8-aligned offset below `cap`.
    fn word_at(&self, off: usize) -> &AtomicU64 {
        debug_assert!(off & 7 == 0 && off + REC_HDR <= self.cap);
        // SAFETY: in bounds and aligned (offsets are multiples of 8 below cap).
        unsafe { &*(self.data.add(off) as *const AtomicU64) }
    }
    /// Checks a (head, tail) pair: at most `cap` bytes apart, 8-aligned.
    fn check(&self, head: u64, tail: u64) -> Result<u64, RingError> {
        let used = tail.wrapping_sub(head);
        if used > self.cap as u64 || (head | tail) & 7 != 0 {
            return Err(RingError::BadCounters { head, tail, cap: self.cap });
        }
        Ok(used)
    }
}

/// From this offset on, a producer that finds the ring empty pads to the
/// end and starts again at offset 0 (see `Producer::recycle`). One page:
/// at 64 KiB a short run (the 2,000 round trips of `bench-one-host`) still
/// spent its first 1,300 messages faulting pages in (one-byte one-way
/// 0.141 against 0.128 us at 4 KiB); the consumer's counter is read once
/// per 4 KiB written, about one line fetch per 85 short messages.
pub(crate) const RECYCLE_AT: usize = 4 << 10;

/// The writing end of a ring.
pub(crate) struct Producer {
    mem: RingMem,
    tail: u64,
    head_seen: u64,
    /// `RECYCLE_AT` (tests set less).
    recycle_at: usize,
    /// `tail` at which `recycle` may next look at the consumer's counter.
    recycle_check: u64,
}

impl Producer {
    pub(crate) fn new(mem: RingMem) -> Producer {
        // Aligned whatever the shared word holds: every offset derived
        // from it must be a whole record slot inside the ring (`word_at`).
        let tail = mem.tail().load(Ordering::Relaxed) & !7;
        Producer { mem, tail, head_seen: mem.head().load(Ordering::Acquire), recycle_at: RECYCLE_AT, recycle_check: 0 }
    }

    /// Bytes a frame of `len` takes if written now: padding to the end of
    /// the data area when it would not fit before it, then the record.
    fn need(&self, len: usize) -> (usize, usize) {
        let off = (self.tail as usize) & (self.mem.cap - 1);
        let rec = REC_HDR + align8(len);
        let pad = if off + rec > self.mem.cap { self.mem.cap - off } else { 0 };
        (pad, rec)
    }

    /// Padding that sends the next record back to offset 0 although it
    /// would fit here: when the ring is empty and we are `recycle_at` or
    /// more into it. Short messages going back and forth (a ping-pong, a
    /// request and its answer) then stay in the ring's first pages, faulted
    /// in once and warm in the cache, instead of streaming through all of
    /// it: every first touch of a 4 KiB page of a fresh 4 MiB ring was a
    /// page fault (about one per 85 one-byte messages), and every record a
    /// line fetched from far away (docs/benchmarks.md "One host"; the
    /// before/after: its section 29 at commit 52d70dc). Looks
    /// at the consumer's counter (a line of the other core) at most once
    /// per `recycle_at` bytes written. `rec`: the record about to go, which
    /// must fit before `off` (with the word after it).
    fn recycle(&mut self, rec: usize) -> Result<usize, RingError> {
        let off = (self.tail as usize) & (self.mem.cap - 1);
        if off < self.recycle_at || off < rec + REC_HDR || self.tail < self.recycle_check {
            return Ok(0);
        }
        self.recycle_check = self.tail + self.recycle_at as u64;
        Ok(if self.refresh()? == self.mem.cap { self.mem.cap - off } else { 0 })
    }

    /// Bytes a frame of `len` needs free to go in now (padding included).
    pub(crate) fn need_bytes(&self, len: usize) -> usize {
        let (pad, rec) = self.need(len);
        pad + rec
    }

    pub(crate) fn capacity(&self) -> usize {
        self.mem.cap
    }

    /// Re-reads the consumer's counter; returns the bytes free.
    fn refresh(&mut self) -> Result<usize, RingError> {
        let head = self.mem.head().load(Ordering::Acquire);
        let used = self.mem.check(head, self.tail)?;
        self.head_seen = head;
        Ok(self.mem.cap - used as usize)
    }

    /// Appends one frame made of `parts` (`len` bytes in all), all or
    /// nothing. Ok(false): not enough room now. The caller keeps `len` at
    /// most a quarter of the ring so a frame always fits once it drains.
    pub(crate) fn try_push(&mut self, channel: u16, parts: &[&[u8]], len: usize) -> Result<bool, RingError> {
        let cap = self.mem.cap;
        let (mut pad, rec) = self.need(len);
        if len > u32::MAX as usize || rec > cap {
            return Err(RingError::BadRecord { off: 0, word: len as u64, why: "frame larger than the ring" });
        }
        if pad == 0 {
            pad = self.recycle(rec)?;
        }
        // One more word: the next record's place, zeroed below.
        let want = pad + rec + REC_HDR;
        let free = cap - self.tail.wrapping_sub(self.head_seen) as usize;
        if free < want && self.refresh()? < want {
            return Ok(false);
        }
        let pad_at = (self.tail as usize) & (cap - 1);
        let off = if pad > 0 { 0 } else { pad_at };
        self.mem.word_at((off + rec) & (cap - 1)).store(0, Ordering::Relaxed);
        let mut at = off + REC_HDR;
        for p in parts {
            // SAFETY: at + p.len() <= off + rec <= cap (need() placed the
            // record wholly inside the data area), and the consumer does not
            // read this range until its header word is published below.
            unsafe { std::ptr::copy_nonoverlapping(p.as_ptr(), self.mem.data.add(at), p.len()) };
            at += p.len();
        }
        self.mem.word_at(off).store(word(len, channel, KIND_FRAME), Ordering::Release);
        if pad > 0 {
            // Published after the record at 0, so a consumer that follows the
            // padding finds it there.
            self.mem.word_at(pad_at).store(word(pad - REC_HDR, 0, KIND_PAD), Ordering::Release);
        }
        self.tail = self.tail.wrapping_add((pad + rec) as u64);
        self.mem.tail().store(self.tail, Ordering::Release);
        Ok(true)
    }

    /// Whether the consumer has taken everything written.
    pub(crate) fn is_drained(&mut self) -> Result<bool, RingError> {
        Ok(self.refresh()? == self.mem.cap)
    }
}

/// The reading end of a ring.
pub(crate) struct Consumer {
    mem: RingMem,
    head: u64,
    max_frame: usize,
    channels: u16,
    /// The producer has published a record (see `started`).
    started: bool,
}

impl Consumer {
    /// A consumer that accepts frames of at most `max_frame` bytes on
    /// channels below `channels`; anything else is a corrupt ring.
    pub(crate) fn new(mem: RingMem, max_frame: usize, channels: u16) -> Consumer {
        // Aligned, as the producer's `tail`: the peer can write this word.
        let head = mem.head().load(Ordering::Relaxed) & !7;
        Consumer { mem, head, max_frame, channels, started: false }
    }

    /// Whether the producer ever published a record. Until it has, the
    /// consumer reads the producer's `tail` (beside the ring, on the header
    /// page the reader touched anyway) instead of the word at `head`: in
    /// shared memory that is not reserved up front, the first read of a
    /// page allocates it, and a rank polls every ring into it, so polling
    /// the data of rings nobody writes would cost a page per pair of ranks.
    /// `tail` is stored after the record's header word, so seeing it
    /// nonzero means a record is there. Once true, one predictable branch.
    #[inline(always)]
    fn started(&mut self) -> bool {
        if !self.started {
            self.started = self.mem.tail().load(Ordering::Acquire) != 0;
        }
        self.started
    }

    pub(crate) fn capacity(&self) -> usize {
        self.mem.cap
    }

    /// Whether a record is waiting (reads the producer's counter).
    pub(crate) fn has_data(&mut self) -> Result<bool, RingError> {
        if !self.started() {
            return Ok(false);
        }
        let off = (self.head as usize) & (self.mem.cap - 1);
        Ok(self.mem.word_at(off).load(Ordering::Acquire) != 0)
    }

    /// Bytes the producer could write now (reads its counter).
    pub(crate) fn free_bytes(&self) -> Result<usize, RingError> {
        let tail = self.mem.tail().load(Ordering::Acquire);
        Ok(self.mem.cap - self.mem.check(self.head, tail)? as usize)
    }

    /// Takes one frame if there is one: calls `f(channel, bytes)` with the
    /// bytes in place, then releases their space. Ok(false): ring empty.
    pub(crate) fn pop(&mut self, f: impl FnOnce(u16, &[u8])) -> Result<bool, RingError> {
        self.pop_if(|channel, bytes| {
            f(channel, bytes);
            true
        })
    }

    /// Offers the next frame to `f` in place and releases its space only if
    /// `f` returns true. Ok(false): ring empty or the frame was left.
    pub(crate) fn pop_if(&mut self, f: impl FnOnce(u16, &[u8]) -> bool) -> Result<bool, RingError> {
        let cap = self.mem.cap;
        if !self.started() {
            return Ok(false);
        }
        loop {
            let off = (self.head as usize) & (cap - 1);
            // Read the word once: the producer could change it under us.
            let w = self.mem.word_at(off).load(Ordering::Acquire);
            if w == 0 {
                return Ok(false);
            }
            let (len, channel, kind) = ((w & 0xffff_ffff) as usize, (w >> 32) as u16, w >> 48);
            let bad = |why| Err(RingError::BadRecord { off, word: w, why });
            match kind {
                KIND_PAD => {
                    // A producer pads only from inside the ring (a frame
                    // always fits at offset 0), so a pad at 0 is forged:
                    // followed, it would send this loop round for ever.
                    if off == 0 {
                        return bad("padding at the start of the ring");
                    }
                    if off + REC_HDR + len != cap {
                        return bad("padding does not end at the end of the ring");
                    }
                    self.advance(cap - off);
                }
                KIND_FRAME => {
                    let rec = REC_HDR + align8(len);
                    if len > self.max_frame {
                        return bad("frame longer than the largest frame");
                    }
                    if off + rec > cap {
                        return bad("frame runs past the end of the ring");
                    }
                    if channel >= self.channels {
                        return bad("channel out of range");
                    }
                    // SAFETY: off + REC_HDR + len <= cap was checked above;
                    // the producer does not reuse the range before `head`
                    // passes it, which happens after `f` returns.
                    let bytes = unsafe { std::slice::from_raw_parts(self.mem.data.add(off + REC_HDR), len) };
                    if !f(channel, bytes) {
                        return Ok(false);
                    }
                    self.advance(rec);
                    return Ok(true);
                }
                _ => return bad("unknown record kind"),
            }
        }
    }

    fn advance(&mut self, n: usize) {
        self.head = self.head.wrapping_add(n as u64);
        self.mem.head().store(self.head, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A ring on the heap: counters and data in one `u64` buffer (aligned).
    struct HeapRing {
        buf: Vec<AtomicU64>,
        cap: usize,
    }

    impl HeapRing {
        fn new(cap: usize) -> HeapRing {
            HeapRing { buf: (0..2 + cap / 8).map(|_| AtomicU64::new(0)).collect(), cap }
        }
        fn mem(&self) -> RingMem {
            let data = self.buf[2..].as_ptr() as *mut u8;
            // SAFETY: the buffer outlives every producer/consumer in these tests.
            unsafe { RingMem::new(&self.buf[0], &self.buf[1], data, self.cap) }
        }
        /// Overwrites the word at data offset `off` (a hostile producer).
        fn poke_word(&self, off: usize, w: u64) {
            self.buf[2 + off / 8].store(w, Ordering::Relaxed);
        }
        fn set_counters(&self, head: u64, tail: u64) {
            self.buf[0].store(head, Ordering::Relaxed);
            self.buf[1].store(tail, Ordering::Relaxed);
        }
    }

    fn pop_vec(c: &mut Consumer) -> Option<(u16, Vec<u8>)> {
        let mut out = None;
        c.pop(|ch, b| out = Some((ch, b.to_vec()))).unwrap();
        out
    }

    #[test]
    fn frames_of_many_sizes_arrive_whole_and_in_order_across_wraparound() {
        let ring = HeapRing::new(4096);
        let (mut p, mut c) = (Producer::new(ring.mem()), Consumer::new(ring.mem(), 1024, 8));
        let mut sent = std::collections::VecDeque::new();
        // Sizes that do not divide the ring, so records land on every offset.
        for seq in 0..2000u32 {
            let len = (seq as usize * 37) % 1025;
            let whole: Vec<u8> = (0..len).map(|i| (i as u32 ^ seq) as u8).collect();
            let ch = (seq % 8) as u16;
            let cut = len / 3;
            while !p.try_push(ch, &[&whole[..cut], &whole[cut..]], len).unwrap() {
                let got = pop_vec(&mut c).expect("a full ring has data");
                assert_eq!(got, sent.pop_front().unwrap());
            }
            sent.push_back((ch, whole));
        }
        while let Some(got) = pop_vec(&mut c) {
            assert_eq!(got, sent.pop_front().unwrap());
        }
        assert!(sent.is_empty());
        assert!(p.is_drained().unwrap());
    }

    #[test]
    fn full_ring_refuses_until_drained_and_pads_at_the_end() {
        let ring = HeapRing::new(256);
        let (mut p, mut c) = (Producer::new(ring.mem()), Consumer::new(ring.mem(), 64, 1));
        let f = [7u8; 56]; // 64-byte records; each push also needs the next word free
        for _ in 0..3 {
            assert!(p.try_push(0, &[&f], 56).unwrap());
        }
        assert!(!p.try_push(0, &[&f], 56).unwrap(), "64 bytes free, 72 needed");
        assert!(!p.is_drained().unwrap());
        assert_eq!(pop_vec(&mut c).unwrap().1, f.to_vec());
        assert!(p.try_push(0, &[&[1u8; 56]], 56).unwrap()); // 192..256, next word at 0
        for _ in 0..2 {
            assert_eq!(pop_vec(&mut c).unwrap().1.len(), 56);
        }
        assert_eq!(pop_vec(&mut c).unwrap().1, vec![1u8; 56]);
        assert!(pop_vec(&mut c).is_none());
        assert!(p.try_push(0, &[&[2u8; 48]], 48).unwrap()); // 0..56
        assert_eq!(pop_vec(&mut c).unwrap().1, vec![2u8; 48]);
        assert!(p.try_push(0, &[&[3u8; 64]], 64).unwrap()); // 56..128
        assert!(p.try_push(0, &[&[4u8; 64]], 64).unwrap()); // 128..200
        assert!(!p.try_push(0, &[&[5u8; 64]], 64).unwrap(), "padding 56 + record 72 + 8 > 112 free");
        assert_eq!(pop_vec(&mut c).unwrap().1, vec![3u8; 64]);
        assert!(p.try_push(0, &[&[5u8; 64]], 64).unwrap()); // padding 200..256, then 0..72
        for b in [4u8, 5] {
            assert_eq!(pop_vec(&mut c).unwrap().1, vec![b; 64]);
        }
        assert!(pop_vec(&mut c).is_none());
        assert!(p.is_drained().unwrap());
    }

    /// A record shorter than the one it overwrites leaves old payload bytes
    /// where the next header goes: they are never read as one.
    #[test]
    fn old_bytes_of_an_earlier_lap_are_never_a_header() {
        let ring = HeapRing::new(256);
        let (mut p, mut c) = (Producer::new(ring.mem()), Consumer::new(ring.mem(), 64, 1));
        // Lap 1: 64-byte records whose payload looks like frame headers.
        let fake = word(8, 0, KIND_FRAME).to_le_bytes().repeat(7);
        for _ in 0..3 {
            assert!(p.try_push(0, &[&fake], 56).unwrap());
            assert_eq!(pop_vec(&mut c).unwrap().1, fake);
        }
        assert!(p.try_push(0, &[&fake], 56).unwrap());
        assert_eq!(pop_vec(&mut c).unwrap().1, fake);
        // Lap 2: a 16-byte record at 0; the word at 16 held lap 1's payload.
        assert!(p.try_push(0, &[b"12345678"], 8).unwrap());
        assert_eq!(pop_vec(&mut c).unwrap().1, b"12345678".to_vec());
        assert!(pop_vec(&mut c).is_none(), "read old payload as a frame");
    }

    /// A ping-pong stays at the start of the ring once it is `recycle_at`
    /// in; a producer ahead of its consumer does not go back (it would
    /// overwrite what was not read).
    #[test]
    fn an_empty_ring_starts_again_at_offset_zero() {
        let ring = HeapRing::new(4096);
        let (mut p, mut c) = (Producer::new(ring.mem()), Consumer::new(ring.mem(), 1024, 1));
        p.recycle_at = 256;
        let mut offsets = std::collections::BTreeSet::new();
        for i in 0..1000u32 {
            offsets.insert(p.tail as usize & 4095);
            assert!(p.try_push(0, &[&i.to_le_bytes()[..], b"-payload"], 12).unwrap());
            assert_eq!(pop_vec(&mut c).unwrap().1, [&i.to_le_bytes()[..], b"-payload"].concat());
        }
        assert!(offsets.iter().all(|&o| o < 256 + 24), "records went to {:?}", offsets.last());
        // Ahead of the consumer: records keep their order and nothing is overwritten.
        let mut sent = std::collections::VecDeque::new();
        for i in 0..200u32 {
            let f = i.to_le_bytes().repeat(5);
            if !p.try_push(0, &[&f], f.len()).unwrap() {
                break;
            }
            sent.push_back(f);
        }
        assert!(sent.len() > 100);
        while let Some(f) = sent.pop_front() {
            assert_eq!(pop_vec(&mut c).unwrap().1, f);
        }
        assert!(pop_vec(&mut c).is_none());
    }

    /// Until the producer's counter moves, the consumer does not look at
    /// the data area (a page of shared memory is allocated by its first
    /// read), even where a word is there.
    #[test]
    fn a_ring_never_written_is_never_read() {
        let ring = HeapRing::new(256);
        ring.poke_word(0, word(5, 0, KIND_FRAME));
        let mut c = Consumer::new(ring.mem(), 64, 1);
        assert!(!c.has_data().unwrap());
        assert!(!c.pop(|_, _| panic!("read a ring whose tail is 0")).unwrap());
        let mut p = Producer::new(ring.mem());
        assert!(p.try_push(0, &[b"first"], 5).unwrap());
        assert!(c.has_data().unwrap());
        assert_eq!(pop_vec(&mut c).unwrap(), (0, b"first".to_vec()));
    }

    #[test]
    fn corrupt_lengths_and_counters_are_errors_not_reads() {
        let ring = HeapRing::new(256);
        let mut p = Producer::new(ring.mem());
        assert!(p.try_push(0, &[b"hello"], 5).unwrap());
        let cases = [
            (word(1 << 30, 0, KIND_FRAME), "longer"),
            (word(5, 9, KIND_FRAME), "channel"),
            (word(5, 0, 7), "kind"),
            (word(8, 0, KIND_PAD), "padding"),
        ];
        for (w, what) in cases {
            ring.poke_word(0, w);
            let mut c = Consumer::new(ring.mem(), 128, 1);
            let e = c.pop(|_, _| panic!("delivered a corrupt frame")).unwrap_err();
            assert!(e.to_string().contains(what), "{what}: {e}");
        }
        // A frame header near the end claiming bytes past it.
        ring.set_counters(248, 256);
        ring.poke_word(248, word(100, 0, KIND_FRAME));
        let mut c = Consumer::new(ring.mem(), 128, 1);
        assert!(c.pop(|_, _| {}).unwrap_err().to_string().contains("past the end"));
        // Counters further apart than the ring, seen by either end.
        ring.set_counters(0, 1 << 40);
        let c = Consumer::new(ring.mem(), 128, 1);
        assert!(matches!(c.free_bytes(), Err(RingError::BadCounters { .. })));
        let mut p = Producer::new(ring.mem());
        assert!(matches!(p.is_drained(), Err(RingError::BadCounters { .. })));
    }
}
