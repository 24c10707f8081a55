//! Helpers shared by the integration tests: build a job of N ranks as
//! threads on 127.0.0.1, pump frames with bounded waits, and make frames
//! whose content can be checked.
#![allow(dead_code)]

pub mod proxy;

use std::collections::VecDeque;
use std::time::{Duration, Instant};
use wanmpi_bootstrap::{local_kv_world, KeyValue};
use wanmpi_transport_tcp::{Incoming, PeerId, SendStatus, TcpOptions, TcpTransport, Transport, TransportError};

pub const SECRET: [u8; 32] = [0x42; 32];

pub fn test_opts() -> TcpOptions {
    TcpOptions { bind_addr: "127.0.0.1".parse().unwrap(), setup_timeout: Duration::from_secs(20), ..TcpOptions::default() }
}

/// Connects one transport per key/value endpoint, each in its own thread.
pub fn connect_all<K: KeyValue + Send + 'static>(
    kvs: Vec<K>,
    secret_of: impl Fn(u32) -> [u8; 32],
    opts_of: impl Fn(u32) -> TcpOptions,
) -> Vec<Result<TcpTransport, TransportError>> {
    let handles: Vec<_> = kvs
        .into_iter()
        .map(|mut kv| {
            let (secret, opts) = (secret_of(kv.rank()), opts_of(kv.rank()));
            std::thread::spawn(move || TcpTransport::connect(&mut kv, secret, opts))
        })
        .collect();
    handles.into_iter().map(|h| h.join().expect("connect thread panicked")).collect()
}

/// A job of `n` ranks with the test defaults.
pub fn world(n: u32) -> Vec<TcpTransport> {
    connect_all(local_kv_world(n), |_| SECRET, |_| test_opts()).into_iter().map(|t| t.expect("setup")).collect()
}

/// A frame from `src` to `dst` numbered `seq`, `len` bytes long (at least 12),
/// whose body is a pattern of all three.
pub fn make(src: u32, dst: u32, seq: u32, len: usize) -> Vec<u8> {
    assert!(len >= 12);
    let mut f = Vec::with_capacity(len);
    f.extend_from_slice(&src.to_le_bytes());
    f.extend_from_slice(&dst.to_le_bytes());
    f.extend_from_slice(&seq.to_le_bytes());
    f.extend((12..len).map(|i| (i as u32).wrapping_mul(31).wrapping_add(src * 7 + seq) as u8));
    f
}

/// Checks a frame made by `make`; returns (src, dst, seq).
pub fn check(f: &[u8]) -> (u32, u32, u32) {
    let word = |i: usize| u32::from_le_bytes([f[i], f[i + 1], f[i + 2], f[i + 3]]);
    let (src, dst, seq) = (word(0), word(4), word(8));
    assert_eq!(f, make(src, dst, seq, f.len()), "frame {src}->{dst} #{seq} corrupted");
    (src, dst, seq)
}

/// Sends `out` (handling WouldBlock) while receiving, until everything is
/// sent and flushed and `expect` frames have arrived. Panics on a peer lost
/// other than by a clean close, or after `limit`.
pub fn pump(t: &mut TcpTransport, out: Vec<(PeerId, Vec<u8>)>, expect: usize, limit: Duration) -> Vec<(PeerId, Vec<u8>)> {
    let mut out: VecDeque<_> = out.into();
    let deadline = Instant::now() + limit;
    let mut got = vec![];
    let me = t.rank();
    loop {
        while let Some((p, f)) = out.front() {
            match t.try_send(*p, 0, &[&f[..4], &f[4..]]).expect("try_send") {
                SendStatus::Sent => {
                    out.pop_front();
                }
                SendStatus::WouldBlock => break,
            }
        }
        t.poll_recv(&mut |ev| match ev {
            Incoming::Frame { peer, channel, bytes } => {
                assert_eq!(channel, 0);
                got.push((peer, bytes.to_vec()));
            }
            // A peer that finished and shut down closes cleanly; missing
            // frames would still show in the count. Anything else is a failure.
            Incoming::PeerLost { peer, reason } => {
                assert_eq!(reason, "connection closed by peer", "rank {me} lost peer {peer}");
            }
        })
        .expect("poll_recv");
        let pending = t.flush().expect("flush");
        if out.is_empty() && !pending && got.len() >= expect {
            return got;
        }
        assert!(Instant::now() < deadline, "timed out: {} of {expect} frames received, {} unsent", got.len(), out.len());
        t.wait(Duration::from_millis(50)).expect("wait");
    }
}

/// Collects events for up to `limit` (bounded), until `done` says enough.
pub fn collect_until(t: &mut TcpTransport, limit: Duration, mut done: impl FnMut(&[Event]) -> bool) -> Vec<Event> {
    let deadline = Instant::now() + limit;
    let mut evs = vec![];
    while !done(&evs) && Instant::now() < deadline {
        t.poll_recv(&mut |ev| {
            evs.push(match ev {
                Incoming::Frame { peer, bytes, .. } => Event::Frame(peer, bytes.to_vec()),
                Incoming::PeerLost { peer, reason } => Event::Lost(peer, reason),
            })
        })
        .expect("poll_recv");
        t.wait(Duration::from_millis(20)).expect("wait");
    }
    evs
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    Frame(PeerId, Vec<u8>),
    Lost(PeerId, String),
}
