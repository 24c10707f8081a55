//! Many independent messages (issue 4's head-of-line benchmark): rank 0
//! sends a paced stream of messages (default 12 KiB) cycling over 10 tags;
//! rank 1 keeps receives posted with MPI_ANY_TAG on a communicator with
//! `mpi_assert_allow_overtaking`, and measures each message's delivery delay
//! (both ranks read the same machine clock: the emulated hosts share the
//! kernel). A lost packet delays only its own stream on sctp with several
//! streams; on tcp or one stream it delays everything behind it.
//!
//! Usage: manymsg [--count N] [--bytes B] [--gap-us U] [--depth D]

use std::time::{SystemTime, UNIX_EPOCH};
use wanmpi::prelude::*;
use wanmpi::{Info, ALLOW_OVERTAKING};

fn now_ns() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
}

fn arg(name: &str, default: usize) -> usize {
    let a: Vec<String> = std::env::args().collect();
    a.iter().position(|x| x == name).and_then(|i| a.get(i + 1)).and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn main() -> wanmpi::Result<()> {
    let (count, bytes, gap_us, depth) = (arg("--count", 500), arg("--bytes", 12288).max(8), arg("--gap-us", 2000), arg("--depth", 32));
    let u = initialize()?;
    let world = u.world();
    let mut info = Info::default();
    info.set(ALLOW_OVERTAKING, "true")?;
    let c = world.duplicate_with_info(&info)?;
    if c.size() < 2 {
        eprintln!("manymsg needs 2 ranks");
        return Ok(());
    }
    c.barrier()?;
    if c.rank() == 0 {
        let start = now_ns();
        let mut msg = vec![0u8; bytes];
        for i in 0..count {
            // Paced, so the delay measures the network, not a queue we build.
            let due = start + (i * gap_us) as u64 * 1000;
            while now_ns() < due {
                std::hint::spin_loop();
            }
            msg[..8].copy_from_slice(&now_ns().to_le_bytes());
            c.send(&msg, 1, (i % 10) as i32)?;
        }
    } else if c.rank() == 1 {
        let mut delays: Vec<f64> = Vec::with_capacity(count);
        let mut bufs = vec![vec![0u8; bytes]; depth.min(count).max(1)];
        let mut got = 0;
        // Keep up to `depth` wildcard receives posted; note when each completes.
        while got < count {
            let n = bufs.len().min(count - got);
            let mut done_at = vec![0u64; n];
            {
                let mut reqs = Vec::with_capacity(n);
                for b in bufs.iter_mut().take(n) {
                    reqs.push(c.immediate_receive_into(b, 0, ANY_TAG)?);
                }
                // `some` removes completed requests; `ids` mirrors which buffer each is.
                let mut ids: Vec<usize> = (0..n).collect();
                while !reqs.is_empty() {
                    let done = wanmpi::request::some(&mut reqs, true)?;
                    let t = now_ns();
                    let gone: Vec<usize> = done.iter().map(|(i, _)| *i).collect();
                    for &i in &gone {
                        done_at[ids[i]] = t;
                    }
                    let mut k = 0;
                    ids.retain(|_| {
                        let keep = !gone.contains(&k);
                        k += 1;
                        keep
                    });
                }
            }
            for (b, t) in bufs.iter().take(n).zip(&done_at) {
                let sent = u64::from_le_bytes(b[..8].try_into().unwrap_or([0; 8]));
                delays.push(t.saturating_sub(sent) as f64 / 1e6);
            }
            got += n;
        }
        delays.sort_by(|a, b| a.total_cmp(b));
        let pct = |p: f64| delays[((delays.len() - 1) as f64 * p) as usize];
        let mean = delays.iter().sum::<f64>() / delays.len() as f64;
        println!(
            "messages {count} bytes {bytes} delay_ms mean {mean:.2} p50 {:.2} p90 {:.2} p99 {:.2} max {:.2}",
            pct(0.5),
            pct(0.9),
            pct(0.99),
            pct(1.0)
        );
    }
    Ok(())
}
