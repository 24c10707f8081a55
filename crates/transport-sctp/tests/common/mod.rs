//! Runs n ranks as threads of the test process, each with its own
//! SctpTransport, joined by an in-process key/value exchange.

#![allow(dead_code)]

pub mod spoof;

use std::time::{Duration, Instant};
use wanmpi_bootstrap::local_kv_world;
use wanmpi_transport::{Incoming, PeerId, SendStatus, Transport};
use wanmpi_transport_sctp::{SctpOptions, SctpTransport};

pub const SECRET: [u8; 32] = [0x5a; 32];

/// Runs `body(transport)` on n threads after connecting them all; returns
/// each rank's result in rank order.
pub fn run_ranks<R: Send + 'static>(n: u32, opts: SctpOptions, body: impl Fn(SctpTransport) -> R + Send + Sync + Clone + 'static) -> Vec<R> {
    run_ranks_with(n, move |_| opts.clone(), body)
}

/// Like `run_ranks`, with options chosen per rank.
pub fn run_ranks_with<R: Send + 'static>(
    n: u32,
    opts_for: impl Fn(u32) -> SctpOptions,
    body: impl Fn(SctpTransport) -> R + Send + Sync + Clone + 'static,
) -> Vec<R> {
    let handles: Vec<_> = local_kv_world(n)
        .into_iter()
        .enumerate()
        .map(|(r, mut kv)| {
            let opts = opts_for(r as u32);
            let body = body.clone();
            std::thread::spawn(move || {
                let t = SctpTransport::connect(&mut kv, SECRET, opts).expect("connect");
                body(t)
            })
        })
        .collect();
    handles.into_iter().map(|h| h.join().expect("rank thread panicked")).collect()
}

/// Sends one frame, driving the transport while it says WouldBlock (bounded).
pub fn send(t: &mut SctpTransport, peer: PeerId, ch: u16, data: &[u8]) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match t.try_send(peer, ch, &[data]).expect("try_send") {
            SendStatus::Sent => return,
            SendStatus::WouldBlock => {
                assert!(Instant::now() < deadline, "send stayed blocked for 30 s");
                t.wait(Duration::from_millis(5)).expect("wait");
            }
        }
    }
}

/// A received frame, owned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Got {
    pub peer: PeerId,
    pub channel: u16,
    pub bytes: Vec<u8>,
}

/// Receives until `n` frames arrived (bounded by `limit`); PeerLost panics.
pub fn recv_n(t: &mut SctpTransport, n: usize, limit: Duration) -> Vec<Got> {
    let deadline = Instant::now() + limit;
    let mut got = vec![];
    while got.len() < n {
        assert!(Instant::now() < deadline, "only {} of {n} frames within {limit:?}", got.len());
        t.poll_recv(&mut |ev| match ev {
            Incoming::Frame { peer, channel, bytes } => got.push(Got { peer, channel, bytes: bytes.to_vec() }),
            Incoming::PeerLost { peer, reason } => panic!("peer {peer} lost: {reason}"),
        })
        .expect("poll_recv");
        if got.len() < n {
            t.wait(Duration::from_millis(20)).expect("wait");
        }
    }
    got
}

/// Keeps a transport's associations serviced until `done()` (bounded).
pub fn serve_until(t: &mut SctpTransport, limit: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !done() && Instant::now() < deadline {
        t.poll_recv(&mut |_| {}).expect("poll_recv");
        t.wait(Duration::from_millis(10)).expect("wait");
    }
}

/// A frame whose content says who sent it, where and in which order.
pub fn frame(from: PeerId, ch: u16, seq: u32, len: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(len.max(12));
    v.extend_from_slice(&from.to_be_bytes());
    v.extend_from_slice(&(ch as u32).to_be_bytes());
    v.extend_from_slice(&seq.to_be_bytes());
    let mut x = seq.wrapping_mul(2654435761) ^ from ^ ((ch as u32) << 16);
    while v.len() < len {
        x = x.wrapping_mul(1103515245).wrapping_add(12345);
        v.push((x >> 16) as u8);
    }
    v
}

