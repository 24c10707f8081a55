//! Micro-benchmark of the shm transport (a benchmark, not a test): ping-pong
//! of 1-byte and 1 MiB frames and a stream of 1 MiB frames between two ranks
//! that are threads of this process, over real shared memory.
//!
//! Run: cargo run --release -p wanmpi-transport-shm --example shm_pingpong
//! Figures are medians of 5 runs. The receiver copies every frame out of the
//! ring (as the engine does into the user's buffer), so the bandwidth counts
//! both copies. "busy" polls `poll_recv` in a loop; "wait" sleeps in `wait`
//! whenever nothing arrived, so every message costs a doorbell ring.

use std::time::{Duration, Instant};
use wanmpi_transport_shm::{setup, Incoming, SendStatus, ShmOptions, ShmTransport, Transport};

const BIG: usize = 1 << 20;
const LIMIT: Duration = Duration::from_secs(120);

fn pair() -> (ShmTransport, ShmTransport) {
    let mut kvs = wanmpi_bootstrap::local_kv_world(2);
    let (mut kv1, mut kv0) = (kvs.pop().expect("rank 1"), kvs.pop().expect("rank 0"));
    let o = ShmOptions::from_env().expect("options");
    let h = std::thread::spawn(move || setup(&mut kv1, &[0, 1], &o).expect("rank 1"));
    let a = setup(&mut kv0, &[0, 1], &ShmOptions::from_env().expect("options")).expect("rank 0");
    (a, h.join().expect("rank 1"))
}

/// Sends one frame, waiting (bounded) while the ring is full.
fn send(t: &mut ShmTransport, peer: u32, bytes: &[u8], spin: bool) {
    let deadline = Instant::now() + LIMIT;
    while t.try_send(peer, 0, &[bytes]).expect("send") == SendStatus::WouldBlock {
        assert!(Instant::now() < deadline, "send stuck");
        if !spin {
            t.wait(Duration::from_millis(10)).expect("wait");
        }
    }
}

/// Receives `n` frames into `buf` (bounded); busy-polls when `spin`.
fn recv(t: &mut ShmTransport, n: usize, buf: &mut Vec<u8>, spin: bool) {
    let deadline = Instant::now() + LIMIT;
    let mut got = 0;
    while got < n {
        t.poll_recv(&mut |ev| match ev {
            Incoming::Frame { bytes, .. } => {
                buf.clear();
                buf.extend_from_slice(bytes);
                got += 1;
            }
            Incoming::PeerLost { peer, reason } => panic!("lost {peer}: {reason}"),
        })
        .expect("poll");
        if got < n {
            assert!(Instant::now() < deadline, "receive stuck");
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

/// Median seconds per round trip of `len`-byte frames.
fn round_trip(a: &mut ShmTransport, b: &mut ShmTransport, len: usize, iters: usize, spin: bool) -> f64 {
    let frame = vec![0x5Au8; len];
    let mut runs = vec![];
    for _ in 0..5 {
        std::thread::scope(|s| {
            s.spawn(|| {
                let mut buf = Vec::with_capacity(len);
                for _ in 0..iters {
                    recv(b, 1, &mut buf, spin);
                    send(b, 0, &buf, spin);
                }
            });
            let mut buf = Vec::with_capacity(len);
            let t0 = Instant::now();
            for _ in 0..iters {
                send(a, 1, &frame, spin);
                recv(a, 1, &mut buf, spin);
            }
            runs.push(t0.elapsed().as_secs_f64() / iters as f64);
        });
    }
    median(runs)
}

/// Median MB/s of a one-way stream of 1 MiB frames, ended by an ack.
fn stream(a: &mut ShmTransport, b: &mut ShmTransport, frames: usize, spin: bool) -> f64 {
    let frame = vec![0xABu8; BIG];
    let mut runs = vec![];
    for _ in 0..5 {
        std::thread::scope(|s| {
            s.spawn(|| {
                let mut buf = Vec::with_capacity(BIG);
                recv(b, frames, &mut buf, spin);
                send(b, 0, b"ack", spin);
            });
            let t0 = Instant::now();
            for _ in 0..frames {
                send(a, 1, &frame, spin);
            }
            recv(a, 1, &mut Vec::new(), spin);
            runs.push((frames * BIG) as f64 / t0.elapsed().as_secs_f64() / 1e6);
        });
    }
    median(runs)
}

fn main() {
    let (mut a, mut b) = pair();
    let ring = ShmOptions::from_env().expect("options").ring_for(2);
    println!("shm transport, 2 ranks as threads, ring {} KiB per direction", ring >> 10);
    println!("{:<48} {:>12}", "measure", "median");
    for spin in [true, false] {
        let how = if spin { "busy" } else { "wait" };
        let rt = round_trip(&mut a, &mut b, 1, 20_000, spin);
        println!("{:<48} {:>9.2} us", format!("1-byte ping-pong, one way ({how})"), rt / 2.0 * 1e6);
        let rt = round_trip(&mut a, &mut b, BIG, 200, spin);
        println!("{:<48} {:>9.1} us", format!("1 MiB ping-pong, one way ({how})"), rt / 2.0 * 1e6);
        println!("{:<48} {:>9.0} MB/s", format!("1 MiB ping-pong, bandwidth ({how})"), BIG as f64 / (rt / 2.0) / 1e6);
        println!("{:<48} {:>9.0} MB/s", format!("stream of 1 MiB frames ({how})"), stream(&mut a, &mut b, 1000, spin));
    }
    a.shutdown(Duration::from_secs(5)).expect("shutdown");
    b.shutdown(Duration::from_secs(5)).expect("shutdown");
}
