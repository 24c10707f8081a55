//! Sealed connections carry every frame intact and in order, whatever its
//! size against the 64 KiB records, in both directions between 3 ranks; on
//! loopback nothing is sealed unless forced, and one side forcing is enough.

mod common;
use common::*;
use std::time::Duration;
use wanmpi_bootstrap::local_kv_world;
use wanmpi_transport_tcp::record::RECORD;
use wanmpi_transport_tcp::{Seal, TcpOptions, Transport, DEFAULT_MAX_FRAME};

fn opts(seal: Seal) -> TcpOptions {
    TcpOptions { seal, ..test_opts() }
}

/// Sizes around every record boundary, up to the largest frame.
const SIZES: &[usize] = &[12, 13, 100, RECORD - 4, RECORD - 1, RECORD, RECORD + 1, 2 * RECORD + 3, 300_000, DEFAULT_MAX_FRAME];

#[test]
fn three_ranks_forced_sealed_deliver_every_size_intact_and_in_order() {
    let n = 3u32;
    let ts: Vec<_> = connect_all(local_kv_world(n), |_| SECRET, |_| opts(Seal::Always)).into_iter().map(|t| t.expect("setup")).collect();
    let rounds = 6u32;
    let handles: Vec<_> = ts
        .into_iter()
        .map(|mut t| {
            std::thread::spawn(move || {
                let me = t.rank();
                for p in (0..n).filter(|&p| p != me) {
                    assert_eq!(t.sealed(p), Some(true), "rank {me} to {p} sealed");
                }
                let mut out = vec![];
                for seq in 0..rounds * SIZES.len() as u32 {
                    for dst in (0..n).filter(|&d| d != me) {
                        out.push((dst, make(me, dst, seq, SIZES[(seq as usize + dst as usize) % SIZES.len()])));
                    }
                }
                let expect = out.len();
                let got = pump(&mut t, out, expect, Duration::from_secs(60));
                t.shutdown(Duration::from_secs(10)).expect("clean shutdown");
                (me, got)
            })
        })
        .collect();
    for h in handles {
        let (me, got) = h.join().expect("rank thread");
        let mut next = vec![0u32; n as usize];
        for (peer, f) in &got {
            let (src, dst, seq) = check(f);
            assert_eq!((src, dst), (*peer, me));
            assert_eq!(seq, next[src as usize], "rank {me}: frames from {src} out of order");
            next[src as usize] += 1;
        }
        assert_eq!(got.len(), 2 * (rounds as usize * SIZES.len()));
    }
}

#[test]
fn loopback_is_plain_by_default_and_one_forcing_side_seals_both() {
    let plain = connect_all(local_kv_world(2), |_| SECRET, |_| opts(Seal::BetweenHosts));
    for (r, t) in plain.iter().enumerate() {
        assert_eq!(t.as_ref().unwrap().sealed(1 - r as u32), Some(false));
    }
    let never = connect_all(local_kv_world(2), |_| SECRET, |_| opts(Seal::Never));
    assert_eq!(never[0].as_ref().unwrap().sealed(1), Some(false));
    // Settings that differ still agree: the side that asks wins.
    for forcing in 0..2u32 {
        let ts = connect_all(local_kv_world(2), |_| SECRET, |r| opts(if r == forcing { Seal::Always } else { Seal::Never }));
        let mut ts: Vec<_> = ts.into_iter().map(|t| t.unwrap()).collect();
        assert_eq!((ts[0].sealed(1), ts[1].sealed(0)), (Some(true), Some(true)));
        let (a, b) = ts.split_at_mut(1);
        pump(&mut a[0], vec![(1, make(0, 1, 0, 5000))], 0, Duration::from_secs(10));
        let got = pump(&mut b[0], vec![], 1, Duration::from_secs(10));
        assert_eq!(check(&got[0].1), (0, 1, 0));
    }
}
