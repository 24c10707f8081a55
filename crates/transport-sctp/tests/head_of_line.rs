//! Head-of-line blocking at transport level, with seeded loss of the
//! sender's datagrams: with 10 streams a later frame on one stream is
//! delivered while an earlier, lost frame on another stream is still being
//! retransmitted; with 1 stream never. Order within a stream always holds.

mod common;
use common::*;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};
use wanmpi_transport::{Incoming, Transport};
use wanmpi_transport_sctp::SctpOptions;

const FRAMES: u32 = 400;

struct Outcome {
    /// Global send index of each frame in delivery order.
    order: Vec<u32>,
    channels: Vec<u16>,
    retransmitted: u64,
    dropped: u64,
}

fn run(streams: u16) -> Outcome {
    let gate = Arc::new(Barrier::new(2));
    let opts_for = move |rank: u32| SctpOptions { drop_rate: if rank == 0 { 0.05 } else { 0.0 }, drop_seed: 42, ..test_opts(streams) };
    let results = run_ranks_with(2, opts_for, move |mut t| {
        let mut out = Outcome { order: vec![], channels: vec![], retransmitted: 0, dropped: 0 };
        if t.rank() == 0 {
            // Frame i goes on stream i mod streams; a few at a time, so
            // packets carry frames of several streams and losses hit some.
            for i in 0..FRAMES {
                let ch = (i % streams as u32) as u16;
                send(&mut t, 1, ch, &frame(0, ch, i, 300));
                if i % 8 == 7 {
                    t.poll_recv(&mut |_| {}).unwrap();
                }
            }
            drain(&mut t);
            let c = t.counters();
            let p = c.peer(1).unwrap();
            out.retransmitted = p.retransmitted_chunks;
            out.dropped = p.dropped_injected;
        } else {
            let deadline = Instant::now() + Duration::from_secs(60);
            while (out.order.len() as u32) < FRAMES {
                assert!(Instant::now() < deadline, "only {} frames in 60 s", out.order.len());
                t.poll_recv(&mut |ev| {
                    if let Incoming::Frame { channel, bytes, .. } = ev {
                        assert_eq!(bytes, frame(0, channel, seq_of(bytes), 300).as_slice());
                        out.order.push(seq_of(bytes));
                        out.channels.push(channel);
                    }
                })
                .unwrap();
                t.wait(Duration::from_millis(5)).unwrap();
            }
        }
        gate.wait();
        t.shutdown(Duration::from_secs(5)).unwrap();
        out
    });
    let mut it = results.into_iter();
    let sender = it.next().unwrap();
    let mut receiver = it.next().unwrap();
    receiver.retransmitted = sender.retransmitted;
    receiver.dropped = sender.dropped;
    receiver
}

/// Pairs (earlier-sent, later-sent) where the later one was delivered first.
fn overtakes(order: &[u32]) -> usize {
    let mut max_seen = None::<u32>;
    order
        .iter()
        .filter(|&&s| {
            let overtaken = max_seen.is_some_and(|m| s < m);
            max_seen = Some(max_seen.map_or(s, |m| m.max(s)));
            overtaken
        })
        .count()
}

fn assert_order_within_streams(o: &Outcome, streams: u16) {
    let mut last = vec![None::<u32>; streams as usize];
    for (&seq, &ch) in o.order.iter().zip(&o.channels) {
        assert_eq!(seq % streams as u32, ch as u32, "frame on the wrong stream");
        assert!(last[ch as usize].is_none_or(|l| l < seq), "stream {ch}: {seq} after {:?}", last[ch as usize]);
        last[ch as usize] = Some(seq);
    }
    let mut all = o.order.clone();
    all.sort_unstable();
    assert_eq!(all, (0..FRAMES).collect::<Vec<_>>(), "every frame exactly once");
}

#[test]
fn ten_streams_deliver_past_a_lost_frame_one_stream_does_not() {
    let ten = run(10);
    let one = run(1);
    eprintln!(
        "10 streams: {} overtakes, {} drops, {} retransmitted chunks; 1 stream: {} overtakes, {} drops, {} retransmitted",
        overtakes(&ten.order),
        ten.dropped,
        ten.retransmitted,
        overtakes(&one.order),
        one.dropped,
        one.retransmitted
    );
    for (o, s) in [(&ten, 10), (&one, 1)] {
        assert!(o.dropped > 0 && o.retransmitted > 0, "{s} streams: the loss must really happen");
        assert_order_within_streams(o, s);
    }
    assert!(overtakes(&ten.order) > 0, "with 10 streams some frame must pass an earlier lost one");
    assert_eq!(overtakes(&one.order), 0, "with 1 stream nothing may pass a lost frame");
}
