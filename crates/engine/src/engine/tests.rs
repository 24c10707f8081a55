//! Two or more engines joined by loopback transports, pumped by hand: no
//! sockets, no threads, deterministic.

use super::*;
use crate::error::ErrorClass;
use crate::protocol::Protocol;
use crate::request::{RecvBuf, SendData, Status};
use wanmpi_transport::{loopback_world, Incoming, Loopback, Transport};

struct World {
    engines: Vec<Engine>,
    nets: Vec<Loopback>,
}

impl World {
    fn new(n: u32, channels: u16, cfg: EngineConfig, max_frame: usize) -> World {
        let mut nets = loopback_world(n, channels);
        for t in &mut nets {
            t.set_max_frame(max_frame);
        }
        let engines = nets.iter().map(|t| Engine::new(t.rank(), n, t.caps().clone(), cfg.clone())).collect();
        World { engines, nets }
    }

    fn pair() -> World {
        World::new(2, 1, EngineConfig::default(), 16 * 1024)
    }

    /// Moves frames until nothing moves.
    fn pump(&mut self) {
        for _ in 0..10_000 {
            let mut moved = 0;
            for (e, t) in self.engines.iter_mut().zip(self.nets.iter_mut()) {
                e.transmit(&mut |p, c, parts| {
                    moved += 1;
                    t.try_send(p, c, parts)
                })
                .unwrap();
                moved += t.poll_recv(&mut |ev| e.handle_incoming(ev)).unwrap();
            }
            if moved == 0 && self.engines.iter().all(|e| !e.has_pending_output()) {
                return;
            }
        }
        panic!("pump did not settle");
    }

    fn send(&mut self, from: usize, to: u32, tag: i32, data: Vec<u8>, mode: SendMode) -> RequestId {
        unsafe { self.engines[from].isend(to, 0, tag, SendData::Owned(data), mode).unwrap() }
    }

    fn recv(&mut self, at: usize, src: Option<u32>, tag: Option<i32>, buf: &mut [u8]) -> RequestId {
        let b = RecvBuf { ptr: buf.as_mut_ptr(), cap: buf.len() };
        unsafe { self.engines[at].irecv(src, 0, tag, b).unwrap() }
    }

    fn done(&mut self, at: usize, id: RequestId) -> Status {
        self.engines[at].test(id).unwrap().expect("request should be complete")
    }
}

fn pattern(n: usize, seed: u8) -> Vec<u8> {
    (0..n).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect()
}

#[test]
fn eager_rendezvous_and_boundary_sizes_deliver_exact_bytes() {
    let limit = EngineConfig::default().eager_limit;
    for len in [0, 1, limit - 1, limit, limit + 1, 3 * limit + 17] {
        let mut w = World::pair();
        let data = pattern(len, len as u8);
        let mut buf = vec![0u8; len];
        let s = w.send(0, 1, 5, data.clone(), SendMode::Standard);
        w.pump();
        let r = w.recv(1, Some(0), Some(5), &mut buf);
        w.pump();
        let st = w.done(1, r);
        assert_eq!((st.source, st.tag, st.bytes, st.error.clone()), (0, 5, len, None), "len {len}");
        assert!(w.engines[0].test(s).unwrap().is_some(), "send of {len} completes");
        assert_eq!(buf, data, "len {len}");
        let want = if len <= limit { 1 } else { 0 };
        assert_eq!(w.engines[0].stats().eager_sends, want, "protocol for {len}");
    }
}

#[test]
fn a_posted_receive_lets_a_long_message_skip_the_rendezvous() {
    let mut w = World::pair();
    let len = 200 * 1024;
    let mut buf = vec![0u8; len];
    let r = w.recv(1, Some(0), Some(9), &mut buf);
    w.pump(); // the credit reaches rank 0
    let data = pattern(len, 3);
    let s = w.send(0, 1, 9, data.clone(), SendMode::Standard);
    w.pump();
    assert_eq!(w.engines[0].stats().credited_sends, 1);
    assert_eq!(w.engines[0].stats().rendezvous_sends, 0);
    assert_eq!(w.done(1, r).bytes, len);
    assert!(w.engines[0].test(s).unwrap().is_some());
    assert_eq!(buf, data);
}

