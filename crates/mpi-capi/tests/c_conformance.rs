//! The conformance suite as C programs (tests/c), built with wanmpi's mpicc
//! and run under wanmpi's mpirun over every transport (the default auto,
//! which is shared memory on one host; tcp; sctp with its default 10 streams
//! and with 1 stream; wamp; adaptive).

mod common;

use common::*;

const TRANSPORTS: &[(&str, &str)] = &[("auto", "10"), ("tcp", "10"), ("sctp", "10"), ("sctp", "1"), ("wamp", "10"), ("adaptive", "10")];

fn suite(name: &str, ranks: &[usize]) {
    let exe = compile(&prefix().join("bin/mpicc"), name, "mpicc");
    for (transport, streams) in TRANSPORTS {
        let env = [("WANMPI_TRANSPORT", transport.to_string()), ("WANMPI_SCTP_STREAMS", streams.to_string())];
        for &n in ranks {
            let out = run(n, &exe, &[], &env);
            assert_pass(&out, name, n);
            eprintln!("{name}: {n} ranks over {transport} ({streams} streams): passed");
        }
    }
}

#[test]
fn point_to_point_semantics() {
    suite("p2p", &[2]);
}

/// tcp with every connection sealed, as between hosts (forced here, on one
/// host, by WANMPI_TCP_ENCRYPT=1): the same results, byte for byte.
#[test]
fn point_to_point_over_sealed_tcp() {
    let exe = compile(&prefix().join("bin/mpicc"), "p2p", "mpicc-sealed");
    let env = [("WANMPI_TRANSPORT", "tcp".to_string()), ("WANMPI_TCP_ENCRYPT", "1".to_string())];
    for n in [2, 3] {
        assert_pass(&run(n, &exe, &[], &env), "p2p", n);
        eprintln!("p2p: {n} ranks over sealed tcp: passed");
    }
}

#[test]
fn requests_probes_and_cancel() {
    suite("requests", &[2]);
}

#[test]
fn collectives_against_reference() {
    suite("coll", &[1, 2, 3, 4, 7, 8]);
}

#[test]
fn communicators_datatypes_and_errors() {
    suite("comm_err", &[1, 2, 3, 4]);
}

#[test]
fn nonblocking_and_persistent_collectives() {
    suite("nbc", &[1, 2, 3, 4, 7]);
}

#[test]
fn neighbourhood_collectives() {
    suite("neighbor", &[1, 2, 4, 6]);
}

#[test]
fn inter_communicator_collectives() {
    suite("intercoll", &[2, 3, 5]);
}

#[test]
fn nonblocking_communicator_duplication() {
    suite("idup", &[1, 2, 3, 4]);
}

#[test]
fn user_reductions_on_derived_datatypes() {
    suite("userop", &[1, 2, 3, 4, 7]);
}

#[test]
fn mpi4_calls() {
    suite("mpi4", &[1, 2, 3]);
}

#[test]
fn large_count_calls() {
    suite("large_count", &[1, 2, 3]);
}

#[test]
fn attribute_callbacks() {
    suite("attr", &[1, 2]);
}

#[test]
fn one_sided_communication() {
    suite("rma", &[1, 2, 3, 4]);
}

#[test]
fn mpi_io() {
    suite("io", &[1, 2, 4]);
}

#[test]
fn examples_run() {
    let cc = prefix().join("bin/mpicc");
    let dir = out_dir("examples");
    for name in ["hello", "ring", "pingpong"] {
        let exe = dir.join(name);
        let src = root().join("examples/c").join(format!("{name}.c"));
        let st = std::process::Command::new(&cc).args(["-O2", "-o"]).arg(&exe).arg(&src).status().expect("mpicc");
        assert!(st.success(), "mpicc {name}.c");
    }
    let out = run(4, &dir.join("hello"), &[], &[]);
    assert!(out.status.success() && String::from_utf8_lossy(&out.stdout).contains("sum of ranks = 6 (expected 6)"));
    let out = run(3, &dir.join("ring"), &["4"], &[]);
    assert!(out.status.success() && String::from_utf8_lossy(&out.stdout).contains("token = 12 (expected 12)"));
    let out = run(2, &dir.join("pingpong"), &["65536", "10"], &[]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && text.lines().any(|l| l.trim_start().starts_with("65536 ")), "pingpong table:\n{text}");
}

#[test]
fn mpicc_show_prints_the_command() {
    let out = std::process::Command::new(prefix().join("bin/mpicc")).args(["-show", "-O2", "x.c"]).output().expect("mpicc -show");
    let s = String::from_utf8_lossy(&out.stdout);
    let inc = prefix().join("include");
    assert!(s.contains(&format!("-I{}", inc.display())) && s.contains("-O2 x.c") && s.contains("-lmpi") && s.contains("-Wl,-rpath,"), "{s}");
    let out = std::process::Command::new(prefix().join("bin/mpicc")).args(["--showme", "-c", "x.c"]).output().expect("mpicc --showme");
    assert!(!String::from_utf8_lossy(&out.stdout).contains("-lmpi"), "no link flags when only compiling");
}
