//! Loopback micro-benchmark of the tcp transport (a benchmark, not a test):
//! streaming bandwidth with 1 MiB frames and the round trip of 8-byte frames.
//!
//! Run: cargo run --release -p wanmpi-transport-tcp --example tcp_bench
//! Two ranks are threads of this process; the figures are medians of 5 runs.

use std::time::{Duration, Instant};
use wanmpi_bootstrap::local_kv_world;
use wanmpi_transport_tcp::{Incoming, SendStatus, TcpOptions, TcpTransport, Transport};

const FRAME: usize = 1 << 20;
const FRAMES: usize = 512;
const PINGS: usize = 20_000;
const LIMIT: Duration = Duration::from_secs(120);

fn pair() -> (TcpTransport, TcpTransport) {
    let opts = TcpOptions { bind_addr: "127.0.0.1".parse().expect("address"), ..TcpOptions::default() };
    let mut hs: Vec<_> = local_kv_world(2)
        .into_iter()
        .map(|mut kv| {
            let o = opts.clone();
            std::thread::spawn(move || TcpTransport::connect(&mut kv, [1; 32], o).expect("setup"))
        })
        .collect();
    let b = hs.pop().expect("two").join().expect("rank 1");
    let a = hs.pop().expect("two").join().expect("rank 0");
    (a, b)
}

/// Sends one frame, waiting (bounded) while the transport pushes back.
fn send(t: &mut TcpTransport, peer: u32, bytes: &[u8], spin: bool) {
    let deadline = Instant::now() + LIMIT;
    while t.try_send(peer, 0, &[bytes]).expect("send") == SendStatus::WouldBlock {
        assert!(Instant::now() < deadline, "send stuck");
        if !spin {
            t.wait(Duration::from_millis(10)).expect("wait");
        }
    }
}

/// Receives until `n` frames arrived (bounded); busy-polls when `spin`.
fn recv(t: &mut TcpTransport, n: usize, spin: bool) {
    let deadline = Instant::now() + LIMIT;
    let mut got = 0;
    while got < n {
        t.poll_recv(&mut |ev| match ev {
            Incoming::Frame { .. } => got += 1,
            Incoming::PeerLost { peer, reason } => panic!("lost {peer}: {reason}"),
        })
        .expect("poll");
        if got < n {
            assert!(Instant::now() < deadline, "receive stuck");
            t.flush().expect("flush");
            if !spin {
                t.wait(Duration::from_millis(10)).expect("wait");
            }
        }
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn bandwidth(a: &mut TcpTransport, b: &mut TcpTransport) -> f64 {
    let frame = vec![0xABu8; FRAME];
    let mut runs = vec![];
    for _ in 0..5 {
        std::thread::scope(|s| {
            s.spawn(|| {
                recv(b, FRAMES, false);
                send(b, 0, b"ack", false);
                b.flush().expect("flush");
            });
            let t0 = Instant::now();
            for _ in 0..FRAMES {
                send(a, 1, &frame, false);
            }
            recv(a, 1, false);
            runs.push((FRAMES * FRAME) as f64 / t0.elapsed().as_secs_f64() / 1e6);
        });
    }
    median(runs)
}

fn round_trip(a: &mut TcpTransport, b: &mut TcpTransport, spin: bool) -> f64 {
    let mut runs = vec![];
    for _ in 0..5 {
        std::thread::scope(|s| {
            s.spawn(|| {
                for _ in 0..PINGS {
                    recv(b, 1, spin);
                    send(b, 0, &[0u8; 8], spin);
                }
            });
            let t0 = Instant::now();
            for _ in 0..PINGS {
                send(a, 1, &[0u8; 8], spin);
                recv(a, 1, spin);
            }
            runs.push(t0.elapsed().as_secs_f64() / PINGS as f64 * 1e6);
        });
    }
    median(runs)
}

fn main() {
    let (mut a, mut b) = pair();
    println!("tcp transport, 2 ranks on 127.0.0.1, kernel-default socket buffers");
    println!("{:<44} {:>10}", "measure", "median");
    println!("{:<44} {:>7.0} MB/s", format!("stream of {FRAMES} x 1 MiB frames"), bandwidth(&mut a, &mut b));
    println!("{:<44} {:>7.1} us", "round trip, 8-byte frames, busy polling", round_trip(&mut a, &mut b, true));
    println!("{:<44} {:>7.1} us", "round trip, 8-byte frames, epoll wait", round_trip(&mut a, &mut b, false));
    a.shutdown(Duration::from_secs(5)).expect("shutdown");
    b.shutdown(Duration::from_secs(5)).expect("shutdown");
}
