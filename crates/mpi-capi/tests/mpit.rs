//! Issue 30, part 4: the tool information interface (MPI_T) from C.
//! `tests/c/mpit.c` (this crate) reads a bytes-sent counter that grows with
//! traffic, per-peer and per-transport counters, the unexpected queue's
//! length, lowers the eager limit through its control variable and sees
//! the next 4 KiB message go by rendezvous, counts collective traffic
//! across sites (with a site map) or none (one site), and checks the error
//! codes. It
//! runs over each transport (the per-transport counters of the one that
//! carries the frames), and, compiled against MPICH's mpi.h, on our
//! library (MPICH's MPI_T handle types and constants).

mod common;

use common::*;

#[test]
fn mpit_over_every_transport() {
    let exe = compile_own(&prefix().join("bin/mpicc"), "mpit", "mpicc");
    // (WANMPI_TRANSPORT, the transport that carries frames between two ranks of one host)
    for (transport, carrier) in [("tcp", "tcp"), ("sctp", "sctp"), ("wamp", "wamp"), ("auto", "shm")] {
        // No WAN window: a loaded machine's loopback round trip can pass
        // the 2 ms that make a peer far, and long messages would then go
        // against a window instead of by rendezvous.
        let env = [("WANMPI_TRANSPORT", transport.to_string()), ("WANMPI_WAN_PEERS", "none".to_string())];
        let out = run(2, &exe, &[carrier], &env);
        assert_pass(&out, "mpit", 2);
        eprintln!("mpit: 2 ranks over {transport}: passed");
    }
}

/// Each rank a site of its own (the site map mpirun would give from a
/// hostfile's `site=` fields): an allreduce's messages count as crossing
/// sites (`wanmpi_coll_msgs_across_sites`, `wanmpi_bytes_sent_across_sites`);
/// the runs above, on one site, check that they stay at zero.
#[test]
fn mpit_counts_collective_traffic_across_sites() {
    // A binary of its own: the tests run at once, and one compiling over
    // the file another runs fails that run.
    let exe = compile_own(&prefix().join("bin/mpicc"), "mpit", "mpicc-sites");
    let env = [("WANMPI_TRANSPORT", "tcp".to_string()), ("WANMPI_WAN_PEERS", "none".to_string()), ("WANMPI_SITE_MAP", "0,1".to_string())];
    assert_pass(&run(2, &exe, &["tcp", "sites"], &env), "mpit", 2);
}

#[test]
fn mpit_compiled_with_mpich_runs_on_our_library() {
    let exe = compile_own(std::path::Path::new("mpicc.mpich"), "mpit", "mpich");
    let env = [
        ("LD_LIBRARY_PATH", prefix().join("lib").display().to_string()),
        ("WANMPI_TRANSPORT", "tcp".to_string()),
        ("WANMPI_WAN_PEERS", "none".to_string()),
    ];
    assert_pass(&run(2, &exe, &["tcp"], &env), "mpit", 2);
}
