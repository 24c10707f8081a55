//! The frame stream with one peer, which outlives any one connection: frame
//! numbers, cumulative acknowledgements and the bounded retransmit buffer
//! from which a replacement connection resumes. No I/O here.
//!
//! Frames are numbered implicitly from 0 in each direction, for the life of
//! the job (not of a connection): the n-th data frame sent to a peer is
//! frame n. The receiver counts the frames it has delivered (`received`)
//! and tells the sender now and then (an acknowledgement frame, [`ACK`]);
//! the sender keeps a copy of every frame not yet acknowledged. When a
//! connection is replaced, each side names in the (MAC-protected) handshake
//! how many frames it has delivered, and each sender resends from exactly
//! that frame: nothing lost, nothing delivered twice, order kept.
//!
//! Acknowledgements are cheap: one rides in front of every data frame sent
//! while the count moved (in the same system call, 12 bytes; 28 sealed),
//! and one is sent alone once a peer's delivered frames since the last one
//! cost [`ACK_EVERY`], so a one-way stream frees its sender's buffer.
//!
//! The buffer is bounded by [`RETX_LIMIT`] (bytes plus [`FRAME_COST`] per
//! frame). A sender whose buffer is full is refused (`WouldBlock`) until an
//! acknowledgement frees room; it never fails for that. A frame is always
//! taken into an empty buffer, whatever its size.

use std::collections::VecDeque;
use thiserror::Error;

/// A peer broke the stream's rules: it is lost (never resumed).
#[derive(Debug, Error, PartialEq, Eq)]
pub enum StreamError {
    #[error("protocol violation: acknowledgement of {acked} frames, only {sent} sent")]
    AckBeyondSent { acked: u64, sent: u64 },
    #[error("protocol violation: resume from frame {from}, but frames {first}..{end} are the ones not yet acknowledged")]
    ResumeOutside { from: u64, first: u64, end: u64 },
    #[error("protocol violation: control frame of {0} bytes")]
    BadControl(usize),
}

/// Set in a frame's length prefix: a control frame of the transport (an
/// acknowledgement), not a frame for the engine. Frames are at most 2^31 - 1
/// bytes (`TcpOptions::max_frame`), so the bit is free.
pub(crate) const CONTROL: u32 = 1 << 31;
/// Bytes of an acknowledgement's body: the count of frames delivered, u64 LE.
pub(crate) const ACK: usize = 8;

/// Most a peer's retransmit buffer holds (frames' bytes plus [`FRAME_COST`]
/// each): 8 MiB. Above a WAN path's bandwidth-delay product for the links
/// wanmpi targets (1 Gbit/s x 40 ms = 5 MB), so acknowledgements arriving
/// every [`ACK_EVERY`] keep a stream flowing; small against the memory of a
/// rank.
pub const RETX_LIMIT: usize = 8 << 20;
/// What each frame costs in the buffer's accounting besides its bytes, so
/// that a flood of tiny frames is bounded too.
pub const FRAME_COST: usize = 64;
/// A receiver acknowledges on its own once the frames it delivered since
/// its last acknowledgement cost this much (1 MiB, an eighth of the limit).
pub const ACK_EVERY: usize = 1 << 20;
/// Spare frame buffers kept for reuse (no allocation per frame).
const SPARES: usize = 64;

#[derive(Default)]
pub(crate) struct Stream {
    /// Frames the peer has acknowledged: the number of `retx[0]`.
    acked: u64,
    /// Copies of frames `acked..sent`, oldest first.
    retx: VecDeque<Vec<u8>>,
    retx_cost: usize,
    /// Number of the next frame to hand to the current connection.
    next_wire: u64,
    spare: Vec<Vec<u8>>,
    /// Frames of the peer delivered to the engine.
    received: u64,
    /// The count last told to the peer.
    told: u64,
    untold_cost: usize,
}

impl Stream {
    /// Frames accepted for sending so far.
    pub(crate) fn sent(&self) -> u64 {
        self.acked + self.retx.len() as u64
    }

    pub(crate) fn received(&self) -> u64 {
        self.received
    }

    /// Whether a frame of `len` bytes may be taken now.
    pub(crate) fn has_room(&self, len: usize) -> bool {
        self.retx.is_empty() || self.retx_cost + len + FRAME_COST <= RETX_LIMIT
    }

    /// Keeps a copy of a frame made of `parts` as the next frame.
    pub(crate) fn keep(&mut self, parts: &[&[u8]]) {
        let len: usize = parts.iter().map(|p| p.len()).sum();
        let mut buf = self.spare.pop().unwrap_or_default();
        buf.clear();
        buf.reserve(len);
        for p in parts {
            buf.extend_from_slice(p);
        }
        self.retx_cost += len + FRAME_COST;
        self.retx.push_back(buf);
    }

    /// Whether kept frames wait to go onto the current connection.
    pub(crate) fn backlog(&self) -> bool {
        self.next_wire < self.sent()
    }

    /// The next kept frame not yet on the current connection.
    pub(crate) fn next_unsent(&self) -> Option<&[u8]> {
        let i = usize::try_from(self.next_wire.checked_sub(self.acked)?).ok()?;
        self.retx.get(i).map(Vec::as_slice)
    }

    /// The frame `next_unsent` gave is now the connection's.
    pub(crate) fn put_on_wire(&mut self) {
        self.next_wire += 1;
    }

    fn release_to(&mut self, n: u64) {
        while self.acked < n {
            let Some(f) = self.retx.pop_front() else { break };
            self.retx_cost -= f.len() + FRAME_COST;
            self.acked += 1;
            if self.spare.len() < SPARES && f.capacity() <= 2 * crate::DEFAULT_MAX_FRAME {
                self.spare.push(f);
            }
        }
    }

