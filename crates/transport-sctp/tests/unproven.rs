//! Bounds before trust: a peer that has not proved the job secret may make
//! a rank hold only the handshake allowance (a stranger flooding frames
//! before its proof is cut off, and the other ranks' setup and traffic go
//! on), and a message over the frame limit ends that peer's association
//! instead of growing the reassembly buffer without end.

mod common;
use common::*;
use std::time::{Duration, Instant};
use wanmpi_transport::{Incoming, PeerId, SendStatus, Transport, TransportError};
use wanmpi_transport_sctp::{SctpOptions, SctpTransport, HANDSHAKE_ALLOWANCE};

const FRAME: usize = 256 << 10;

/// What one rank saw: frames by sender, losses with their reasons.
#[derive(Debug, Default)]
struct Seen {
    frames: Vec<Got>,
    lost: Vec<(PeerId, String)>,
}

/// Polls until `done(&seen)` (bounded by `limit`).
fn watch(t: &mut SctpTransport, seen: &mut Seen, limit: Duration, done: impl Fn(&Seen) -> bool) {
    let deadline = Instant::now() + limit;
    while !done(seen) {
        assert!(Instant::now() < deadline, "not done within {limit:?}: {} frames, lost {:?}", seen.frames.len(), seen.lost);
        t.poll_recv(&mut |ev| match ev {
            Incoming::Frame { peer, channel, bytes } => seen.frames.push(Got { peer, channel, bytes: bytes.to_vec() }),
            Incoming::PeerLost { peer, reason } => seen.lost.push((peer, reason)),
        })
        .expect("poll_recv");
        t.wait(Duration::from_millis(10)).expect("wait");
    }
}

/// The stranger's side: 16 MiB of frames to every other rank, before any
/// proof, until each has cut it off (or 30 s). Returns the bytes it got
/// accepted by usrsctp per peer.
fn flood(t: &mut SctpTransport) -> Vec<usize> {
    let mut sent = vec![0usize; 2];
    let mut cut = [false; 2];
    let deadline = Instant::now() + Duration::from_secs(30);
    let data = vec![0xeeu8; FRAME];
    while !cut.iter().all(|&c| c) && Instant::now() < deadline {
        for peer in 0..2u32 {
            if cut[peer as usize] || sent[peer as usize] >= 16 << 20 {
                cut[peer as usize] |= sent[peer as usize] >= 16 << 20;
                continue;
            }
            match t.try_send(peer, 1 + peer as u16, &[&data]) {
                Ok(SendStatus::Sent) => sent[peer as usize] += FRAME,
                Ok(SendStatus::WouldBlock) => {}
                Err(TransportError::PeerLost { .. }) => cut[peer as usize] = true,
                Err(e) => panic!("stranger's send: {e}"),
            }
        }
        t.poll_recv(&mut |ev| {
            if let Incoming::PeerLost { peer, .. } = ev {
                cut[peer as usize] = true;
            }
        })
        .expect("poll_recv");
        t.wait(Duration::from_millis(2)).expect("wait");
    }
    sent
}

#[test]
fn a_stranger_flooding_before_its_proof_is_cut_off_and_the_others_go_on() {
    let opts = |r: u32| SctpOptions { test_withhold_proof: r == 2, ..test_opts(4) };
    let results = run_ranks_with(3, opts, |mut t| {
        let me = t.rank();
        if me == 2 {
            return Err(flood(&mut t));
        }
        // The two members exchange ten frames each way while the stranger floods.
        let other = 1 - me;
        for seq in 0..10 {
            send(&mut t, other, 0, &frame(me, 0, seq, 100 << 10));
        }
        let mut seen = Seen::default();
        let from_other = |s: &Seen| s.frames.iter().filter(|g| g.peer == other).count();
        watch(&mut t, &mut seen, Duration::from_secs(30), |s| from_other(s) == 10 && s.lost.iter().any(|(p, _)| *p == 2));
        drain(&mut t);
        let counters = t.counters();
        eprintln!("{counters}");
        // Let the other member take its last frames before our association goes.
        serve_until(&mut t, Duration::from_secs(2), || false);
        Ok((seen, counters))
    });
    let Err(sent) = &results[2] else { unreachable!() };
    eprintln!("the stranger got {sent:?} bytes into its associations before being cut off");
    for me in 0..2u32 {
        let Ok((seen, counters)) = &results[me as usize] else { unreachable!() };
        let other = 1 - me;
        let mine: Vec<_> = seen.frames.iter().filter(|g| g.peer == other).collect();
        for (seq, g) in mine.iter().enumerate() {
            assert_eq!(g.bytes, frame(other, 0, seq as u32, 100 << 10), "rank {me}: frame {seq} of rank {other} changed");
        }
        assert!(seen.frames.iter().all(|g| g.peer != 2), "rank {me} delivered a frame of the stranger");
        let (_, why) = seen.lost.iter().find(|(p, _)| *p == 2).expect("stranger reported");
        assert!(why.contains("before proving the job secret"), "rank {me}: {why}");
        assert!(!seen.lost.iter().any(|(p, _)| *p == other), "rank {me} lost its real peer: {:?}", seen.lost);
        let held = counters.peer(2).unwrap().held_before_proof_peak;
        assert!(held as usize <= HANDSHAKE_ALLOWANCE, "rank {me} held {held} bytes of the stranger's");
        assert_eq!(counters.peer(other).unwrap().held_before_proof_peak, 0, "a member's frames came before its proof");
    }
}

#[test]
fn a_message_over_the_frame_limit_ends_that_association() {
    // Rank 1 is configured to send 1 MiB frames, rank 0 to take 256 KiB:
    // the one piece stream past 256 KiB is refused, not buffered.
    let opts = |r: u32| SctpOptions { max_frame: if r == 1 { 1 << 20 } else { FRAME }, ..test_opts(2) };
    let results = run_ranks_with(2, opts, |mut t| {
        let mut seen = Seen::default();
        if t.rank() == 1 {
            send(&mut t, 0, 1, &frame(1, 1, 0, FRAME));
            send(&mut t, 0, 1, &frame(1, 1, 1, 1 << 20));
            watch(&mut t, &mut seen, Duration::from_secs(30), |s| !s.lost.is_empty());
        } else {
            watch(&mut t, &mut seen, Duration::from_secs(30), |s| !s.lost.is_empty());
        }
        seen
    });
    let seen = &results[0];
    assert_eq!(seen.frames.len(), 1, "only the frame within the limit arrives");
    assert_eq!(seen.frames[0].bytes, frame(1, 1, 0, FRAME));
    let (peer, why) = &seen.lost[0];
    assert_eq!(*peer, 1);
    assert!(why.contains("frame limit"), "{why}");
    assert!(!results[1].lost.is_empty(), "the sender learns its association ended");
}
