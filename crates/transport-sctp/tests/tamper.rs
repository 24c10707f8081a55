//! A man in the middle of a sealed link: a flipped bit in the datagram
//! carrying a frame, the datagram sent twice, or a forgery sent ahead of it
//! under the same packet number are dropped before usrsctp sees them and
//! counted; SCTP resends what was dropped, so every frame arrives intact,
//! once, in order, and nobody is lost. With sealing off the flip and the
//! forgery (their SCTP checksum fixed) arrive as data, which shows the
//! hooks alter the real traffic. Stray datagrams from outside the job
//! change nothing.
//!
//! The alterations are made by the sending rank's test hook
//! (`SctpOptions::test_tamper`) on the real path, in the datagram on its
//! way to the UDP socket (link.rs).

mod common;
use common::*;
use std::net::UdpSocket;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::Arc;
use std::time::{Duration, Instant};
use wanmpi_transport::{Incoming, PeerId, SendStatus, Transport};
use wanmpi_transport_sctp::{SctpOptions, SctpTransport, Seal, Tamper};

const T: Duration = Duration::from_secs(20);
/// Frames rank 0 sends, in order, round-robin over 3 streams.
const SIZES: &[usize] = &[1000, 5000, 200_000, 70_000, 100, 3000, 40_000, 12];
const STREAMS: u16 = 3;

fn channel(seq: usize) -> u16 {
    (seq % STREAMS as usize) as u16
}

#[derive(Debug)]
enum Event {
    Frame(PeerId, u16, Vec<u8>),
    Lost(PeerId, String),
}

/// Sends every frame, giving up quietly once the peer is lost; then keeps
/// the association serviced until `stop`.
fn sender(t: &mut SctpTransport, stop: &AtomicBool) {
    let deadline = Instant::now() + T;
    'frames: for (k, &len) in SIZES.iter().enumerate() {
        let f = frame(0, channel(k), k as u32, len);
        loop {
            match t.try_send(1, channel(k), &[&f[..5], &f[5..]]) {
                Ok(SendStatus::Sent) => break,
                Ok(SendStatus::WouldBlock) => {}
                Err(_) => break 'frames,
            }
            assert!(Instant::now() < deadline, "send timed out");
            let _ = t.poll_recv(&mut |_| {});
            t.wait(Duration::from_millis(5)).unwrap();
        }
    }
    while !stop.load(SeqCst) && Instant::now() < deadline {
        let _ = t.poll_recv(&mut |_| {});
        t.wait(Duration::from_millis(10)).unwrap();
    }
}

/// Receives until rank 0 is lost or every frame (and a little more) came.
fn receiver(t: &mut SctpTransport, stray: Option<&UdpSocket>) -> Vec<Event> {
    let deadline = Instant::now() + T;
    let mut evs = vec![];
    let mut all_at: Option<Instant> = None;
    while Instant::now() < deadline {
        if let Some(s) = stray {
            // Garbage from an address that is no peer's endpoint.
            let _ = s.send_to(&[0x5a; 300], t.local_addr().unwrap());
        }
        t.poll_recv(&mut |ev| match ev {
            Incoming::Frame { peer, channel, bytes } => evs.push(Event::Frame(peer, channel, bytes.to_vec())),
            Incoming::PeerLost { peer, reason } => evs.push(Event::Lost(peer, reason)),
        })
        .unwrap();
        if evs.iter().any(|e| matches!(e, Event::Lost(..))) {
            break;
        }
        // Anything extra (a replay delivered) comes with the last frames.
        let frames = evs.iter().filter(|e| matches!(e, Event::Frame(..))).count();
        if frames >= SIZES.len() {
            let at = *all_at.get_or_insert_with(Instant::now);
            if at.elapsed() > Duration::from_millis(300) {
                break;
            }
        }
        t.wait(Duration::from_millis(5)).unwrap();
    }
    evs
}

/// Runs rank 0 (with `tamper`) sending to rank 1; what rank 1 saw, whether
/// each side's link is sealed, and the sealed datagrams rank 1 dropped
/// (did not open, replayed).
fn job(seal: Seal, tamper: Option<Tamper>, stray: bool) -> (Vec<Event>, Vec<Option<bool>>, (u64, u64)) {
    let stop = Arc::new(AtomicBool::new(false));
    let opts = move |r: u32| SctpOptions { seal, test_tamper: if r == 0 { tamper } else { None }, ..test_opts(STREAMS) };
    let out = run_ranks_with(2, opts, move |mut t| {
        let sealed = t.sealed(1 - t.rank());
        if t.rank() == 0 {
            sender(&mut t, &stop);
            (vec![], sealed, (0, 0))
        } else {
            let s = stray.then(|| UdpSocket::bind("127.0.0.1:0").unwrap());
            let evs = receiver(&mut t, s.as_ref());
            stop.store(true, SeqCst);
            let c = t.counters();
            let c = c.peer(0).expect("peer 0");
            (evs, sealed, (c.refused_forged, c.refused_replayed))
        }
    });
    let sealed = out.iter().map(|(_, s, _)| *s).collect();
    let (evs, _, refused) = out.into_iter().nth(1).unwrap();
    (evs, sealed, refused)
}