#[test]
fn credited_message_taken_by_another_receive_is_buffered_not_lost() {
    let mut w = World::pair();
    let len = 100 * 1024;
    let mut b1 = vec![0u8; len];
    let r1 = w.recv(1, Some(0), None, &mut b1);
    w.pump();
    // Rank 1 cancels its receive: the credit at rank 0 is now stale.
    w.engines[1].cancel(r1).unwrap();
    assert!(w.done(1, r1).cancelled);
    let data = pattern(len, 7);
    let s = w.send(0, 1, 4, data.clone(), SendMode::Standard);
    w.pump();
    assert!(w.engines[0].test(s).unwrap().is_some());
    let mut b2 = vec![0u8; len];
    let r2 = w.recv(1, Some(0), Some(4), &mut b2);
    w.pump();
    assert_eq!(w.done(1, r2).bytes, len);
    assert_eq!(b2, data);
}

#[test]
fn synchronous_send_completes_only_after_the_match() {
    for len in [10usize, 100 * 1024] {
        let mut w = World::pair();
        let s = w.send(0, 1, 1, pattern(len, 1), SendMode::Synchronous);
        w.pump();
        assert!(w.engines[0].test(s).unwrap().is_none(), "ssend of {len} must wait for the match");
        let mut buf = vec![0u8; len];
        let r = w.recv(1, Some(0), Some(1), &mut buf);
        w.pump();
        assert!(w.engines[0].test(s).unwrap().is_some(), "ssend of {len} completes after the match");
        assert_eq!(w.done(1, r).bytes, len);
    }
}

#[test]
fn truncation_reports_the_error_and_the_connection_stays_usable() {
    for len in [100usize, 300 * 1024] {
        let mut w = World::pair();
        w.send(0, 1, 1, pattern(len, 2), SendMode::Standard);
        w.send(0, 1, 1, pattern(8, 9), SendMode::Standard);
        w.pump();
        let mut small = vec![0u8; 50];
        let r = w.recv(1, Some(0), Some(1), &mut small);
        w.pump();
        let st = w.done(1, r);
        assert_eq!(st.error.map(|e| e.class), Some(ErrorClass::Truncate), "len {len}");
        assert_eq!(st.bytes, 50);
        assert_eq!(small, pattern(len, 2)[..50].to_vec());
        let mut next = vec![0u8; 8];
        let r = w.recv(1, Some(0), Some(1), &mut next);
        w.pump();
        assert_eq!(w.done(1, r).error, None);
        assert_eq!(next, pattern(8, 9));
    }
}

#[test]
fn fragments_of_a_long_message_interleave_with_short_ones() {
    let mut w = World::pair();
    let mut big = vec![0u8; 1 << 20];
    let mut small = vec![0u8; 4];
    let rb = w.recv(1, Some(0), Some(1), &mut big);
    let rs = w.recv(1, Some(0), Some(2), &mut small);
    w.pump();
    w.send(0, 1, 1, pattern(1 << 20, 5), SendMode::Standard);
    w.send(0, 1, 2, vec![1, 2, 3, 4], SendMode::Standard);
    // Move frames one transmit round at a time: the short message must be
    // complete long before the 64 frames of the long one.
    let mut rounds = 0;
    while !w.engines[1].is_complete(rs).unwrap() {
        let (a, b) = w.engines.split_at_mut(1);
        let (ta, tb) = w.nets.split_at_mut(1);
        let mut sent = 0;
        a[0].transmit(&mut |p, c, parts| {
            if sent == 2 {
                return Ok(wanmpi_transport::SendStatus::WouldBlock);
            }
            sent += 1;
            ta[0].try_send(p, c, parts)
        })
        .unwrap();
        tb[0].poll_recv(&mut |ev| b[0].handle_incoming(ev)).unwrap();
        rounds += 1;
        assert!(rounds < 10, "short message stuck behind the long one");
    }
    assert!(!w.engines[1].is_complete(rb).unwrap());
    w.pump();
    assert_eq!(w.done(1, rb).bytes, 1 << 20);
    assert_eq!(big, pattern(1 << 20, 5));
}