    /// The peer has delivered `n` frames. More than were put on the wire
    /// is a protocol violation; an old count changes nothing.
    pub(crate) fn on_ack(&mut self, n: u64) -> Result<(), StreamError> {
        if n > self.next_wire {
            return Err(StreamError::AckBeyondSent { acked: n, sent: self.next_wire });
        }
        self.release_to(n);
        Ok(())
    }

    /// A new connection: the peer has delivered `peer_got` frames, so
    /// sending resumes at that frame. It must be one this side still holds.
    pub(crate) fn resume_at(&mut self, peer_got: u64) -> Result<(), StreamError> {
        if peer_got < self.acked || peer_got > self.sent() {
            return Err(StreamError::ResumeOutside { from: peer_got, first: self.acked, end: self.sent() });
        }
        self.release_to(peer_got);
        self.next_wire = peer_got;
        // Everything the peer has is acknowledged by the resume point; ours
        // was told in the handshake likewise.
        self.told = self.received;
        self.untold_cost = 0;
        Ok(())
    }

    /// A data frame of `len` bytes was delivered to the engine.
    pub(crate) fn delivered(&mut self, len: usize) {
        self.received += 1;
        self.untold_cost += len + FRAME_COST;
    }

    /// Whether an acknowledgement should go out alone now.
    pub(crate) fn ack_due(&self) -> bool {
        self.untold_cost >= ACK_EVERY
    }

    /// The count to tell the peer, if it moved since last told. It counts
    /// as told only once it is on the wire (`told`): an acknowledgement
    /// taken for a send that would block was lost, and a peer whose
    /// retransmit buffer it would have freed waited for it forever.
    pub(crate) fn ack_to_tell(&self) -> Option<u64> {
        (self.received > self.told).then_some(self.received)
    }

    /// Acknowledgement `n` went out.
    pub(crate) fn told(&mut self, n: u64) {
        if n > self.told {
            self.told = n;
            self.untold_cost = 0;
        }
    }

    /// Kept frames not yet on the current connection.
    pub(crate) fn queued(&self) -> u64 {
        self.sent() - self.next_wire
    }

    /// Bytes held for retransmission (for reports and tests).
    pub(crate) fn held(&self) -> usize {
        self.retx_cost
    }
}

/// An acknowledgement frame in clear: prefix (with [`CONTROL`]) and count.
pub(crate) fn ack_frame(n: u64) -> [u8; 4 + ACK] {
    let mut f = [0u8; 4 + ACK];
    f[..4].copy_from_slice(&(ACK as u32 | CONTROL).to_le_bytes());
    f[4..].copy_from_slice(&n.to_le_bytes());
    f
}

/// Reads an acknowledgement's body.
pub(crate) fn parse_ack(body: &[u8]) -> Result<u64, StreamError> {
    let b: [u8; ACK] = body.try_into().map_err(|_| StreamError::BadControl(body.len()))?;
    Ok(u64::from_le_bytes(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_kept_until_acknowledged_and_resent_from_the_resume_point() {
        let mut s = Stream::default();
        for i in 0..5u8 {
            assert!(s.has_room(3));
            s.keep(&[&[i], &[i, i]]);
        }
        assert_eq!(s.sent(), 5);
        for _ in 0..3 {
            assert!(s.next_unsent().is_some());
            s.put_on_wire();
        }
        assert!(s.backlog());
        assert!(s.on_ack(4).is_err(), "more acknowledged than sent");
        s.on_ack(2).unwrap();
        assert_eq!(s.held(), 3 * (3 + FRAME_COST));
        // A new connection: the peer has 2; frames 2.. go again.
        s.resume_at(2).unwrap();
        assert_eq!(s.next_unsent(), Some(&[2u8, 2, 2][..]));
        assert!(s.resume_at(1).is_err(), "a frame released cannot be resent");
        assert!(s.resume_at(6).is_err(), "a frame never sent cannot be resumed from");
        s.resume_at(5).unwrap();
        assert!(!s.backlog() && s.held() == 0);
    }

    #[test]
    fn the_buffer_is_bounded_but_takes_one_frame_of_any_size() {
        let mut s = Stream::default();
        let big = vec![0u8; RETX_LIMIT * 2];
        assert!(s.has_room(big.len()));
        s.keep(&[&big]);
        assert!(!s.has_room(0));
        s.put_on_wire();
        s.on_ack(1).unwrap();
        let f = vec![0u8; 1000];
        let mut n = 0;
        while s.has_room(f.len()) {
            s.keep(&[&f]);
            n += 1;
        }
        assert_eq!(n, RETX_LIMIT / (1000 + FRAME_COST));
    }

    #[test]
    fn acknowledgements_are_due_after_ack_every_and_taken_once() {
        let mut s = Stream::default();
        assert_eq!(s.ack_to_tell(), None);
        s.delivered(10);
        assert!(!s.ack_due());
        assert_eq!(s.ack_to_tell(), Some(1));
        assert_eq!(s.ack_to_tell(), Some(1), "not told until it went out");
        s.told(1);
        assert_eq!(s.ack_to_tell(), None);
        for _ in 0..ACK_EVERY / (1000 + FRAME_COST) + 1 {
            s.delivered(1000);
        }
        assert!(s.ack_due());
        let f = ack_frame(77);
        assert_eq!(u32::from_le_bytes(f[..4].try_into().unwrap()), ACK as u32 | CONTROL);
        assert_eq!(parse_ack(&f[4..]), Ok(77));
        assert!(parse_ack(&f[..5]).is_err());
    }
}