pub fn seq_of(bytes: &[u8]) -> u32 {
    u32::from_be_bytes([bytes[8], bytes[9], bytes[10], bytes[11]])
}

/// Options for tests: fast heartbeats off by default, short timeouts.
pub fn test_opts(streams: u16) -> SctpOptions {
    SctpOptions { streams, connect_timeout: Duration::from_secs(20), ..SctpOptions::default() }
}

/// Options that give a silent peer up within about a second: short RTOs
/// and heartbeats, and an outage limit of 600 ms (3 retransmissions at
/// RTO_MAX), not the default 10 minutes.
pub fn fast_failure_opts() -> SctpOptions {
    SctpOptions {
        heartbeat_ms: 100,
        rto_min_ms: 50,
        rto_initial_ms: 100,
        rto_max_ms: 200,
        max_retrans: 3,
        outage_limit: Duration::from_millis(600),
        ..test_opts(2)
    }
}

/// Drives the transport until everything it sent is acknowledged (bounded),
/// so a rank can stop servicing it (e.g. wait at a barrier) without
/// stalling its peers.
pub fn drain(t: &mut SctpTransport) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while t.flush().expect("flush") {
        assert!(Instant::now() < deadline, "data still in flight after 30 s");
        t.wait(Duration::from_millis(5)).expect("wait");
    }
}

/// How a paced stream of frames from rank 0 to rank 1 (channel 0) looks.
#[derive(Clone, Copy)]
pub struct Paced {
    pub frames: u32,
    pub len: usize,
    /// Frames per slot.
    pub batch: u32,
    pub slot: Duration,
}

/// Sends the stream, one batch per slot, servicing the transport between
/// batches; `after_batch(t, sent)` runs after each batch.
pub fn send_paced(t: &mut SctpTransport, p: Paced, mut after_batch: impl FnMut(&mut SctpTransport, u32)) {
    let start = Instant::now();
    let mut seq = 0;
    while seq < p.frames {
        for _ in 0..p.batch.min(p.frames - seq) {
            send(t, 1, 0, &frame(0, 0, seq, p.len));
            seq += 1;
        }
        after_batch(t, seq);
        let next = start + p.slot * (seq / p.batch);
        while Instant::now() < next {
            t.poll_recv(&mut |_| {}).expect("poll_recv");
            t.wait(next.saturating_duration_since(Instant::now())).expect("wait");
        }
    }
}

/// Receives the stream (every frame checked byte for byte, on channel 0),
/// calling `each_round(t)` between polls; returns the sequence numbers and
/// arrival times in arrival order. Fails after 30 s.
pub fn receive_paced(t: &mut SctpTransport, p: Paced, mut each_round: impl FnMut(&SctpTransport)) -> (Vec<u32>, Vec<Instant>) {
    let (mut got, mut arrivals) = (Vec::new(), Vec::new());
    let deadline = Instant::now() + Duration::from_secs(30);
    while (got.len() as u32) < p.frames {
        assert!(Instant::now() < deadline, "only {} of {} frames within 30 s", got.len(), p.frames);
        t.poll_recv(&mut |ev| match ev {
            Incoming::Frame { channel, bytes, .. } => {
                assert_eq!(channel, 0);
                let s = seq_of(bytes);
                assert_eq!(bytes, frame(0, 0, s, p.len).as_slice(), "frame {s} corrupted");
                got.push(s);
                arrivals.push(Instant::now());
            }
            Incoming::PeerLost { peer, reason } => panic!("peer {peer} lost: {reason}"),
        })
        .expect("poll_recv");
        each_round(t);
        t.wait(Duration::from_millis(5)).expect("wait");
    }
    (got, arrivals)
}
