//! A man in the middle of a sealed connection: a flipped bit (in a frame or
//! in its length), an injected frame, a replayed frame or a dropped one is
//! detected at the first record it touches; the receiver reports the peer
//! lost, naming it and why, and delivers nothing altered nor anything after.
//! A captured stream holds no plaintext of what was sent (and does when
//! sealing is off, which shows the capture sees the bytes).

mod common;
use common::proxy::{self, Captured, Op, ProxyKv};
use common::*;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use wanmpi_bootstrap::local_kv_world;
use wanmpi_transport_tcp::auth::{HELLO_LEN, PROOF_LEN};
use wanmpi_transport_tcp::record::wire_len;
use wanmpi_transport_tcp::{Incoming, Seal, SendStatus, TcpOptions, TcpTransport, Transport};

const T: Duration = Duration::from_secs(20);
/// What rank 0 (the connector) sends, in order.
const SIZES: &[usize] = &[1000, 5000, 200_000, 70_000, 1 << 20, 100, 3000];

/// Offset of frame `k` in rank 0's stream: after its handshake messages.
fn offset(k: usize) -> usize {
    HELLO_LEN + PROOF_LEN + SIZES[..k].iter().map(|&l| 4 + wire_len(l)).sum::<usize>()
}

/// Ranks 0 and 1 with rank 0's connection to rank 1 through a proxy doing `op`.
fn job(seal: Seal, op: Op) -> (TcpTransport, TcpTransport, Arc<Mutex<Captured>>) {
    let mut kvs = local_kv_world(2);
    let kv1 = kvs.pop().unwrap();
    let kv0 = kvs.pop().unwrap();
    let slot = Arc::new(Mutex::new(None));
    let s = slot.clone();
    let kv0 = ProxyKv {
        inner: kv0,
        target: 1,
        proxy: Box::new(move |ep| {
            let (addr, cap) = proxy::start(ep, op.clone());
            *s.lock().unwrap() = Some(cap);
            addr
        }),
    };
    let opts = TcpOptions { seal, ..test_opts() };
    let o = opts.clone();
    let a = std::thread::spawn(move || TcpTransport::connect(&mut { kv0 }, SECRET, o));
    let b = std::thread::spawn(move || TcpTransport::connect(&mut { kv1 }, SECRET, opts));
    let (a, b) = (a.join().unwrap().expect("rank 0 setup"), b.join().unwrap().expect("rank 1 setup"));
    let cap = slot.lock().unwrap().take().expect("rank 0 dialled through the proxy");
    (a, b, cap)
}

/// Sends every frame to `peer`, giving up quietly once the peer is lost
/// (the point of the tests); bounded by `T`.
fn send_all(t: &mut TcpTransport, peer: u32, frames: Vec<Vec<u8>>) {
    let deadline = Instant::now() + T;
    for f in &frames {
        loop {
            match t.try_send(peer, 0, &[&f[..3], &f[3..]]) {
                Ok(SendStatus::Sent) => break,
                Ok(SendStatus::WouldBlock) => {}
                Err(_) => return,
            }
            assert!(Instant::now() < deadline, "send timed out");
            let _ = t.poll_recv(&mut |_| {});
            t.wait(Duration::from_millis(20)).unwrap();
        }
    }
    while matches!(t.flush(), Ok(true)) && Instant::now() < deadline {
        let _ = t.poll_recv(&mut |_| {});
        t.wait(Duration::from_millis(20)).unwrap();
    }
}

/// Runs the job with `op`; returns what rank 1 received from rank 0.
fn tampered(op: Op) -> Vec<Event> {
    let (mut a, mut b, _) = job(Seal::Always, op);
    let frames: Vec<_> = SIZES.iter().enumerate().map(|(k, &l)| make(0, 1, k as u32, l)).collect();
    let sender = std::thread::spawn(move || send_all(&mut a, 1, frames));
    let evs = collect_until(&mut b, T, |evs| evs.iter().any(|e| matches!(e, Event::Lost(..))) || evs.len() > SIZES.len());
    sender.join().unwrap();
    evs
}

/// Exactly the first `intact` frames, whole, then the loss of rank 0 for
/// a failed record `record`.
fn assert_caught(evs: &[Event], intact: usize, record: u64) {
    let frames: Vec<_> = evs.iter().filter_map(|e| if let Event::Frame(0, f) = e { Some(f) } else { None }).collect();
    assert_eq!(frames.len(), intact, "frames before the tampering, and none after: {:?}", summary(evs));
    for (k, f) in frames.iter().enumerate() {
        assert_eq!(check(f), (0, 1, k as u32));
    }
    match evs.last() {
        Some(Event::Lost(0, reason)) => {
            assert!(reason.contains(&format!("integrity check failed on record {record}")), "{reason}");
        }
        other => panic!("expected rank 0 reported lost, got {other:?} after {:?}", summary(evs)),
    }
}

fn summary(evs: &[Event]) -> Vec<String> {
    evs.iter()
        .map(|e| match e {
            Event::Frame(p, f) => format!("frame from {p} of {} bytes", f.len()),
            Event::Lost(p, r) => format!("lost {p}: {r}"),
        })
        .collect()
}

