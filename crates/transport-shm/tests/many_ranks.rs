//! Many ranks on one host over the default transport (shared memory): 128
//! ranks oversubscribed on however few cores run hello, an allreduce and a
//! 1 MiB message around a ring (longer than the largest frame of a host
//! this crowded, so the engine cuts it), every byte checked, and the
//! shared memory they hold stays far below 1 GiB. Before issue 24 the
//! rings alone would have taken 128 x 127 x 4 MiB = 64 GB. Prints the
//! memory figures. `WANMPI_SHM_TEST_RANKS` picks another count.

mod common;

use common::job::{command, memory_line};
use std::time::Instant;

#[test]
fn ranks_by_the_hundred_run_hello_and_allreduce_in_little_memory() {
    let n: usize = std::env::var("WANMPI_SHM_TEST_RANKS").ok().and_then(|v| v.parse().ok()).unwrap_or(128);
    let start = Instant::now();
    let out = command(n, 0.0).output().expect("run mpirun");
    let took = start.elapsed();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{n} ranks failed ({:?}):\n{stdout}\n{}", out.status, String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains(&format!("shm_job ok: {n} ranks")), "{stdout}");
    let (ranks, pss, shmem, memfd) = memory_line(&stdout).expect("a memory line");
    eprintln!(
        "{ranks} ranks: {:.1} s; memory summed over ranks: Pss {} MiB, of it shared {} MiB; inbound memfds hold {} MiB",
        took.as_secs_f64(),
        pss >> 10,
        shmem >> 10,
        memfd >> 10
    );
    assert_eq!(ranks, n as u64);
    // The packed headers (n x n x 512 bytes: 8 MiB at 128) and what the
    // traffic touched: a 1 MiB message fills each neighbour's ring once.
    assert!(memfd > 0 && memfd < 256 << 10, "{memfd} KiB of shared memory");
}
