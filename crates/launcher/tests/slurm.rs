//! Under Slurm, on a private one-node cluster of this machine
//! (tests/slurm_site: Debian's slurm-wlm as root, no munge): mpirun inside
//! an allocation (`salloc -n 3 mpirun PROG`, no hosts given) takes the
//! allocation's node and slots and starts every rank as a job step with
//! srun.
//!
//! Needs root and slurm-wlm; says why and skips without them.

mod common;
mod slurm_site;
use common::*;
use slurm_site::*;
use std::time::Instant;

#[test]
fn mpirun_in_an_allocation_starts_ranks_with_srun() {
    if let Some(why) = skip_reason() {
        eprintln!("SKIPPED mpirun_in_an_allocation_starts_ranks_with_srun: {why}");
        return;
    }
    let cluster = match Cluster::start("alloc") {
        Ok(c) => c,
        Err(why) => {
            eprintln!("SKIPPED mpirun_in_an_allocation_starts_ranks_with_srun: the Slurm daemons did not start: {why}");
            return;
        }
    };
    let mut c = cluster.command("salloc");
    c.args(["-n", "3", "--time=1", MPIRUN, PROBE, "exchange", "env:SLURM_STEP_ID", "env:SLURM_JOB_ID", "print:node {rank}", "finalize"]);
    let started = Instant::now();
    let r = finish(c.spawn().expect("salloc"), started);
    assert_eq!(r.code, Some(0), "stdout: {}\nstderr: {}\n{}", r.stdout, r.stderr, cluster.logs());
    assert_eq!(r.stdout.matches("got v0,v1,v2").count(), 3, "{}", r.stdout);
    // Each rank is a step of its own in the allocation.
    let mut steps: Vec<&str> = r.stdout.lines().filter_map(|l| l.strip_prefix("SLURM_STEP_ID=")).collect();
    steps.sort_unstable();
    steps.dedup();
    assert_eq!(steps.len(), 3, "ranks not started as three steps:\n{}", r.stdout);
    eprintln!("salloc + mpirun took {:?}", r.took);
    drop(cluster);
}
