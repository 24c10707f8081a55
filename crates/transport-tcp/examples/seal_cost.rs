//! What sealing costs the tcp transport alone, without the engine or
//! mpirun: two `TcpTransport`s (ranks as threads, loopback) ping-pong frames
//! of each size, plain and sealed pairs interleaved round by round; prints
//! the median round trip and bandwidth of each and their ratio
//! (docs/benchmarks.md section 21).
//!
//! Both ranks poll without sleeping (as the runtime's spin phase does), so
//! on a 2-core machine this wants the cores to itself.
//!
//!   cargo run --release -p wanmpi-transport-tcp --example seal_cost -- [ROUNDS=7] [SIZES=1,65536,1048576] [ITERS=0 (by size)]

use std::time::{Duration, Instant};
use wanmpi_bootstrap::local_kv_world;
use wanmpi_transport_tcp::{Incoming, Seal, SendStatus, TcpOptions, TcpTransport, Transport};

fn pair(seal: Seal) -> (TcpTransport, TcpTransport) {
    let opts = TcpOptions { bind_addr: "127.0.0.1".parse().expect("address"), seal, ..TcpOptions::default() };
    let hs: Vec<_> = local_kv_world(2)
        .into_iter()
        .map(|mut kv| {
            let o = opts.clone();
            std::thread::spawn(move || TcpTransport::connect(&mut kv, [0x42; 32], o))
        })
        .collect();
    let mut ts: Vec<TcpTransport> = hs.into_iter().map(|h| h.join().expect("connect thread").expect("setup")).collect();
    let b = ts.pop().expect("rank 1");
    let a = ts.pop().expect("rank 0");
    (a, b)
}

/// Sends one frame to the other rank, pushing until accepted.
fn send(t: &mut TcpTransport, frame: &[u8]) {
    let peer = 1 - t.rank();
    while t.try_send(peer, 0, &[&frame[..1], &frame[1..]]).expect("send") == SendStatus::WouldBlock {
        t.poll_recv(&mut |_| {}).expect("poll");
        t.flush().expect("flush");
    }
}

/// Spins until one frame arrives (and flushes meanwhile); checks its length.
fn recv(t: &mut TcpTransport, len: usize) {
    let mut got = false;
    while !got {
        t.poll_recv(&mut |ev| match ev {
            Incoming::Frame { bytes, .. } => {
                assert_eq!(bytes.len(), len);
                got = true;
            }
            Incoming::PeerLost { reason, .. } => panic!("peer lost: {reason}"),
        })
        .expect("poll");
        t.flush().expect("flush");
    }
}

/// Median-free single run: mean round trip over `iters` after a warm-up.
fn pingpong(a: TcpTransport, mut b: TcpTransport, len: usize, iters: usize) -> (Duration, TcpTransport, TcpTransport) {
    let warm = (iters / 10).max(2);
    let echo = std::thread::spawn(move || {
        let frame = vec![7u8; len];
        for _ in 0..warm + iters {
            recv(&mut b, len);
            send(&mut b, &frame);
        }
        b
    });
    let mut a = a;
    let frame = vec![9u8; len];
    let mut t0 = Instant::now();
    for i in 0..warm + iters {
        if i == warm {
            t0 = Instant::now();
        }
        send(&mut a, &frame);
        recv(&mut a, len);
    }
    let rtt = t0.elapsed() / iters as u32;
    let b = echo.join().expect("echo thread");
    (rtt, a, b)
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let mut args = std::env::args().skip(1);
    let rounds: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(7);
    let sizes: Vec<usize> = args.next().unwrap_or_else(|| "1,65536,1048576".into()).split(',').filter_map(|s| s.parse().ok()).collect();
    let iters_arg: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(0);
    // [size][sealed] -> round trips in us
    let mut rtts = vec![[Vec::new(), Vec::new()]; sizes.len()];
    for _ in 0..rounds {
        for (sealed, seal) in [(0, Seal::Never), (1, Seal::Always)] {
            let (mut a, mut b) = pair(seal);
            assert_eq!(a.sealed(1), Some(sealed == 1));
            for (k, &len) in sizes.iter().enumerate() {
                let iters = if iters_arg > 0 { iters_arg } else { (200_000_000 / (len + 20_000)).clamp(20, 5000) };
                let (rtt, a2, b2) = pingpong(a, b, len, iters);
                (a, b) = (a2, b2);
                rtts[k][sealed].push(rtt.as_secs_f64() * 1e6);
            }
        }
    }
    println!("| bytes | plain rtt us | sealed rtt us | + us | plain MB/s | sealed MB/s | sealed/plain |");
    println!("|---:|---:|---:|---:|---:|---:|---:|");
    for (k, &len) in sizes.iter().enumerate() {
        let [p, s] = &mut rtts[k];
        let (p, s) = (median(p), median(s));
        let bw = |rtt: f64| 2.0 * len as f64 / rtt;
        println!("| {len} | {p:.1} | {s:.1} | {:+.1} | {:.0} | {:.0} | {:.2} |", s - p, bw(p), bw(s), p / s);
    }
}
