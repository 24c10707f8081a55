//! A peer that vanishes is reported as PeerLost (heartbeats), a peer with
//! the wrong secret never gets a frame through (and is reported lost), and
//! stray datagrams are ignored.

mod common;
use common::*;
use std::net::UdpSocket;
use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant};
use wanmpi_bootstrap::{local_kv_world, KeyValue};
use wanmpi_transport::{Incoming, Transport};
use wanmpi_transport_sctp::{SctpError, SctpOptions, SctpTransport};

#[test]
fn vanished_peer_is_reported_lost_by_heartbeats() {
    let gate = Arc::new(Barrier::new(2));
    let results = run_ranks(2, fast_failure_opts(), move |mut t| {
        gate.wait();
        if t.rank() == 1 {
            t.simulate_crash();
            return None;
        }
        let start = Instant::now();
        let mut lost = None;
        while lost.is_none() && start.elapsed() < Duration::from_secs(20) {
            t.poll_recv(&mut |ev| {
                if let Incoming::PeerLost { peer, reason } = ev {
                    lost = Some((peer, reason));
                }
            })
            .unwrap();
            t.wait(Duration::from_millis(20)).unwrap();
        }
        let counters = t.counters();
        eprintln!("{counters}");
        let after = t.try_send(1, 0, &[b"late"]);
        Some((lost, start.elapsed(), after.is_err(), counters.stack.heartbeat_timeouts))
    });
    let (lost, took, send_fails, hb_timeouts) = results[0].clone().unwrap();
    assert!(hb_timeouts > 0, "the loss was not noticed by heartbeats");
    let (peer, reason) = lost.expect("no PeerLost within 20 s");
    assert_eq!(peer, 1);
    assert!(reason.contains("lost"), "{reason}");
    assert!(send_fails, "sending to a lost peer must fail");
    eprintln!("vanished peer detected after {took:?}: {reason}");
}

#[test]
fn wrong_secret_gets_no_frame_through_and_is_reported_lost() {
    // A failed proof ends that association only: the side that checked it
    // returns from setup with the peer lost (so a stranger cannot stop the
    // other peers' setup); the other side may see the abort first, before
    // its own check, and then fails setup with the association lost.
    let seen = Arc::new(Mutex::new(vec![]));
    let hs: Vec<_> = local_kv_world(2)
        .into_iter()
        .map(|mut kv| {
            let seen = seen.clone();
            std::thread::spawn(move || {
                let secret = if kv.rank() == 0 { SECRET } else { [1u8; 32] };
                let opts = SctpOptions { connect_timeout: Duration::from_secs(5), ..fast_failure_opts() };
                let rank = kv.rank();
                let mut t = match SctpTransport::connect(&mut kv, secret, opts) {
                    Ok(t) => t,
                    Err(SctpError::SetupPeerLost { peer, reason }) => {
                        seen.lock().unwrap().push((rank, 0, Some((peer, reason)), true));
                        return;
                    }
                    Err(e) => panic!("rank {rank}: {e}"),
                };
                let other = 1 - t.rank();
                let (mut frames, mut lost) = (0, None);
                let deadline = Instant::now() + Duration::from_secs(10);
                while lost.is_none() && Instant::now() < deadline {
                    t.poll_recv(&mut |ev| match ev {
                        Incoming::Frame { .. } => frames += 1,
                        Incoming::PeerLost { peer, reason } => lost = Some((peer, reason)),
                    })
                    .unwrap();
                    t.wait(Duration::from_millis(10)).unwrap();
                }
                let send = t.try_send(other, 0, &[b"after"]);
                seen.lock().unwrap().push((t.rank(), frames, lost, send.is_err()));
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 2);
    for (rank, frames, lost, send_fails) in seen.iter() {
        assert_eq!(*frames, 0, "rank {rank} got a frame");
        let (peer, reason) = lost.as_ref().unwrap_or_else(|| panic!("rank {rank} did not report its peer lost"));
        assert_eq!(*peer, 1 - rank);
        assert!(*send_fails, "rank {rank} could still send to its peer");
        eprintln!("rank {rank}: {reason}");
    }
    assert!(seen.iter().any(|(_, _, l, _)| l.as_ref().is_some_and(|(_, r)| r.contains("secret"))), "{seen:?}");
}

#[test]
fn datagrams_from_unknown_sources_are_ignored() {
    let gate = Arc::new(Barrier::new(2));
    let results = run_ranks(2, test_opts(2), move |mut t| {
        let me = t.rank();
        if me == 1 {
            // Garbage and a replayed-looking SCTP header from a stranger.
            let stranger = UdpSocket::bind("127.0.0.1:0").unwrap();
            let target = t.local_addr().unwrap();
            for i in 0..50u8 {
                let _ = stranger.send_to(&[i; 64], target);
            }
        }
        gate.wait();
        if me == 0 {
            send(&mut t, 1, 1, &frame(0, 1, 0, 500));
        }
        let got = if me == 1 { recv_n(&mut t, 1, Duration::from_secs(10)) } else { vec![] };
        let counters = t.counters();
        drain(&mut t);
        gate.wait();
        t.shutdown(Duration::from_secs(5)).unwrap();
        (got, counters)
    });
    let (got, counters) = &results[1];
    assert_eq!(got[0].bytes, frame(0, 1, 0, 500));
    let from0 = counters.peer(0).unwrap();
    assert!(from0.datagrams_in < 50, "stranger datagrams counted as the peer's: {}", from0.datagrams_in);
}

#[test]
fn a_rank_of_the_previous_handshake_version_is_refused_naming_both_versions() {
    // Rank 1 sends version 1's HELLO (no flags byte). Rank 0 refuses it at
    // once with a reason naming both versions, not after a time-out; rank 1
    // sees its association aborted, during or right after its setup.
    let hs: Vec<_> = local_kv_world(2)
        .into_iter()
        .map(|mut kv| {
            std::thread::spawn(move || {
                let rank = kv.rank();
                let opts = SctpOptions { connect_timeout: Duration::from_secs(5), test_hello_v1: rank == 1, ..fast_failure_opts() };
                let started = Instant::now();
                let mut t = match SctpTransport::connect(&mut kv, SECRET, opts) {
                    Ok(t) => t,
                    Err(SctpError::SetupPeerLost { peer, reason }) => return (rank, Some((peer, reason)), started.elapsed()),
                    Err(e) => panic!("rank {rank}: {e}"),
                };
                let mut lost = None;
                while lost.is_none() && started.elapsed() < Duration::from_secs(10) {
                    t.poll_recv(&mut |ev| {
                        if let Incoming::PeerLost { peer, reason } = ev {
                            lost = Some((peer, reason));
                        }
                    })
                    .unwrap();
                    t.wait(Duration::from_millis(10)).unwrap();
                }
                (rank, lost, started.elapsed())
            })
        })
        .collect();
    for h in hs {
        let (rank, lost, took) = h.join().unwrap();
        let (peer, reason) = lost.unwrap_or_else(|| panic!("rank {rank} did not report its peer lost"));
        assert_eq!(peer, 1 - rank);
        assert!(took < Duration::from_secs(4), "rank {rank}: {took:?}, not before the setup time-out");
        if rank == 0 {
            assert!(reason.contains("rank 1 speaks the sctp handshake of version 1, this rank version 2"), "{reason}");
        }
    }
}
