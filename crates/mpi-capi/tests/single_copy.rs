//! Single copy between ranks of one host (process_vm_readv, `engine/single_copy.rs`,
//! `runtime/src/local_read.rs`): tests/c/single_copy.c (contiguous and vector
//! types above the threshold, synchronous sends, MPI_ANY_SOURCE, probes,
//! matched probes, truncation, cancel) over shared memory with single copy
//! on, switched off (WANMPI_SHM_CMA=0), and refused by the kernel (a seccomp
//! filter in every rank): the same bytes every time, and the counters show
//! which way the messages went.

mod common;

use common::*;

/// Sums "single copy: S sent, R read, F refused or failed" over the ranks.
fn single_copy_counts(stderr: &str) -> (u64, u64, u64) {
    let mut sum = (0, 0, 0);
    for line in stderr.lines().filter_map(|l| l.trim().strip_prefix("single copy: ")) {
        let n: Vec<u64> = line.split(|c: char| !c.is_ascii_digit()).filter_map(|w| w.parse().ok()).collect();
        assert_eq!(n.len(), 3, "counters line {line:?}");
        sum = (sum.0 + n[0], sum.1 + n[1], sum.2 + n[2]);
    }
    sum
}

/// The threshold the cases use: every long message of the program goes by
/// single copy (the default, 4 MiB, leaves only its largest).
const FROM: &str = "16384";

/// `tag`: a build directory of the test's own (tests run at once, and a
/// program rebuilt under another's feet fails).
fn run_case(tag: &str, n: usize, args: &[&str], extra: &[(&str, String)]) -> (u64, u64, u64) {
    let exe = compile(&prefix().join("bin/mpicc"), "single_copy", tag);
    let mut env = vec![("WANMPI_TRANSPORT", "auto".to_string()), ("WANMPI_STATS", "1".to_string())];
    env.extend(extra.iter().cloned());
    let out = run(n, &exe, args, &env);
    assert_pass(&out, "single_copy", n);
    single_copy_counts(&String::from_utf8_lossy(&out.stderr))
}

#[test]
fn long_messages_are_read_once_with_every_datatype_and_matching_rule() {
    for n in [2, 3] {
        let (sent, read, refused) = run_case("mpicc-cma-on", n, &[], &[("WANMPI_SHM_CMA_FROM", FROM.into())]);
        eprintln!("{n} ranks: single copy {sent} sent, {read} read, {refused} refused");
        assert!(read > 0 && read == sent, "every offered message read ({sent} sent, {read} read)");
        assert_eq!(refused, 0);
    }
    // By default single copy is on only where the host has more ranks than
    // CPUs, from 1 MiB (the 1 MiB and 4 MiB messages of the program).
    let cpus = std::thread::available_parallelism().map_or(1, |c| c.get());
    for n in [2, 3] {
        let (sent, read, _) = run_case("mpicc-cma-on", n, &[], &[]);
        eprintln!("{n} ranks on {cpus} CPUs, defaults: single copy {sent} sent, {read} read");
        if n > cpus {
            assert!(read > 0 && read == sent && read < 20, "{sent} sent, {read} read at the default threshold");
        } else {
            assert_eq!((sent, read), (0, 0), "a core per rank: the ring by default");
        }
    }
}

#[test]
fn switched_off_the_same_messages_go_through_the_ring() {
    let (sent, read, refused) = run_case("mpicc-cma-off", 3, &[], &[("WANMPI_SHM_CMA", "0".to_string()), ("WANMPI_SHM_CMA_FROM", FROM.into())]);
    assert_eq!((sent, read, refused), (0, 0, 0));
}

#[test]
fn refused_by_the_kernel_the_messages_fall_back_and_arrive_whole() {
    let (sent, read, refused) = run_case("mpicc-cma-refused", 3, &["refuse"], &[("WANMPI_SHM_CMA_FROM", FROM.into())]);
    eprintln!("refused: single copy {sent} sent, {read} read, {refused} refused");
    assert_eq!(read, 0);
    // Each receiver is refused at most once per sender, then both sides
    // stop trying (offers already in flight are answered without a read).
    assert!(refused > 0 && refused <= 6, "{sent} sent, {refused} refused");
}

/// The point-to-point and request conformance programs (tests/c/p2p.c,
/// requests.c) with single copy from 16 KiB: their long messages (p2p's
/// rendezvous and truncation cases) are read, and every answer holds.
#[test]
fn point_to_point_conformance_with_single_copy_from_16_kib() {
    for name in ["p2p", "requests"] {
        let exe = compile(&prefix().join("bin/mpicc"), name, "mpicc-cma-p2p");
        let env = [("WANMPI_TRANSPORT", "auto".to_string()), ("WANMPI_STATS", "1".to_string()), ("WANMPI_SHM_CMA_FROM", FROM.to_string())];
        for n in [2, 3] {
            let out = run(n, &exe, &[], &env);
            assert_pass(&out, name, n);
            let (sent, read, refused) = single_copy_counts(&String::from_utf8_lossy(&out.stderr));
            eprintln!("{name} on {n} ranks: single copy {sent} sent, {read} read, {refused} refused");
            assert_eq!((sent, refused), (read, 0));
        }
    }
}
