//! Two bulk flows from rank 0 to rank 1 at the same time: MPI messages over
//! the job's transport, and a plain TCP connection opened by the program
//! itself (the host's congestion control, e.g. BBR). Rank 1 prints, per
//! second, the megabits each flow delivered, then the shares over the
//! measured window and how much of the link they used together. Run it
//! across a rate-capped emulated link to see whether the transport is fair
//! to TCP:
//!
//!   mpirun -n 2 --emulate delay=10ms,rate=50mbit,queue=50ms --emulate-mtu 1500 \
//!     --transport wamp target/release/share --seconds 20 --link-mbit 50
//!
//! Usage: share [--seconds S] [--skip S] [--msg BYTES] [--link-mbit M] [--tcp 0|1]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};
use wanmpi::prelude::*;

fn arg(name: &str, default: f64) -> f64 {
    let a: Vec<String> = std::env::args().collect();
    a.iter().position(|x| x == name).and_then(|i| a.get(i + 1)).and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// Bytes per whole second since `start`, for `n` seconds.
struct Buckets(Vec<AtomicU64>);

impl Buckets {
    fn new(n: usize) -> Arc<Buckets> {
        Arc::new(Buckets((0..n + 2).map(|_| AtomicU64::new(0)).collect()))
    }
    fn add(&self, start: Instant, bytes: usize) {
        let i = (start.elapsed().as_secs() as usize).min(self.0.len() - 1);
        self.0[i].fetch_add(bytes as u64, Relaxed);
    }
    fn mbit(&self, i: usize) -> f64 {
        self.0[i].load(Relaxed) as f64 * 8.0 / 1e6
    }
}

fn main() -> wanmpi::Result<()> {
    let (secs, skip, msg, link) =
        (arg("--seconds", 20.0) as usize, arg("--skip", 5.0) as usize, arg("--msg", 1048576.0) as usize, arg("--link-mbit", 0.0));
    let u = initialize()?;
    let world = u.world();
    if world.size() < 2 {
        eprintln!("share needs 2 ranks");
        return Ok(());
    }
    let addr = std::env::var("WANMPI_ADDR").unwrap_or_else(|_| "127.0.0.1".into());
    if world.rank() == 1 {
        let l = TcpListener::bind((addr.as_str(), 0)).expect("listen");
        let ep = l.local_addr().expect("local address").to_string();
        world.send(ep.as_bytes(), 0, 1)?;
        let (tcp_b, mpi_b) = (Buckets::new(secs), Buckets::new(secs));
        world.barrier()?;
        let start = Instant::now();
        let t = tcp_b.clone();
        let reader = std::thread::spawn(move || {
            let (mut s, _) = l.accept().expect("accept");
            let mut buf = vec![0u8; 1 << 16];
            while let Ok(n) = s.read(&mut buf) {
                if n == 0 {
                    break;
                }
                t.add(start, n);
            }
        });
        let mut buf = vec![0u8; msg];
        loop {
            let st = world.receive_into(&mut buf, 0, 0)?;
            let n = st.count::<u8>().unwrap_or(0);
            if n == 0 {
                break;
            }
            mpi_b.add(start, n);
        }
        reader.join().expect("tcp reader");
        println!("{:>4} {:>10} {:>10}", "s", "mpi_mbit", "tcp_mbit");
        let (mut m, mut t) = (0.0, 0.0);
        for i in 0..secs {
            println!("{i:>4} {:>10.2} {:>10.2}", mpi_b.mbit(i), tcp_b.mbit(i));
            if i >= skip {
                m += mpi_b.mbit(i);
                t += tcp_b.mbit(i);
            }
        }
        let n = secs.saturating_sub(skip).max(1) as f64;
        let (m, t) = (m / n, t / n);
        println!("mean over seconds {skip}..{secs}: mpi {m:.2} Mbit/s, tcp {t:.2} Mbit/s, mpi share {:.1} %", 100.0 * m / (m + t).max(1e-9));
        if link > 0.0 {
            println!("link used: {:.1} % of {link} Mbit/s", 100.0 * (m + t) / link);
        }
    } else if world.rank() == 0 {
        let (ep, _) = world.receive_vec::<u8>(1, 1)?;
        let ep = String::from_utf8_lossy(&ep).to_string();
        world.barrier()?;
        let end = Instant::now() + Duration::from_secs(secs as u64);
        let with_tcp = arg("--tcp", 1.0) != 0.0;
        let writer = std::thread::spawn(move || {
            let mut s = TcpStream::connect(&ep).expect("connect");
            if !with_tcp {
                return;
            }
            let chunk = vec![0x5au8; 1 << 16];
            while Instant::now() < end {
                if s.write_all(&chunk).is_err() {
                    break;
                }
            }
        });
        let data = vec![0x33u8; msg];
        while Instant::now() < end {
            // A few messages in flight, as a streaming MPI program keeps.
            let r: Vec<_> = (0..4).map(|_| world.immediate_send(&data, 1, 0)).collect::<wanmpi::Result<_>>()?;
            for x in r {
                x.wait()?;
            }
        }
        world.send(&[0u8; 0], 1, 0)?;
        writer.join().expect("tcp writer");
    }
    Ok(())
}
