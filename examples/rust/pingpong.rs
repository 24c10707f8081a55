//! MPBench-style ping-pong between ranks 0 and 1: round-trip latency and
//! bandwidth for message sizes from 1 B to 4 MiB, printed as a table.
//!
//! Usage: pingpong [--min BYTES] [--max BYTES] [--iters N] [--sizes a,b,c] [--csv]
//!
//! The CSV's last column is the longest single round trip (warm-up
//! included): across an outage, how long the job stood still.

use wanmpi::prelude::*;

struct Args {
    sizes: Vec<usize>,
    iters: usize,
    csv: bool,
}

fn parse() -> Args {
    let mut a = Args { sizes: vec![], iters: 0, csv: false };
    let (mut min, mut max) = (1usize, 4 << 20);
    let mut it = std::env::args().skip(1);
    while let Some(x) = it.next() {
        let mut num = || it.next().and_then(|v| v.parse::<usize>().ok()).unwrap_or(0);
        match x.as_str() {
            "--min" => min = num(),
            "--max" => max = num(),
            "--iters" => a.iters = num(),
            "--csv" => a.csv = true,
            "--sizes" => a.sizes = it.next().unwrap_or_default().split(',').filter_map(|s| s.parse().ok()).collect(),
            other => eprintln!("pingpong: ignoring unknown argument {other}"),
        }
    }
    if a.sizes.is_empty() {
        let mut s = min.max(1);
        while s <= max {
            a.sizes.push(s);
            s *= 4;
        }
    }
    a
}

fn main() -> wanmpi::Result<()> {
    let args = parse();
    let universe = initialize()?;
    let world = universe.world();
    let rank = world.rank();
    if world.size() < 2 {
        eprintln!("pingpong needs 2 ranks");
        return Ok(());
    }
    if rank == 0 && !args.csv {
        println!("{:>10} {:>8} {:>14} {:>14}", "bytes", "iters", "rtt_us", "MB/s");
    }
    if rank == 0 && args.csv {
        println!("bytes,iters,rtt_us,mb_per_s,max_rtt_us");
    }
    for &size in &args.sizes {
        let iters = if args.iters > 0 { args.iters } else { (200_000_000 / (size + 20_000)).clamp(5, 2000) };
        let mut buf = vec![0u8; size];
        let warmup = (iters / 10).max(2);
        world.barrier()?;
        let mut t0 = 0.0;
        let mut longest = 0.0f64;
        for i in 0..warmup + iters {
            if i == warmup {
                t0 = universe.wtime();
            }
            let started = universe.wtime();
            if rank == 0 {
                world.send(&buf, 1, 0)?;
                world.receive_into(&mut buf, 1, 0)?;
            } else if rank == 1 {
                world.receive_into(&mut buf, 0, 0)?;
                world.send(&buf, 0, 0)?;
            }
            longest = longest.max(universe.wtime() - started);
        }
        let rtt = (universe.wtime() - t0) / iters as f64;
        if rank == 0 {
            let mbs = 2.0 * size as f64 / rtt / 1e6;
            if args.csv {
                println!("{size},{iters},{:.3},{:.2},{:.0}", rtt * 1e6, mbs, longest * 1e6);
            } else {
                println!("{size:>10} {iters:>8} {:>14.2} {:>14.2}", rtt * 1e6, mbs);
            }
        }
    }
    Ok(())
}
