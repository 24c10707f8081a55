//! The express receive: a blocking receive naming its source takes the
//! next frame from that peer straight out of the transport (shared memory:
//! in place, in the ring) when that frame is the whole next message, with
//! no request, no posted-queue entry and no trip through `handle_frame`.
//! A one-byte message on one host crosses about half the code this way
//! (docs/benchmarks.md "One host"; the before/after: its section 23 at
//! commit 52d70dc, "The express receive").
//!
//! The short cut keeps MPI's matching rules because it is only taken when
//! nothing else could claim the message (`Matcher::express_slot`) and only
//! for the next sequence number of (peer, context); any other frame is left
//! in place for the ordinary path.

use wanmpi_transport::PeerId;
use wanmpi_wire::Envelope;

use super::stats::Tally;
use super::{channel_of, Engine};
use crate::error::{ErrorClass, MpiError};
use crate::matching::ExpressSlot;
use crate::request::{RecvBuf, Status};

/// An express receive from one peer on one context, ready to take that
/// peer's next frame (`Engine::express_rx`). It holds what taking the
/// message changes (the pair's order state, the counters), looked up
/// once before the receive polls: on the path from a frame's arrival to
/// the receive's return there is no table lookup left.
pub struct ExpressRx<'a> {
    slot: ExpressSlot<'a>,
    tally: Tally<'a>,
    source: PeerId,
    ctx: u32,
    tag: Option<i32>,
    eager_limit: usize,
    channels: u16,
}

impl Engine {
    /// An express receive from `src` on (`ctx`, `tag`), if one may be
    /// tried now: the peer is known and not lost and nothing else could
    /// claim its next message (`Matcher::express_slot`).
    #[inline]
    pub fn express_rx(&mut self, src: PeerId, ctx: u32, tag: Option<i32>) -> Option<ExpressRx<'_>> {
        if src >= self.size || (!self.lost.is_empty() && self.lost.contains_key(&src)) {
            return None;
        }
        let channels = self.caps.channels;
        let slot = self.matcher.express_slot(src, ctx)?;
        let tally = self.stats.tally(src, tag.map(|t| channel_of(channels, ctx, t)));
        Some(ExpressRx { slot, tally, source: src, ctx, tag, eager_limit: self.cfg.eager_limit, channels })
    }
}

impl ExpressRx<'_> {
    /// Takes `frame` (the next frame from the peer) as the message of the
    /// receive into `buf` when it is a whole plain eager message the
    /// receive matches, next in order. `None` leaves the frame (and all
    /// state) for the ordinary path, which also judges malformed frames.
    /// A small `Copy` answer: the receive waits on it, and moving a
    /// `Status` (an `Option<MpiError>` inside) through the stack cost
    /// store-forwarding stalls; `Taken::status` builds one.
    ///
    /// # Safety
    /// `buf` must be valid for `buf.cap` bytes.
    #[inline]
    pub unsafe fn take(&mut self, buf: RecvBuf, frame: &[u8]) -> Option<Taken> {
        let (Envelope { ctx, tag, seq, total_len, .. }, payload) = wanmpi_wire::plain_eager(frame)?;
        if ctx != self.ctx || self.tag.is_some_and(|want| want != tag) || total_len > self.eager_limit as u64 || !self.slot.mark(seq) {
            return None;
        }
        let total = payload.len();
        let fits = total.min(buf.cap);
        if fits > 0 {
            // SAFETY: the caller's contract; `fits` is within both.
            unsafe { std::ptr::copy_nonoverlapping(payload.as_ptr(), buf.ptr, fits) };
        }
        let channels = self.channels;
        self.tally.expected(total, total_len, || channel_of(channels, ctx, tag));
        Some(Taken { source: self.source, tag, bytes: fits, total })
    }
}

/// A message `ExpressRx::take` took.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Taken {
    pub source: PeerId,
    pub tag: i32,
    /// Bytes delivered into the receive buffer.
    pub bytes: usize,
    /// Bytes the message had (more than `bytes`: truncated).
    pub total: usize,
}

impl Taken {
    /// A truncated message is an error of its own (MPI_ERR_TRUNCATE).
    /// Inline: the receive's return pays one comparison, not a call.
    #[inline]
    pub fn error(&self) -> Option<MpiError> {
        if self.total > self.bytes {
            Some(self.truncated())
        } else {
            None
        }
    }

    #[cold]
    fn truncated(&self) -> MpiError {
        MpiError::new(
            ErrorClass::Truncate,
            format!("message of {} bytes from rank {} does not fit a receive buffer of {} bytes", self.total, self.source, self.bytes),
        )
    }

