//! The express send: a blocking standard send of a short message goes to
//! the transport as one plain eager frame, straight from the caller's
//! buffer, when nothing could make it go any other way: no frame queued
//! to that peer before it (the order of its messages holds), no receive
//! credit from that peer to spend (the ordinary path consumes one that
//! names this tag), the peer not lost. No request, no protocol choice, no
//! output queue. It either sends the whole message or changes nothing, so
//! the caller then takes the ordinary path (`send_now`), which plans the
//! same message with the same sequence number. The receiving side's
//! counterpart is `express.rs`; together they are most of a one-byte
//! message's cost on one host (docs/benchmarks.md "One host"; the
//! before/after: its section 29 at commit 52d70dc).

use wanmpi_transport::{PeerId, SendStatus};
use wanmpi_wire::{plain_eager_header, Envelope};

use super::send::{FrameSink, EXPRESS_ID};
use super::Engine;
use crate::error::{err, ErrorClass, MpiResult};

impl Engine {
    /// Sends `payload` to world rank `dest` on (`ctx`, `tag`) now, if it
    /// may go the express way. `None`: it may not, or the transport could
    /// not take it now; nothing changed. `Some(Ok(()))`: it left, complete
    /// as far as the sender is concerned (a standard-mode eager message).
    pub fn express_send(&mut self, dest: PeerId, ctx: u32, tag: i32, payload: &[u8], send: &mut FrameSink<'_>) -> Option<MpiResult<()>> {
        let d = dest as usize;
        let len = payload.len();
        let eligible = dest < self.size
            && len <= self.send_eager
            && len <= self.chunk()
            && self.out[d].is_empty()
            && self.credits[d].is_empty()
            && (self.lost.is_empty() || !self.lost.contains_key(&dest))
            // A message the receiver may read out of us goes by single copy
            // (`single_copy.rs`); a short one pays one comparison here.
            && (len < self.cfg.single_copy_from || self.single_copy_from(dest).is_none());
        if !eligible {
            return None;
        }
        let channel = self.channel_for(ctx, tag);
        self.express_ids = self.express_ids.wrapping_add(1);
        let msg_id = EXPRESS_ID | self.express_ids;
        let seq = self.next_seq.entry((dest, ctx)).or_insert(0);
        let header = plain_eager_header(&Envelope { ctx, tag, seq: *seq, msg_id, total_len: len as u64 });
        match send(dest, channel, &[&header, payload]) {
            Ok(SendStatus::Sent) => {}
            Ok(SendStatus::WouldBlock) => return None,
            Err(e) => return Some(err(ErrorClass::Other, format!("transport: {e}"))),
        }
        *seq += 1;
        self.stats.eager_sends += 1;
        self.stats.msgs_sent += 1;
        self.stats.bytes_sent += len as u64;
        self.stats.count_sent(dest, len);
        Some(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::EngineConfig;
    use crate::engine::SendMode;
    use crate::request::{RecvBuf, SendData};
    use wanmpi_transport::Caps;
    use wanmpi_wire::Frame;

    const CTX: u32 = 3;

    fn engine(rank: PeerId) -> Engine {
        let caps = Caps { name: "test", channels: 4, max_frame: 64 * 1024, eager_limit_hint: 0, reliable: true };
        Engine::new(rank, 2, caps, EngineConfig { eager_limit: 1024, ..EngineConfig::default() })
    }

    /// Frames handed to the transport, which takes them or not (`take`).
    fn express(e: &mut Engine, tag: i32, data: &[u8], take: bool, out: &mut Vec<Vec<u8>>) -> Option<MpiResult<()>> {
        e.express_send(1, CTX, tag, data, &mut |_, _, parts| {
            if !take {
                return Ok(SendStatus::WouldBlock);
            }
            out.push(parts.concat());
            Ok(SendStatus::Sent)
        })
    }

    fn drain(e: &mut Engine, out: &mut Vec<Vec<u8>>) {
        e.transmit(&mut |_, _, parts| {
            out.push(parts.concat());
            Ok(SendStatus::Sent)
        })
        .unwrap();
    }

    #[test]
    fn sends_the_same_frame_as_the_ordinary_path_and_numbers_in_order() {
        let (mut a, mut b) = (engine(0), engine(1));
        let mut out = vec![];
        assert!(matches!(express(&mut a, 5, b"hi", true, &mut out), Some(Ok(()))));
        // SAFETY: owned data.
        unsafe { a.isend(1, CTX, 5, SendData::Owned(b"yo".to_vec()), SendMode::Standard).unwrap() };
        drain(&mut a, &mut out);
        let seqs: Vec<u64> = out
            .iter()
            .map(|f| match Frame::parse(f) {
                Ok(Frame::Eager { env, flags: 0, .. }) => env.seq,
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(seqs, [0, 1]);
        assert_eq!((a.stats().msgs_sent, a.stats().eager_sends, a.stats().bytes_sent), (2, 2, 4));
        // The receiver matches both, in order.
        for f in &out {
            b.handle_frame(0, f);
        }
        let mut got = [[0u8; 2]; 2];
        for buf in &mut got {
            // SAFETY: `buf` outlives the request, tested at once.
            let id = unsafe { b.irecv(Some(0), CTX, Some(5), RecvBuf { ptr: buf.as_mut_ptr(), cap: 2 }).unwrap() };
            assert_eq!(b.test(id).unwrap().map(|s| s.bytes), Some(2));
        }
        assert_eq!(got, [*b"hi", *b"yo"]);
    }

    #[test]
    fn anything_unusual_changes_nothing_and_is_left_to_the_ordinary_path() {
        let mut a = engine(0);
        let mut out = vec![];
        // Too long for one eager frame.
        assert!(express(&mut a, 0, &[0; 2000], true, &mut out).is_none());
        // The transport cannot take it now: the sequence number stays free.
        assert!(express(&mut a, 0, b"x", false, &mut out).is_none());
        // Something queued to the peer goes first.
        // SAFETY: owned data.
        unsafe { a.isend(1, CTX, 0, SendData::Owned(vec![1; 2000]), SendMode::Standard).unwrap() };
        assert!(express(&mut a, 0, b"x", true, &mut out).is_none());
        drain(&mut a, &mut out);
        assert_eq!(out.len(), 1);
        assert!(matches!(Frame::parse(&out[0]), Ok(Frame::Rts { env, .. }) if env.seq == 0), "the refused tries took no sequence number");
        // A receive credit from the peer is the ordinary path's to spend.
        a.handle_credit(1, CTX, 0, 1 << 20);
        assert!(express(&mut a, 0, b"x", true, &mut out).is_none());
        let mut b = engine(0);
        b.peer_lost(1, "gone".into());
        assert!(express(&mut b, 0, b"x", true, &mut out).is_none());
        assert_eq!(b.stats().msgs_sent, 0);
    }
}
