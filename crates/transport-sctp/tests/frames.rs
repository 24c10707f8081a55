//! Frames arrive intact, from the right peer, on the right channel, in
//! order per channel: 2 and 3 ranks, small and large frames, self-send.

mod common;
use common::*;
use std::sync::{Arc, Barrier};
use std::time::Duration;
use wanmpi_transport::Transport;

#[test]
fn two_ranks_exchange_frames_in_order_on_every_stream() {
    let per_stream = 50u32;
    let done = Arc::new(Barrier::new(2));
    let results = run_ranks(2, test_opts(10), move |mut t| {
        let me = t.rank();
        let other = 1 - me;
        // loopback: usrsctp's srtt is 0 ms, below FAR_RTT
        assert!(!t.wants_progress_thread(), "a loopback peer must not ask for the progress thread");
        for seq in 0..per_stream {
            for ch in 0..10u16 {
                send(&mut t, other, ch, &frame(me, ch, seq, 100 + (seq as usize * 37) % 900));
            }
        }
        let got = recv_n(&mut t, (per_stream * 10) as usize, Duration::from_secs(30));
        // The path as the runtime sees it: measured, near, nothing lost.
        let path = t.path(other).expect("an association's path");
        assert!(path.sent >= u64::from(per_stream) * 10 && path.loss == 0.0, "{path:?}");
        assert_ne!(path.is_far(), Some(true), "a loopback peer is not far: {path:?}");
        // Nobody shuts down before the other has received everything.
        drain(&mut t);
        done.wait();
        t.shutdown(Duration::from_secs(5)).unwrap();
        (me, got)
    });
    for (me, got) in results {
        let other = 1 - me;
        let mut next = [0u32; 10];
        for g in &got {
            assert_eq!(g.peer, other);
            assert_eq!(seq_of(&g.bytes), next[g.channel as usize], "order on stream {}", g.channel);
            assert_eq!(g.bytes, frame(other, g.channel, next[g.channel as usize], g.bytes.len()), "content");
            next[g.channel as usize] += 1;
        }
        assert_eq!(next, [per_stream; 10]);
    }
}

#[test]
fn three_ranks_all_to_all_with_self_send() {
    let n = 3u32;
    let count = 40u32;
    let done = Arc::new(Barrier::new(n as usize));
    let results = run_ranks(n, test_opts(4), move |mut t| {
        let me = t.rank();
        for seq in 0..count {
            for to in 0..n {
                let ch = (seq % 4) as u16;
                send(&mut t, to, ch, &frame(me, ch, seq, 64));
            }
        }
        let got = recv_n(&mut t, (count * n) as usize, Duration::from_secs(30));
        let counters = t.counters();
        // Nobody shuts down before everybody has received everything.
        drain(&mut t);
        done.wait();
        t.shutdown(Duration::from_secs(5)).unwrap();
        (me, got, counters)
    });
    for (me, got, counters) in results {
        for from in 0..n {
            for ch in 0..4u16 {
                let seqs: Vec<u32> = got.iter().filter(|g| g.peer == from && g.channel == ch).map(|g| seq_of(&g.bytes)).collect();
                let want: Vec<u32> = (0..count).filter(|s| s % 4 == ch as u32).collect();
                assert_eq!(seqs, want, "rank {me} from {from} channel {ch}");
            }
        }
        assert!(got.iter().all(|g| g.bytes == frame(g.peer, g.channel, seq_of(&g.bytes), 64)));
        for p in counters.peers.iter().filter(|p| p.peer != me) {
            assert_eq!(p.frames_sent(), count as u64);
            assert_eq!(p.frames_received(), count as u64);
            assert!(p.datagrams_out > 0 && p.datagrams_in > 0);
        }
    }
}