/// Delivers rank 0's frames to rank 1 in a chosen order, as a multi-channel
/// transport may.
fn frames_from_0(w: &mut World) -> Vec<Vec<u8>> {
    let mut frames = vec![];
    w.engines[0]
        .transmit(&mut |_, _, parts| {
            frames.push(parts.concat());
            Ok(wanmpi_transport::SendStatus::Sent)
        })
        .unwrap();
    frames
}

#[test]
fn any_tag_receive_never_takes_a_later_message_delivered_first() {
    let mut w = World::pair();
    w.send(0, 1, 10, vec![1], SendMode::Standard);
    w.send(0, 1, 20, vec![2], SendMode::Standard);
    let frames = frames_from_0(&mut w);
    let mut b = [0u8; 1];
    let r = w.recv(1, Some(0), None, &mut b);
    w.engines[1].handle_frame(0, &frames[1]); // the later message first
    assert!(!w.engines[1].is_complete(r).unwrap(), "must wait for the earlier message");
    w.engines[1].handle_frame(0, &frames[0]);
    let st = w.done(1, r);
    assert_eq!((st.tag, b[0]), (10, 1));
    let r2 = w.recv(1, Some(0), None, &mut b);
    assert_eq!((w.done(1, r2).tag, b[0]), (20, 2));
}

#[test]
fn relaxed_context_lets_the_later_message_through() {
    let mut w = World::pair();
    w.engines[1].set_allow_overtaking(0, true);
    w.send(0, 1, 10, vec![1], SendMode::Standard);
    w.send(0, 1, 20, vec![2], SendMode::Standard);
    let frames = frames_from_0(&mut w);
    let mut b = [0u8; 1];
    let r = w.recv(1, Some(0), None, &mut b);
    w.engines[1].handle_frame(0, &frames[1]);
    assert_eq!((w.done(1, r).tag, b[0]), (20, 2));
}

#[test]
fn probe_and_matched_receive() {
    let mut w = World::pair();
    w.send(0, 1, 3, pattern(300, 1), SendMode::Standard);
    w.pump();
    let p = w.engines[1].iprobe(Some(0), 0, None).expect("probe sees the message");
    assert_eq!((p.source, p.tag, p.len), (0, 3, 300));
    let m = w.engines[1].improbe(None, 0, Some(3)).expect("mprobe takes it");
    assert!(w.engines[1].iprobe(None, 0, None).is_none(), "taken out of matching");
    let mut buf = vec![0u8; 300];
    let r = unsafe { w.engines[1].imrecv(m, RecvBuf { ptr: buf.as_mut_ptr(), cap: 300 }) };
    w.pump();
    assert_eq!(w.done(1, r).bytes, 300);
    assert_eq!(buf, pattern(300, 1));
}

#[test]
fn simultaneous_long_messages_both_ways_on_the_same_tag() {
    let mut w = World::pair();
    let len = 500 * 1024;
    let (d0, d1) = (pattern(len, 1), pattern(len, 2));
    let (mut b0, mut b1) = (vec![0u8; len], vec![0u8; len]);
    let s0 = w.send(0, 1, 7, d0.clone(), SendMode::Standard);
    let s1 = w.send(1, 0, 7, d1.clone(), SendMode::Standard);
    let r0 = w.recv(0, Some(1), Some(7), &mut b0);
    let r1 = w.recv(1, Some(0), Some(7), &mut b1);
    w.pump();
    for (at, id) in [(0, s0), (1, s1), (0, r0), (1, r1)] {
        assert!(w.engines[at].test(id).unwrap().is_some());
    }
    assert_eq!((b0, b1), (d1, d0));
}

#[test]
fn lost_peer_fails_its_requests_and_hostile_frames_are_dropped() {
    let mut w = World::pair();
    let mut buf = [0u8; 4];
    let r = w.recv(1, Some(0), Some(1), &mut buf);
    let s = w.send(1, 0, 1, vec![0; 200 * 1024], SendMode::Standard);
    w.engines[1].handle_frame(0, b"\xa7\x04garbage that is not a frame");
    w.engines[1].handle_frame(0, &wanmpi_wire::Frame::Data { msg_id: 77, offset: 0, payload: b"x" }.to_vec());
    assert_eq!(w.engines[1].stats().bad_frames, 2);
    assert!(!w.engines[1].is_complete(r).unwrap());
    w.engines[1].handle_incoming(Incoming::PeerLost { peer: 0, reason: "connection reset".into() });
    for id in [r, s] {
        let st = w.done(1, id);
        assert_eq!(st.error.map(|e| e.class), Some(ErrorClass::ProcFailed));
    }
    let e = unsafe { w.engines[1].isend(0, 0, 1, SendData::Owned(vec![1]), SendMode::Standard) };
    assert_eq!(e.unwrap_err().class, ErrorClass::ProcFailed);
}

