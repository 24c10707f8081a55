//! Frames arrive intact and in order, between 2 and 4 ranks, small and large,
//! including frames a rank sends to itself.

mod common;
use common::*;
use std::time::Duration;
use wanmpi_transport_tcp::{SendStatus, Transport, TransportError, DEFAULT_MAX_FRAME};

/// Every rank sends `per_peer` frames to every rank (itself too), sizes
/// cycling through small ones with a max-size frame every `big_every`.
fn all_to_all(n: u32, per_peer: u32, big_every: u32) {
    let ts = world(n);
    let handles: Vec<_> = ts
        .into_iter()
        .map(|mut t| {
            std::thread::spawn(move || {
                let me = t.rank();
                let mut out = vec![];
                for seq in 0..per_peer {
                    for dst in 0..n {
                        let len = if big_every > 0 && seq % big_every == big_every - 1 {
                            DEFAULT_MAX_FRAME
                        } else {
                            12 + ((seq * 37 + dst * 11) % 300) as usize
                        };
                        out.push((dst, make(me, dst, seq, len)));
                    }
                }
                let got = pump(&mut t, out, (n * per_peer) as usize, Duration::from_secs(60));
                t.shutdown(Duration::from_secs(10)).expect("clean shutdown");
                (me, got)
            })
        })
        .collect();
    for h in handles {
        let (me, got) = h.join().expect("rank thread");
        assert_eq!(got.len(), (n * per_peer) as usize, "rank {me} got an exact count");
        let mut next = vec![0u32; n as usize];
        for (peer, f) in &got {
            let (src, dst, seq) = check(f);
            assert_eq!((src, dst), (*peer, me), "frame labelled with its true source");
            assert_eq!(seq, next[src as usize], "rank {me}: frames from {src} out of order");
            next[src as usize] += 1;
        }
    }
}

#[test]
fn two_ranks_many_small_frames_in_order() {
    all_to_all(2, 20_000, 0);
}

#[test]
fn four_ranks_mixed_small_and_max_size_frames() {
    all_to_all(4, 2_000, 250);
}

#[test]
fn zero_length_and_self_frames_and_argument_errors() {
    let t0 = std::time::Instant::now();
    let mut ts = world(2);
    // Not a benchmark: a setup that forgets a finished handshake would only
    // return at its 20 s timeout.
    assert!(t0.elapsed() < Duration::from_secs(10), "setup took {:?}", t0.elapsed());
    let mut b = ts.pop().unwrap();
    let mut a = ts.pop().unwrap();
    assert_eq!(a.caps().name, "tcp");
    assert_eq!(a.caps().channels, 1);
    assert_eq!((a.rank(), a.size(), b.rank()), (0, 2, 1));
    assert!(a.readiness_fd().is_some());
    assert_eq!(a.try_send(1, 0, &[]).unwrap(), SendStatus::Sent);
    assert_eq!(a.try_send(1, 0, &[b"", b"x", b""]).unwrap(), SendStatus::Sent);
    assert_eq!(a.try_send(0, 0, &[b"me", b"!"]).unwrap(), SendStatus::Sent);
    let big = vec![1u8; DEFAULT_MAX_FRAME + 1];
    assert!(matches!(a.try_send(1, 0, &[&big]), Err(TransportError::FrameTooLarge { .. })));
    assert!(matches!(a.try_send(2, 0, &[b"x"]), Err(TransportError::NoSuchPeer(2))));
    assert!(matches!(a.try_send(1, 1, &[b"x"]), Err(TransportError::NoSuchChannel { .. })));
    // Self-send wakes a waiter at once and arrives at the next poll.
    let t0 = std::time::Instant::now();
    a.wait(Duration::from_secs(5)).unwrap();
    assert!(t0.elapsed() < Duration::from_secs(2));
    let mine = collect_until(&mut a, Duration::from_secs(5), |e| !e.is_empty());
    assert_eq!(mine, vec![Event::Frame(0, b"me!".to_vec())]);
    let theirs = collect_until(&mut b, Duration::from_secs(5), |e| e.len() >= 2);
    assert_eq!(theirs, vec![Event::Frame(0, vec![]), Event::Frame(0, b"x".to_vec())]);
}

#[test]
fn a_singleton_job_needs_no_connection_and_sends_to_itself() {
    let mut t = world(1).pop().unwrap();
    assert_eq!((t.rank(), t.size()), (0, 1));
    for i in 0..3u8 {
        assert_eq!(t.try_send(0, 0, &[&[i]]).unwrap(), SendStatus::Sent);
    }
    let evs = collect_until(&mut t, Duration::from_secs(5), |e| e.len() >= 3);
    assert_eq!(evs, (0..3u8).map(|i| Event::Frame(0, vec![i])).collect::<Vec<_>>());
    t.shutdown(Duration::from_secs(1)).unwrap();
}
