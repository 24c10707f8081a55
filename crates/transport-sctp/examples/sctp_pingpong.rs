//! Ping-pong micro-benchmark of the sctp transport on loopback, two ranks as
//! threads of this process, next to a plain TCP (NODELAY) ping-pong as a
//! reference. Prints a table; not a test.
//!
//!   cargo run --release -p wanmpi-transport-sctp --example sctp_pingpong
//!
//! Options come from WANMPI_SCTP_* (e.g. WANMPI_SCTP_CHECKSUM=offload,
//! WANMPI_SCTP_PATH_MTU=9000, WANMPI_SCTP_STREAMS=1).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};
use wanmpi_bootstrap::local_kv_world;
use wanmpi_transport::{Incoming, SendStatus, Transport};
use wanmpi_transport_sctp::{SctpOptions, SctpTransport};

const SIZES: &[usize] = &[1, 64, 1024, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20];

fn reps(size: usize) -> usize {
    (2000 / (1 + size / 4096)).clamp(10, 2000)
}

fn send_msg(t: &mut SctpTransport, peer: u32, msg: &[u8]) {
    let max = t.caps().max_frame;
    for piece in msg.chunks(max) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while t.try_send(peer, 0, &[piece]).expect("send") == SendStatus::WouldBlock {
            assert!(Instant::now() < deadline, "blocked for 30 s");
            t.wait(Duration::from_millis(1)).expect("wait");
        }
    }
}

fn recv_msg(t: &mut SctpTransport, len: usize) {
    let mut got = 0;
    let deadline = Instant::now() + Duration::from_secs(30);
    while got < len {
        assert!(Instant::now() < deadline, "message did not arrive in 30 s");
        t.poll_recv(&mut |ev| match ev {
            Incoming::Frame { bytes, .. } => got += bytes.len(),
            Incoming::PeerLost { peer, reason } => panic!("peer {peer} lost: {reason}"),
        })
        .expect("poll_recv");
        if got < len {
            t.wait(Duration::from_millis(1)).expect("wait");
        }
    }
}

/// Median one-way time per size, for sctp.
fn sctp_run(opts: SctpOptions) -> (Vec<Duration>, String) {
    let hs: Vec<_> = local_kv_world(2)
        .into_iter()
        .map(|mut kv| {
            let opts = opts.clone();
            std::thread::spawn(move || {
                let mut t = SctpTransport::connect(&mut kv, [9; 32], opts).expect("connect");
                let me = t.rank();
                let mut medians = vec![];
                for &size in SIZES {
                    let msg = vec![0xa5u8; size];
                    let mut times = vec![];
                    for _ in 0..reps(size) {
                        let start = Instant::now();
                        if me == 0 {
                            send_msg(&mut t, 1, &msg);
                            recv_msg(&mut t, size);
                        } else {
                            recv_msg(&mut t, size);
                            send_msg(&mut t, 0, &msg);
                        }
                        times.push(start.elapsed() / 2);
                    }
                    times.sort();
                    medians.push(times[times.len() / 2]);
                }
                let summary = t.counters().to_string();
                while t.flush().unwrap_or(false) {
                    let _ = t.wait(Duration::from_millis(1));
                }
                (medians, summary)
            })
        })
        .collect();
    let mut res: Vec<_> = hs.into_iter().map(|h| h.join().expect("rank")).collect();
    res.swap_remove(0)
}

fn tcp_run() -> Vec<Duration> {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = l.local_addr().expect("addr");
    let echo = std::thread::spawn(move || {
        let (mut s, _) = l.accept().expect("accept");
        s.set_nodelay(true).expect("nodelay");
        let mut buf = vec![0u8; 4 << 20];
        for &size in SIZES {
            for _ in 0..reps(size) {
                s.read_exact(&mut buf[..size]).expect("read");
                s.write_all(&buf[..size]).expect("write");
            }
        }
    });
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_nodelay(true).expect("nodelay");
    let mut medians = vec![];
    for &size in SIZES {
        let msg = vec![0x5au8; size];
        let mut back = vec![0u8; size];
        let mut times = vec![];
        for _ in 0..reps(size) {
            let start = Instant::now();
            s.write_all(&msg).expect("write");
            s.read_exact(&mut back).expect("read");
            times.push(start.elapsed() / 2);
        }
        times.sort();
        medians.push(times[times.len() / 2]);
    }
    echo.join().expect("echo");
    medians
}

fn main() {
    let opts = match SctpOptions::from_env() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    println!(
        "sctp ping-pong on loopback: streams {}, checksum {:?}, path MTU {}, cc {:?} (median one-way time)",
        opts.streams, opts.checksum, opts.path_mtu, opts.cc
    );
    let (sctp, summary) = sctp_run(opts);
    let tcp = tcp_run();
    println!("{:>9} | {:>12} {:>10} | {:>12} {:>10} | {:>6}", "bytes", "sctp us", "sctp MB/s", "tcp us", "tcp MB/s", "ratio");
    for (i, &size) in SIZES.iter().enumerate() {
        let (a, b) = (sctp[i].as_secs_f64(), tcp[i].as_secs_f64());
        println!(
            "{:>9} | {:>12.1} {:>10.1} | {:>12.1} {:>10.1} | {:>6.2}",
            size,
            a * 1e6,
            size as f64 / a / 1e6,
            b * 1e6,
            size as f64 / b / 1e6,
            a / b
        );
    }
    println!("{summary}");
}
