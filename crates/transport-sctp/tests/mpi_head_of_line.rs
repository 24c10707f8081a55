//! Head-of-line blocking at the MPI level (issue 4, "What it must show" 2):
//! two engines over two real SctpTransports (ranks as threads). Rank 0
//! sends A (tag TA), B (tag TB), A2 (tag TA), eager, in that order; its
//! transport drops exactly the first datagram carrying DATA after setup,
//! which is A's. With 10 streams TA and TB map to different streams, so B
//! completes at the receiver while A is still waiting for its
//! retransmission; with 1 stream B waits behind A. A2 never overtakes A
//! (same tag, same stream) and each buffer holds its own message.
//!
//! The same with three `MPI_ANY_TAG` receives from rank 0 posted ahead (the
//! plain-MPI farm's worker): MPI gives them A, B, A2 in that order, and with
//! 10 streams the second completes with B while A is retransmitted (the
//! first receive is bound to the missing A, `matching.rs`).

mod common;
use common::*;
use std::time::{Duration, Instant};
use wanmpi_engine::engine::SendMode;
use wanmpi_engine::request::{RecvBuf, SendData};
use wanmpi_engine::{Engine, EngineConfig, RequestId};
use wanmpi_transport::{Incoming, Transport};
use wanmpi_transport_sctp::SctpOptions;

const CTX: u32 = 0;
const LEN: usize = 1000;
const TA: i32 = 1;
const LIMIT: Duration = Duration::from_secs(20);

/// The engine's `channel_for` (crates/engine/src/engine/mod.rs), restated so
/// the test can pick tags on different streams; the sender's per-stream
/// counters below check that the engine really used these channels.
fn channel_of(tag: i32, channels: u16) -> u16 {
    if channels <= 1 {
        return 0;
    }
    let h = (u64::from(CTX) << 32 | u64::from(tag as u32)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    ((h >> 32) % u64::from(channels)) as u16
}

/// The first tag above `after` whose channel is none of `avoid`.
fn tag_off(after: i32, avoid: &[u16], channels: u16) -> i32 {
    (after + 1..after + 1000).find(|&t| channels == 1 || !avoid.contains(&channel_of(t, channels))).unwrap_or(after + 1)
}

fn payload(label: u8) -> Vec<u8> {
    (0..LEN).map(|i| label ^ (i as u8)).collect()
}

struct Outcome {
    /// Labels in the order their receives completed.
    order: Vec<&'static str>,
    /// Rank 0's counters towards rank 1: frames per stream, DATA chunks
    /// retransmitted, datagrams dropped on purpose.
    frames_per_stream: Vec<u64>,
    retransmitted: u64,
    dropped: u64,
}

/// One pump: everything that arrived goes to the engine (`on_event` runs
/// after each event), then the engine's queued frames go out.
fn pump(e: &mut Engine, t: &mut wanmpi_transport_sctp::SctpTransport, mut on_event: impl FnMut(&Engine)) {
    t.poll_recv(&mut |ev: Incoming<'_>| {
        e.handle_incoming(ev);
        on_event(e);
    })
    .expect("poll_recv");
    e.transmit(&mut |p, c, parts| t.try_send(p, c, parts)).expect("transmit");
}

