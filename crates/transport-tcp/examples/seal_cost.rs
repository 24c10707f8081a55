//! What sealing costs the tcp transport alone, without the engine or
//! mpirun: two `TcpTransport`s (ranks as threads, loopback) ping-pong frames
//! of each size over a plain and a sealed pair, alternating short batches
//! of each so that both see the same load; prints the median round trip and
//! bandwidth of each and the median of the batches' ratios
//! (docs/benchmarks.md "Sealing").
//!
//! Both ranks poll without sleeping (as the runtime's spin phase does), so
//! on a 2-core machine this wants the cores to itself. With `serial`, one
//! thread plays both ranks and the time is its CPU time: the work of a
//! round trip (copies, sealing, opening, system calls) without overlap or
//! waiting, and far less disturbed by other load than the wall clock.
//!
//!   cargo run --release -p wanmpi-transport-tcp --example seal_cost -- [BATCHES=15] [SIZES=1,65536,1048576] [serial]

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

/// Mean round trip over `iters`, the echo on a thread of its own.
fn pingpong(a: &mut TcpTransport, b: &mut TcpTransport, len: usize, iters: usize) -> Duration {
    std::thread::scope(|sc| {
        sc.spawn(|| {
            let frame = vec![7u8; len];
            for _ in 0..iters {
                recv(b, len);
                send(b, &frame);
            }
        });
        let frame = vec![9u8; len];
        let t0 = Instant::now();
        for _ in 0..iters {
            send(a, &frame);
            recv(a, len);
        }
        t0.elapsed() / iters as u32
    })
}

/// This thread's CPU time (user and system): unlike the wall clock, it
/// does not count time the thread spent preempted by other load.
fn cpu_time() -> Duration {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a valid clock id and a valid pointer to a timespec.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime");
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// The work of a round trip alone: one thread plays both ranks, so the
/// time (this thread's CPU time) is every byte's sealing, opening and
/// copying in a row, with no waiting on the other core (and no overlap
/// with it either).
fn serial(a: &mut TcpTransport, b: &mut TcpTransport, len: usize, iters: usize) -> Duration {
    let frame = vec![9u8; len];
    let t0 = cpu_time();
    for _ in 0..iters {
        for dir in 0..2 {
            let (x, y) = if dir == 0 { (&mut *a, &mut *b) } else { (&mut *b, &mut *a) };
            let peer = 1 - x.rank();
            let mut got = false;
            let mut sent = false;
            while !got {
                if !sent {
                    sent = x.try_send(peer, 0, &[&frame[..1], &frame[1..]]).expect("send") == SendStatus::Sent;
                }
                x.flush().expect("flush");
                y.poll_recv(&mut |ev| got |= matches!(ev, Incoming::Frame { bytes, .. } if bytes.len() == len)).expect("poll");
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
        // A batch of each, alternating, so both see the same load.
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