    /// The receive's status.
    pub fn status(&self) -> Status {
        Status { source: self.source, tag: self.tag, bytes: self.bytes, error: self.error(), cancelled: false }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::EngineConfig;
    use crate::engine::SendMode;
    use crate::request::SendData;
    use wanmpi_transport::{Caps, SendStatus};

    const CTX: u32 = 7;

    fn engines(channels: u16, eager_limit: usize) -> (Engine, Engine) {
        let caps = Caps { name: "test", channels, max_frame: 64 * 1024, eager_limit_hint: 0, reliable: true };
        let cfg = EngineConfig { eager_limit, ..EngineConfig::default() };
        (Engine::new(0, 2, caps.clone(), cfg.clone()), Engine::new(1, 2, caps, cfg))
    }

    /// The frames engine `e` sends for these messages, in order.
    fn frames(e: &mut Engine, msgs: &[(i32, &[u8], SendMode)]) -> Vec<Vec<u8>> {
        for &(tag, data, mode) in msgs {
            // SAFETY: owned data.
            unsafe { e.isend(1, CTX, tag, SendData::Owned(data.to_vec()), mode).unwrap() };
        }
        let mut out = vec![];
        e.transmit(&mut |_, _, parts| {
            out.push(parts.concat());
            Ok(SendStatus::Sent)
        })
        .unwrap();
        out
    }

    fn take(e: &mut Engine, tag: Option<i32>, buf: &mut [u8], frame: &[u8]) -> Option<Status> {
        let b = RecvBuf { ptr: buf.as_mut_ptr(), cap: buf.len() };
        let mut rx = e.express_rx(0, CTX, tag)?;
        // SAFETY: `buf` outlives the call.
        unsafe { rx.take(b, frame) }.map(|t| t.status())
    }

    #[test]
    fn takes_the_next_message_in_order_and_leaves_others() {
        let (mut a, mut b) = engines(1, 1024);
        let f = frames(&mut a, &[(1, b"one", SendMode::Standard), (2, b"two", SendMode::Standard), (3, b"three", SendMode::Standard)]);
        let mut buf = [0u8; 8];
        assert!(b.express_rx(0, CTX, None).is_some());
        let s = take(&mut b, Some(1), &mut buf, &f[0]).expect("the first message");
        assert_eq!((s.source, s.tag, s.bytes, &buf[..3]), (0, 1, 3, &b"one"[..]));
        // A receive for tag 1 does not take tag 2's message...
        assert!(take(&mut b, Some(1), &mut buf, &f[1]).is_none());
        // ...which the ordinary path then handles, unexpected: no more short cut.
        b.handle_frame(0, &f[1]);
        assert!(b.express_rx(0, CTX, None).is_none());
        let mut two = [0u8; 3];
        // SAFETY: `two` outlives the request.
        let id = unsafe { b.irecv(Some(0), CTX, Some(2), RecvBuf { ptr: two.as_mut_ptr(), cap: 3 }).unwrap() };
        assert_eq!(b.test(id).unwrap().map(|s| s.bytes), Some(3));
        assert_eq!(&two, b"two");
        // The order state moved on with the express take: the third message
        // is neither a duplicate nor out of order.
        assert!(b.express_rx(0, CTX, None).is_some());
        let s = take(&mut b, None, &mut buf, &f[2]).expect("a wildcard tag takes the next message");
        assert_eq!((s.tag, s.bytes, &buf[..5]), (3, 5, &b"three"[..]));
        assert_eq!(b.stats().bad_frames, 0);
        assert_eq!(b.stats().msgs_received, 3);
    }

    #[test]
    fn a_long_message_is_truncated_with_an_error() {
        let (mut a, mut b) = engines(1, 1024);
        let f = frames(&mut a, &[(0, b"0123456789", SendMode::Standard)]);
        let mut buf = [0u8; 4];
        let s = take(&mut b, Some(0), &mut buf, &f[0]).expect("taken");
        assert_eq!(s.bytes, 4);
        assert_eq!(&buf, b"0123");
        assert_eq!(s.error.map(|e| e.class), Some(ErrorClass::Truncate));
    }

    #[test]
    fn a_posted_receive_or_a_lost_peer_turns_the_short_cut_off() {
        let (_, mut b) = engines(1, 1024);
        let mut buf = [0u8; 4];
        // SAFETY: `buf` outlives the request (cancelled below).
        let id = unsafe { b.irecv(None, 99, None, RecvBuf { ptr: buf.as_mut_ptr(), cap: 4 }).unwrap() };
        assert!(b.express_rx(0, CTX, None).is_none(), "an earlier receive, even on another context, goes first");
        b.cancel(id).unwrap();
        assert!(b.express_rx(0, CTX, None).is_some());
        b.peer_lost(0, "gone".into());
        assert!(b.express_rx(0, CTX, None).is_none());
    }

    #[test]
    fn synchronous_long_and_out_of_order_messages_are_left_alone() {
        let (mut a, mut b) = engines(1, 16);
        let f = frames(&mut a, &[(0, b"sync", SendMode::Synchronous), (0, &[1u8; 100], SendMode::Standard)]);
        let mut buf = [0u8; 128];
        assert!(take(&mut b, Some(0), &mut buf, &f[0]).is_none(), "a synchronous send needs its acknowledgement");
        assert!(take(&mut b, Some(0), &mut buf, &f[1]).is_none(), "a rendezvous announcement is no message");
        // Two channels: the second message's frame may come first; it is not next.
        let (mut a, mut b) = engines(8, 1024);
        let f = frames(&mut a, &[(1, b"x", SendMode::Standard), (2, b"y", SendMode::Standard)]);
        assert!(take(&mut b, None, &mut buf, &f[1]).is_none());
        assert!(take(&mut b, None, &mut buf, &f[0]).is_some());
        assert!(take(&mut b, None, &mut buf, &f[1]).is_some());
    }

    #[test]
    fn malformed_frames_are_left_to_the_ordinary_path() {
        let (mut a, mut b) = engines(1, 1024);
        let f = frames(&mut a, &[(0, b"ok", SendMode::Standard)]);
        let mut buf = [0u8; 8];
        for bad in [&f[0][..3], &[0xff; 40][..], &[][..]] {
            assert!(take(&mut b, None, &mut buf, bad).is_none());
        }
        // A frame claiming more bytes than it carries is not a whole message.
        let mut short = f[0].clone();
        short.pop();
        assert!(take(&mut b, None, &mut buf, &short).is_none());
        assert!(take(&mut b, None, &mut buf, &f[0]).is_some(), "state untouched by what was refused");
    }
}