#[test]
fn protocol_choice_is_visible_in_the_stats() {
    let mut w = World::pair();
    w.send(0, 1, 1, vec![0; 10], SendMode::Standard);
    w.send(0, 1, 1, vec![0; 100 * 1024], SendMode::Standard);
    assert_eq!(w.engines[0].stats().eager_sends, 1);
    assert_eq!(w.engines[0].stats().rendezvous_sends, 1);
    assert_eq!(crate::protocol::select(10, 64, None, None, 0), Protocol::Eager);
}

#[test]
fn a_lost_peers_unfinished_messages_cannot_trap_a_receive() {
    let mut w = World::new(3, 1, EngineConfig::default(), 16 * 1024);
    // From rank 1: a complete eager message and a rendezvous RTS, both unexpected at rank 0.
    w.send(1, 0, 1, vec![9; 8], SendMode::Standard);
    w.send(1, 0, 2, vec![7; 200 * 1024], SendMode::Standard);
    w.pump();
    w.engines[0].handle_incoming(Incoming::PeerLost { peer: 1, reason: "gone".into() });
    // The complete message is still delivered; the rendezvous one is gone,
    // so a wildcard receive waits for another sender instead of forever.
    let mut a = [0u8; 8];
    let r = w.recv(0, None, Some(1), &mut a);
    assert_eq!(w.done(0, r).bytes, 8);
    let mut b = vec![0u8; 200 * 1024];
    let r = w.recv(0, None, Some(2), &mut b);
    w.send(2, 0, 2, vec![5; 10], SendMode::Standard);
    w.pump();
    let st = w.done(0, r);
    assert_eq!((st.source, st.bytes), (2, 10));
}

/// Rank 1 grants rank 0 a WAN window of `bytes` and the grant arrives.
fn windowed_pair(bytes: u64) -> World {
    let mut w = World::pair();
    w.engines[1].grant_window(0, bytes);
    w.pump();
    assert_eq!(w.engines[0].window_available(1), bytes);
    w
}

#[test]
fn a_granted_window_carries_an_unexpected_long_message_without_a_rendezvous() {
    let mut w = windowed_pair(1 << 20);
    let len = 200 * 1024;
    let data = pattern(len, 11);
    let s = w.send(0, 1, 3, data.clone(), SendMode::Standard);
    w.pump();
    // The send completed with no receive posted: the data is at rank 1.
    assert!(w.engines[0].test(s).unwrap().is_some());
    assert_eq!((w.engines[0].stats().windowed_sends, w.engines[0].stats().rendezvous_sends), (1, 0));
    assert_eq!(w.engines[0].window_available(1), (1 << 20) - len as u64);
    let mut buf = vec![0u8; len];
    let r = w.recv(1, Some(0), Some(3), &mut buf);
    w.pump();
    assert_eq!(w.done(1, r).bytes, len);
    assert_eq!(buf, data);
    // Matched: the bytes went back to the sender.
    assert_eq!(w.engines[0].window_available(1), 1 << 20);
    assert_eq!(w.engines[1].stats().windows[&0], crate::WindowUse { granted: 1 << 20, peak_held: len as u64 });
}

#[test]
fn a_flood_of_unexpected_long_messages_never_exceeds_the_window() {
    let window = 1 << 20;
    let mut w = windowed_pair(window);
    let len = 300 * 1024;
    let sends: Vec<_> = (0..10).map(|i| w.send(0, 1, 7, pattern(len, i), SendMode::Standard)).collect();
    w.pump();
    // Three fit the window; the rest fall back to the rendezvous and wait.
    let st = w.engines[0].stats().clone();
    assert_eq!((st.windowed_sends, st.rendezvous_sends), (3, 7));
    assert!(w.engines[1].stats().windows[&0].peak_held <= window);
    for (i, s) in sends.iter().enumerate() {
        assert_eq!(w.engines[0].test(*s).unwrap().is_some(), i < 3, "send {i}");
    }
    // Every message arrives, in order, as the receives are posted one by one.
    for i in 0..10u8 {
        let mut buf = vec![0u8; len];
        let r = w.recv(1, Some(0), Some(7), &mut buf);
        w.pump();
        assert_eq!(w.done(1, r).bytes, len);
        assert_eq!(buf, pattern(len, i), "message {i}");
    }
    assert!(w.engines[1].stats().windows[&0].peak_held <= window);
    assert_eq!(w.engines[0].window_available(1), window);
}

