//! Resident memory per rank right after MPI_Init: every rank reads its
//! VmRSS, rank 0 prints the minimum, median and maximum.

use wanmpi::prelude::*;

fn rss_kib() -> i64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines().find(|l| l.starts_with("VmRSS:")).and_then(|l| l.split_whitespace().nth(1)).and_then(|v| v.parse().ok()).unwrap_or(-1)
}

fn main() -> wanmpi::Result<()> {
    let u = initialize()?;
    let world = u.world();
    let mine = [rss_kib()];
    let mut all = vec![0i64; world.size() as usize];
    world.gather_into(&mine, &mut all, 0)?;
    if world.rank() == 0 {
        all.sort();
        println!("ranks {} rss_kib min {} median {} max {}", world.size(), all[0], all[all.len() / 2], all[all.len() - 1]);
    }
    Ok(())
}