fn run(streams: u16, wildcard: bool) -> Outcome {
    let tb = tag_off(TA, &[channel_of(TA, streams)], streams);
    let tdone = tag_off(tb, &[channel_of(TA, streams), channel_of(tb, streams)], streams);
    if streams > 1 {
        assert_ne!(channel_of(TA, streams), channel_of(tb, streams));
    }
    let opts_for = move |rank: u32| SctpOptions { drop_first_data: if rank == 0 { 1 } else { 0 }, ..test_opts(streams) };
    let mut results = run_ranks_with(2, opts_for, move |mut t| {
        let mut e = Engine::new(t.rank(), 2, t.caps().clone(), EngineConfig::default());
        let deadline = Instant::now() + LIMIT;
        if t.rank() == 0 {
            // One transmit per message: each leaves in its own datagram
            // (Nagle is off), so the dropped one is exactly A.
            let mut sends = vec![];
            for (tag, label) in [(TA, b'A'), (tb, b'B'), (TA, b'a')] {
                // SAFETY: owned data, nothing borrowed.
                sends.push(unsafe { e.isend(1, CTX, tag, SendData::Owned(payload(label)), SendMode::Standard) }.expect("isend"));
                e.transmit(&mut |p, c, parts| t.try_send(p, c, parts)).expect("transmit");
            }
            // Posted after the sends: a receive may announce a credit frame,
            // which must not be the first DATA datagram.
            let mut done_buf = [0u8; 1];
            let done_rb = RecvBuf { ptr: done_buf.as_mut_ptr(), cap: done_buf.len() };
            // SAFETY: done_buf outlives the request (waited for below).
            let done = unsafe { e.irecv(Some(1), CTX, Some(tdone), done_rb) }.expect("irecv");
            while !e.is_complete(done).unwrap_or(false) || sends.iter().any(|&s| !e.is_complete(s).unwrap_or(false)) {
                assert!(Instant::now() < deadline, "rank 0: receiver did not report within {LIMIT:?}");
                pump(&mut e, &mut t, |_| {});
                t.wait(Duration::from_millis(5)).expect("wait");
            }
            drain(&mut t);
            let c = t.counters();
            let p = c.peer(1).expect("counters for rank 1");
            Outcome {
                order: vec![],
                frames_per_stream: p.streams.iter().map(|s| s.frames_sent).collect(),
                retransmitted: p.retransmitted_chunks,
                dropped: p.dropped_injected,
            }
        } else {
            let mut bufs = [vec![0u8; LEN], vec![0u8; LEN], vec![0u8; LEN]];
            let mut reqs: Vec<(RequestId, &'static str)> = vec![];
            for (buf, (tag, label)) in bufs.iter_mut().zip([(TA, "A"), (tb, "B"), (TA, "A2")]) {
                let rb = RecvBuf { ptr: buf.as_mut_ptr(), cap: buf.len() };
                // SAFETY: `bufs` lives until the end of this closure and is
                // not touched until every receive completed.
                let want = if wildcard { None } else { Some(tag) };
                reqs.push((unsafe { e.irecv(Some(0), CTX, want, rb) }.expect("irecv"), label));
            }
            let mut order: Vec<&'static str> = vec![];
            while order.len() < reqs.len() {
                assert!(Instant::now() < deadline, "rank 1: only {order:?} within {LIMIT:?}");
                pump(&mut e, &mut t, |e| {
                    for &(id, label) in &reqs {
                        if !order.contains(&label) && e.is_complete(id).unwrap_or(false) {
                            order.push(label);
                        }
                    }
                });
                t.wait(Duration::from_millis(5)).expect("wait");
            }
            // Each buffer holds its own message: A2 did not take A's receive
            // (nor, with wildcard receives, B the first).
            assert_eq!(bufs[0], payload(b'A'), "A's buffer");
            assert_eq!(bufs[1], payload(b'B'), "B's buffer");
            assert_eq!(bufs[2], payload(b'a'), "A2's buffer");
            // SAFETY: owned data.
            let done = unsafe { e.isend(0, CTX, tdone, SendData::Owned(vec![1]), SendMode::Standard) }.expect("isend");
            while !e.is_complete(done).unwrap_or(false) || e.has_pending_output() {
                assert!(Instant::now() < deadline, "rank 1: done message stuck");
                pump(&mut e, &mut t, |_| {});
                t.wait(Duration::from_millis(5)).expect("wait");
            }
            drain(&mut t);
            Outcome { order, frames_per_stream: vec![], retransmitted: 0, dropped: 0 }
        }
    });
    let receiver = results.pop().expect("rank 1");
    let sender = results.pop().expect("rank 0");
    // The engine put A and A2 on TA's stream and B on TB's.
    let (ca, cb) = (channel_of(TA, streams) as usize, channel_of(tb, streams) as usize);
    if streams > 1 {
        assert_eq!(sender.frames_per_stream[ca], 2, "frames on TA's stream {ca}: {:?}", sender.frames_per_stream);
        assert_eq!(sender.frames_per_stream[cb], 1, "frames on TB's stream {cb}: {:?}", sender.frames_per_stream);
    } else {
        assert!(sender.frames_per_stream[0] >= 3, "{:?}", sender.frames_per_stream);
    }
    assert_eq!(sender.dropped, 1, "exactly A's datagram is dropped");
    assert!(sender.retransmitted >= 1, "A was retransmitted");
    Outcome { order: receiver.order, ..sender }
}

#[test]
fn ten_streams_b_overtakes_lost_a_one_stream_it_waits() {
    let ten = run(10, false);
    assert_eq!(ten.order, ["B", "A", "A2"], "10 streams: B completes while A is retransmitted");
    let one = run(1, false);
    assert_eq!(one.order, ["A", "B", "A2"], "1 stream: B waits behind the lost A");
    eprintln!(
        "10 streams: completion order {:?}, {} chunk(s) retransmitted; 1 stream: {:?}, {} retransmitted",
        ten.order, ten.retransmitted, one.order, one.retransmitted
    );
}

#[test]
fn ten_streams_wildcard_receives_take_b_while_lost_a_is_repaired() {
    let ten = run(10, true);
    assert_eq!(ten.order, ["B", "A", "A2"], "10 streams: the second ANY_TAG receive completes with B while A is retransmitted");
    let one = run(1, true);
    assert_eq!(one.order, ["A", "B", "A2"], "1 stream: everything waits behind the lost A");
}