#[test]
fn a_windowed_synchronous_send_waits_for_the_match() {
    let mut w = windowed_pair(1 << 20);
    let len = 100 * 1024;
    let s = w.send(0, 1, 2, pattern(len, 1), SendMode::Synchronous);
    w.pump();
    assert_eq!(w.engines[0].stats().windowed_sends, 1);
    assert!(w.engines[0].test(s).unwrap().is_none(), "ssend done before the match");
    let mut buf = vec![0u8; len];
    let r = w.recv(1, Some(0), Some(2), &mut buf);
    w.pump();
    assert_eq!(w.done(1, r).bytes, len);
    assert!(w.engines[0].test(s).unwrap().is_some());
}

#[test]
fn a_windowed_message_too_long_for_its_receive_is_truncated_and_its_window_returned() {
    let mut w = windowed_pair(1 << 20);
    let s = w.send(0, 1, 2, pattern(100 * 1024, 1), SendMode::Standard);
    w.pump();
    assert!(w.engines[0].test(s).unwrap().is_some());
    let mut buf = vec![0u8; 1000];
    let r = w.recv(1, Some(0), Some(2), &mut buf);
    w.pump();
    let st = w.done(1, r);
    assert_eq!(st.error.map(|e| e.class), Some(ErrorClass::Truncate));
    assert_eq!(buf[..], pattern(100 * 1024, 1)[..1000]);
    assert_eq!(w.engines[0].window_available(1), 1 << 20);
}

#[test]
fn a_message_claiming_a_window_never_granted_is_dropped() {
    let mut w = World::pair();
    let env = wanmpi_wire::Envelope { ctx: 0, tag: 1, seq: 0, msg_id: 77, total_len: 200 * 1024 };
    let forged = wanmpi_wire::Frame::Eager { env, flags: wanmpi_wire::flags::WINDOW | wanmpi_wire::flags::PUSH, payload: &[0; 100] };
    w.engines[1].handle_frame(0, &forged.to_vec());
    assert_eq!(w.engines[1].stats().bad_frames, 1);
    assert!(w.engines[1].iprobe(Some(0), 0, None).is_none(), "nothing was buffered");
}

#[path = "single_copy_tests.rs"]
mod single_copy;

#[test]
fn revoking_a_context_fails_its_waiting_receives_and_sends_only() {
    let mut w = World::pair();
    let mut a = [0u8; 8];
    let mut b = [0u8; 8];
    let waiting = w.recv(1, Some(0), Some(1), &mut a);
    let wildcard = w.recv(1, None, None, &mut b);
    // A synchronous send nobody receives waits for the match.
    let sync = w.send(0, 1, 77, vec![1; 4], SendMode::Synchronous);
    w.pump();
    // The sync send matched the wildcard receive: both complete normally.
    assert!(w.done(1, wildcard).error.is_none());
    w.pump();
    assert!(w.done(0, sync).error.is_none());
    let sync2 = w.send(0, 1, 78, vec![2; 4], SendMode::Synchronous);
    w.pump();
    assert_eq!(w.engines[1].revoke_contexts(&[0, 1], "revoked by rank 1"), 1);
    assert_eq!(w.engines[0].revoke_contexts(&[0, 1], "revoked by rank 1"), 1);
    assert_eq!(w.done(1, waiting).error.map(|e| e.class), Some(ErrorClass::Revoked));
    assert_eq!(w.done(0, sync2).error.map(|e| e.class), Some(ErrorClass::Revoked));
    // Other contexts are untouched.
    assert_eq!(w.engines[1].revoke_contexts(&[2, 3], "x"), 0);
}
