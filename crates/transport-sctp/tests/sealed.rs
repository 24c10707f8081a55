//! Sealed associations carry every frame intact: three ranks with sealing
//! forced (as between hosts) send each other frames of every size up to the
//! frame limit on four streams at once, so messages of different streams
//! overtake each other and each stream's counter is checked on its own;
//! every frame arrives once, intact, in order per stream. On loopback
//! nothing is sealed by default, and one side asking seals both ways.

mod common;
use common::*;
use std::sync::{Arc, Barrier};
use std::time::Duration;
use wanmpi_transport::Transport;
use wanmpi_transport_sctp::{SctpOptions, Seal};

const STREAMS: u16 = 4;
const SIZES: &[usize] = &[1, 12, 1000, 16 << 10, 64 << 10, (64 << 10) + 1, 200_000, 256 << 10];
const ROUNDS: u32 = 5;

#[test]
fn three_ranks_sealed_deliver_every_size_on_every_stream_intact() {
    let per_peer = ROUNDS as usize * SIZES.len() * STREAMS as usize;
    // Nobody closes before everyone received everything.
    let gate = Arc::new(Barrier::new(3));
    let results = run_ranks(3, SctpOptions { seal: Seal::Always, ..test_opts(STREAMS) }, move |mut t| {
        let me = t.rank();
        let others: Vec<u32> = (0..3).filter(|&p| p != me).collect();
        let sealed: Vec<_> = others.iter().map(|&p| t.sealed(p)).collect();
        let mut seq = 0u32;
        for _ in 0..ROUNDS {
            for &len in SIZES {
                for ch in 0..STREAMS {
                    for &p in &others {
                        send(&mut t, p, ch, &frame(me, ch, seq, len.max(12)));
                    }
                    seq += 1;
                }
            }
        }
        let got = recv_n(&mut t, 2 * per_peer, Duration::from_secs(60));
        drain(&mut t);
        gate.wait();
        t.shutdown(Duration::from_secs(5)).expect("clean shutdown");
        (me, sealed, got)
    });
    for (me, sealed, got) in results {
        assert_eq!(sealed, vec![Some(true); 2], "rank {me}");
        let mut last = std::collections::HashMap::new();
        for g in &got {
            let seq = seq_of(&g.bytes);
            let len = SIZES[(seq as usize / STREAMS as usize) % SIZES.len()].max(12);
            assert_eq!(g.bytes, frame(g.peer, g.channel, seq, len), "rank {me}: frame {seq} from {} altered", g.peer);
            let prev = last.insert((g.peer, g.channel), seq);
            assert!(prev.is_none_or(|p| p < seq), "rank {me}: stream {} from {} out of order", g.channel, g.peer);
        }
        assert_eq!(got.len(), 2 * per_peer);
    }
}

#[test]
fn loopback_is_plain_by_default_and_one_asking_side_seals_both() {
    let plain = run_ranks(2, test_opts(2), |t| t.sealed(1 - t.rank()));
    assert_eq!(plain, vec![Some(false), Some(false)]);
    for asking in 0..2u32 {
        let opts = move |r: u32| SctpOptions { seal: if r == asking { Seal::Always } else { Seal::Never }, ..test_opts(2) };
        let gate = Arc::new(Barrier::new(2));
        let out = run_ranks_with(2, opts, move |mut t| {
            let me = t.rank();
            send(&mut t, 1 - me, 1, &frame(me, 1, 0, 5000));
            let got = recv_n(&mut t, 1, Duration::from_secs(10));
            drain(&mut t);
            gate.wait();
            t.shutdown(Duration::from_secs(5)).expect("clean shutdown");
            (t.sealed(1 - me), got[0].bytes == frame(1 - me, 1, 0, 5000))
        });
        assert_eq!(out, vec![(Some(true), true), (Some(true), true)], "rank {asking} asking");
    }
}