#[test]
fn a_flipped_bit_inside_a_frame_fails_its_record() {
    // Byte 100000 of frame 2 lies in its second record: record 3 of the stream.
    assert_caught(&tampered(Op::Flip(offset(2) + 4 + 100_000)), 2, 3);
}

#[test]
fn a_flipped_bit_in_a_length_fails_that_frame() {
    assert_caught(&tampered(Op::Flip(offset(1))), 1, 1);
}

#[test]
fn an_injected_frame_fails() {
    let mut forged = 10u32.to_le_bytes().to_vec();
    forged.extend_from_slice(&[0x77; 26]); // 10 bytes and a made-up tag
    assert_caught(&tampered(Op::Inject(offset(1), forged)), 1, 1);
}

#[test]
fn a_replayed_frame_fails() {
    let len = offset(1) - offset(0);
    assert_caught(&tampered(Op::Replay { from: offset(0), len, at: offset(1) }), 1, 1);
}

#[test]
fn a_dropped_frame_makes_the_next_one_fail() {
    assert_caught(&tampered(Op::Drop(offset(1), offset(2) - offset(1))), 1, 1);
}

#[test]
fn untouched_through_the_proxy_everything_arrives() {
    let evs = tampered(Op::None);
    let frames: Vec<_> = evs.iter().filter_map(|e| if let Event::Frame(0, f) = e { Some(f) } else { None }).collect();
    assert_eq!(frames.len(), SIZES.len(), "{:?}", summary(&evs));
    for (k, f) in frames.iter().enumerate() {
        assert_eq!(check(f), (0, 1, k as u32));
    }
    // Rank 0 ends when it has sent: a clean close, no integrity failure.
    for e in &evs {
        if let Event::Lost(_, reason) = e {
            assert!(reason.starts_with("connection closed by peer"), "{reason}");
        }
    }
}

const MARK: &[u8] = b"wanmpi known plaintext: the eagle lands at dawn";

/// A message of `len` bytes that is the marker over and over.
fn known(len: usize) -> Vec<u8> {
    MARK.iter().copied().cycle().take(len).collect()
}

/// Rank 0 sends known messages to rank 1, which echoes them; returns what
/// the proxy saw each way.
fn exchange(seal: Seal) -> Arc<Mutex<Captured>> {
    let (mut a, mut b, cap) = job(seal, Op::None);
    let msgs = vec![known(100), known(200_000)];
    let sent = msgs.clone();
    let sender = std::thread::spawn(move || {
        send_all(&mut a, 1, sent);
        collect_until(&mut a, T, |evs| evs.len() >= 2)
    });
    let got = collect_until(&mut b, T, |evs| evs.len() >= 2);
    let echo: Vec<Vec<u8>> = got.iter().map(|e| if let Event::Frame(0, f) = e { f.clone() } else { panic!("{e:?}") }).collect();
    assert_eq!(echo, msgs, "delivered intact");
    send_all(&mut b, 0, echo);
    let back = sender.join().unwrap();
    assert_eq!(back, msgs.into_iter().map(|m| Event::Frame(1, m)).collect::<Vec<_>>());
    cap
}

fn shows(bytes: &[u8]) -> bool {
    // Any 16-byte piece of the marker would do.
    MARK.windows(16).any(|piece| bytes.windows(16).any(|w| w == piece))
}

#[test]
fn a_captured_sealed_stream_holds_no_plaintext() {
    let cap = exchange(Seal::Always);
    let c = cap.lock().unwrap();
    assert!(c.to_server.len() > 200_000 && c.to_client.len() > 200_000, "the capture saw the traffic");
    assert!(!shows(&c.to_server), "plaintext on the wire from rank 0");
    assert!(!shows(&c.to_client), "plaintext on the wire from rank 1");
}

#[test]
fn with_sealing_off_the_capture_shows_the_plaintext() {
    let cap = exchange(Seal::Never);
    let c = cap.lock().unwrap();
    assert!(shows(&c.to_server) && shows(&c.to_client));
}

#[test]
fn incoming_names_the_peer_in_the_loss() {
    // The report reaches the transport's user as Incoming::PeerLost.
    let (mut a, mut b, _) = job(Seal::Always, Op::Flip(offset(0) + 10));
    let sender = std::thread::spawn(move || send_all(&mut a, 1, vec![make(0, 1, 0, 1000), make(0, 1, 1, 1000)]));
    let deadline = Instant::now() + T;
    let mut lost = None;
    while lost.is_none() && Instant::now() < deadline {
        b.poll_recv(&mut |ev| match ev {
            Incoming::Frame { .. } => panic!("a tampered frame was delivered"),
            Incoming::PeerLost { peer, reason } => lost = Some((peer, reason)),
        })
        .unwrap();
        b.wait(Duration::from_millis(20)).unwrap();
    }
    sender.join().unwrap();
    let (peer, reason) = lost.expect("loss reported");
    assert_eq!(peer, 0);
    assert!(reason.contains("integrity check failed on record 0"), "{reason}");
}