/// Every frame delivered is one rank 0 sent, intact, on its stream, each
/// stream in order; returns their sequence numbers.
fn intact(evs: &[Event]) -> Vec<u32> {
    let mut next = vec![None::<u32>; STREAMS as usize];
    let mut seqs = vec![];
    for e in evs {
        let Event::Frame(peer, ch, f) = e else { continue };
        assert_eq!(*peer, 0);
        let seq = seq_of(f);
        assert_eq!(f, &frame(0, *ch, seq, SIZES[seq as usize]), "frame {seq} delivered altered");
        assert_eq!(*ch, channel(seq as usize));
        assert!(next[*ch as usize].is_none_or(|n| seq > n), "stream {ch} out of order");
        next[*ch as usize] = Some(seq);
        seqs.push(seq);
    }
    seqs
}

/// Every frame arrived intact, once, and nobody was lost.
fn assert_all_intact(evs: &[Event]) {
    if let Some(Event::Lost(peer, reason)) = evs.iter().find(|e| matches!(e, Event::Lost(..))) {
        panic!("rank {peer} was lost: {reason}");
    }
    let mut seqs = intact(evs);
    seqs.sort();
    assert_eq!(seqs, (0..SIZES.len() as u32).collect::<Vec<_>>());
}

#[test]
fn a_bit_flipped_on_the_wire_is_dropped_and_the_frame_resent_intact() {
    let (evs, sealed, (forged, _)) = job(Seal::Always, Some(Tamper::FlipOnWire(3)), false);
    assert_eq!(sealed, vec![Some(true), Some(true)]);
    assert_all_intact(&evs);
    assert_eq!(forged, 1, "the flipped datagram dropped unopened");
}

#[test]
fn a_replayed_datagram_is_dropped() {
    let (evs, _, (forged, replayed)) = job(Seal::Always, Some(Tamper::Replay(2)), false);
    assert_all_intact(&evs);
    assert_eq!((forged, replayed), (0, 1));
}

#[test]
fn a_forgery_ahead_of_the_datagram_is_dropped() {
    let (evs, _, (forged, replayed)) = job(Seal::Always, Some(Tamper::Inject(4)), false);
    assert_all_intact(&evs);
    assert_eq!((forged, replayed), (1, 0));
}

#[test]
fn untouched_every_frame_arrives_and_strays_change_nothing() {
    let (evs, _, refused) = job(Seal::Always, None, true);
    assert_all_intact(&evs);
    assert_eq!(refused, (0, 0));
}

/// The frame `seq` as delivered; it must be the only one altered.
fn altered_only(evs: &[Event], seq: u32) -> Vec<u8> {
    let mut got = vec![];
    for e in evs {
        let Event::Frame(0, ch, f) = e else { continue };
        let s = seq_of(f);
        if s == seq {
            got.push(f.clone());
        } else {
            assert_eq!(f, &frame(0, *ch, s, SIZES[s as usize]), "frame {s} altered");
        }
    }
    assert_eq!(got.len(), 1, "frame {seq} once");
    got.pop().unwrap()
}

#[test]
fn unsealed_the_same_alterations_arrive_as_data() {
    // The flip reaches the receiver: frame 2 delivered with one bit changed.
    let (evs, sealed, _) = job(Seal::Never, Some(Tamper::FlipOnWire(3)), false);
    assert_eq!(sealed, vec![Some(false), Some(false)]);
    let got = altered_only(&evs, 2);
    let want = frame(0, channel(2), 2, SIZES[2]);
    let bits: u32 = got.iter().zip(&want).map(|(a, b)| (a ^ b).count_ones()).sum();
    assert_eq!(bits, 1, "one bit flipped on the wire");
    // The forgery races ahead and is taken; the genuine packet is then a
    // duplicate to SCTP.
    let (evs, _, _) = job(Seal::Never, Some(Tamper::Inject(4)), false);
    assert_ne!(altered_only(&evs, 3), frame(0, channel(3), 3, SIZES[3]), "the forged data delivered");
}
