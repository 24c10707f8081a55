//! What sealing costs the sctp transport alone, without the engine or
//! mpirun: two `SctpTransport`s (ranks as threads, loopback) ping-pong
//! messages of each size over a plain and a sealed pair, alternating short
//! batches of each so that both see the same load; prints the median round
//! trip and bandwidth of each and the median of the batches' ratios (as
//! tcp's `seal_cost`; docs/benchmarks.md "Sealing"). A message larger than a frame
//! (256 KiB) goes as frames of 64 KiB on one stream, as the engine cuts it.
//!
//! With `serial`, one thread plays both ranks and the time is its CPU
//! time: the work of a round trip (copies, sealing, opening, usrsctp)
//! without overlap or waiting, far less disturbed by other load.
//!
//!   cargo run --release -p wanmpi-transport-sctp --example sctp_seal_cost -- [BATCHES=15] [SIZES=1,65536,1048576] [serial]

use std::time::{Duration, Instant};
use wanmpi_bootstrap::local_kv_world;
use wanmpi_transport::{Incoming, SendStatus, Transport};
use wanmpi_transport_sctp::{SctpOptions, SctpTransport, Seal};

/// Frame size a long message is cut into (the engine's fragment size is
/// of this order; a single frame may be up to 256 KiB).
const PIECE: usize = 64 << 10;

fn pair(seal: Seal) -> (SctpTransport, SctpTransport) {
    // No heartbeats: one pair sits idle while the other runs its batch,
    // which under heavy load can outlast usrsctp's heartbeat retries.
    let opts = SctpOptions { seal, streams: 2, heartbeat_ms: 0, ..SctpOptions::default() };
    let hs: Vec<_> = local_kv_world(2)
        .into_iter()
        .map(|mut kv| {
            let o = opts.clone();
            std::thread::spawn(move || SctpTransport::connect(&mut kv, [0x42; 32], o))
        })
        .collect();
    let mut ts: Vec<SctpTransport> = hs.into_iter().map(|h| h.join().expect("connect thread").expect("setup")).collect();
    let b = ts.pop().expect("rank 1");
    let a = ts.pop().expect("rank 0");
    (a, b)
}

fn pieces(len: usize) -> Vec<usize> {
    if len <= PIECE {
        return vec![len];
    }
    (0..len.div_ceil(PIECE)).map(|i| (len - i * PIECE).min(PIECE)).collect()
}

/// Sends a message (in pieces) to the other rank, pushing until accepted.
fn send(t: &mut SctpTransport, msg: &[u8]) {
    let peer = 1 - t.rank();
    let mut off = 0;
    for n in pieces(msg.len()) {
        let f = &msg[off..off + n];
        while t.try_send(peer, 1, &[&f[..n.min(1)], &f[n.min(1)..]]).expect("send") == SendStatus::WouldBlock {
            t.poll_recv(&mut |_| {}).expect("poll");
        }
        off += n;
    }
    t.flush().expect("flush");
}

/// Spins until a whole message arrived; checks its length.
fn recv(t: &mut SctpTransport, len: usize) {
    let mut got = 0;
    while got < len.max(1) {
        t.poll_recv(&mut |ev| match ev {
            Incoming::Frame { bytes, .. } => got += bytes.len().max(1),
            Incoming::PeerLost { reason, .. } => panic!("peer lost: {reason}"),
        })
        .expect("poll");
    }
    assert_eq!(got, len.max(1));
}

/// Mean round trip over `iters`, the echo on a thread of its own.
fn pingpong(a: &mut SctpTransport, b: &mut SctpTransport, len: usize, iters: usize) -> Duration {
    std::thread::scope(|sc| {
        sc.spawn(|| {
            let msg = vec![7u8; len];
            for _ in 0..iters {
                recv(b, len);
                send(b, &msg);
            }
        });
        let msg = vec![9u8; len];
        let t0 = Instant::now();
        for _ in 0..iters {
            send(a, &msg);
            recv(a, len);
        }
        t0.elapsed() / iters as u32
    })
}

/// This thread's CPU time (user and system).
fn cpu_time() -> Duration {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a valid clock id and a valid pointer to a timespec.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime");
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// The work of a round trip alone: one thread plays both ranks (its CPU
/// time: sealing, opening, copying and usrsctp in a row).
fn serial(a: &mut SctpTransport, b: &mut SctpTransport, len: usize, iters: usize) -> Duration {
    let msg = vec![9u8; len];
    let t0 = cpu_time();
    for _ in 0..iters {
        for dir in 0..2 {
            let (x, y) = if dir == 0 { (&mut *a, &mut *b) } else { (&mut *b, &mut *a) };
            let peer = 1 - x.rank();
            let ps = pieces(len);
            let (mut sent, mut off, mut got) = (0, 0, 0);
            while got < len.max(1) {
                while sent < ps.len() {
                    let f = &msg[off..off + ps[sent]];
                    if x.try_send(peer, 1, &[f]).expect("send") != SendStatus::Sent {
                        break;
                    }
                    off += ps[sent];
                    sent += 1;
                }
                x.flush().expect("flush");
                y.poll_recv(&mut |ev| {
                    if let Incoming::Frame { bytes, .. } = ev {
                        got += bytes.len().max(1);
                    }
                })
                .expect("poll");
            }
        }
    }
    (cpu_time() - t0) / iters as u32
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let mut args = std::env::args().skip(1);
    let batches: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(15);
    let sizes: Vec<usize> = args.next().unwrap_or_else(|| "1,65536,1048576".into()).split(',').filter_map(|s| s.parse().ok()).collect();
    let one_thread = args.next().as_deref() == Some("serial");
    let mut pairs = [pair(Seal::Never), pair(Seal::Always)];
    assert_eq!((pairs[0].0.sealed(1), pairs[1].0.sealed(1)), (Some(false), Some(true)));
    println!("| bytes | plain rtt us | sealed rtt us | + us | plain MB/s | sealed MB/s | sealed/plain | ratio of batches (min, quartiles, max) |");
    println!("|---:|---:|---:|---:|---:|---:|---:|---|");
    for &len in &sizes {
        let iters = (20_000_000 / (len + 20_000)).clamp(10, 1000);
        let mut rtts = [Vec::new(), Vec::new()];
        let mut ratios = Vec::new();
        for batch in 0..=batches {
            let mut this = [0.0; 2];
            for (k, slot) in pairs.iter_mut().enumerate() {
                let (a, b) = (&mut slot.0, &mut slot.1);
                let rtt = if one_thread { serial(a, b, len, iters) } else { pingpong(a, b, len, iters) };
                this[k] = rtt.as_secs_f64() * 1e6;
            }
            if batch > 0 {
                // Batch 0 warms up.
                rtts[0].push(this[0]);
                rtts[1].push(this[1]);
                ratios.push(this[0] / this[1]);
            }
        }
        let (p, s) = (median(&mut rtts[0]), median(&mut rtts[1]));
        let r = median(&mut ratios);
        let q = |f: f64| ratios[((ratios.len() - 1) as f64 * f).round() as usize];
        let bw = |rtt: f64| 2.0 * len as f64 / rtt;
        println!(
            "| {len} | {p:.1} | {s:.1} | {:+.1} | {:.0} | {:.0} | {r:.2} | {:.2} {:.2} {:.2} {:.2} |",
            s - p,
            bw(p),
            bw(s),
            q(0.0),
            q(0.25),
            q(0.75),
            q(1.0)
        );
    }
}
