//! Runs conformance programs under the real `mpirun`, once per transport.

use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// A transport configuration to run the suite over.
pub struct Transport {
    pub label: &'static str,
    pub name: &'static str,
    pub env: &'static [(&'static str, &'static str)],
    /// Place the ranks on pretend hosts and sites (`mixed_placement`), so
    /// that one job runs over shared memory, tcp and the WAN transport.
    pub mixed: bool,
}

/// Host and site maps for `n` ranks on this machine: rank 0 alone on host
/// 0, then two ranks per host; hosts 0 and 1 form site 0, the others site 1.
/// From 3 ranks on, shared memory joins ranks 1 and 2; from 4, rank 3 is in
/// another site.
pub fn mixed_placement(n: usize) -> Vec<(String, String)> {
    let host: Vec<usize> = (0..n).map(|r| r.div_ceil(2)).collect();
    let site: Vec<usize> = host.iter().map(|&h| usize::from(h >= 2)).collect();
    let list = |v: &[usize]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(",");
    vec![("WANMPI_HOST_MAP".into(), list(&host)), ("WANMPI_SITE_MAP".into(), list(&site))]
}

/// Every transport this build has, in the configurations the suite covers
/// (SCTP with its default 10 streams and with 1 stream, wamp and adaptive with
/// their defaults, shared memory alone, and the default transport per peer
/// over a mixed placement: shm, tcp and wamp in one job).
pub fn transports() -> Vec<Transport> {
    let mut v = vec![
        Transport { label: "tcp", name: "tcp", env: &[], mixed: false },
        Transport { label: "shm", name: "shm", env: &[], mixed: false },
        Transport { label: "mixed", name: "auto", env: &[("WANMPI_WAN_TRANSPORT", "wamp")], mixed: true },
    ];
    if wanmpi_runtime::KNOWN_TRANSPORTS.contains(&"sctp") {
        v.push(Transport { label: "sctp-10", name: "sctp", env: &[("WANMPI_SCTP_STREAMS", "10")], mixed: false });
        v.push(Transport { label: "sctp-1", name: "sctp", env: &[("WANMPI_SCTP_STREAMS", "1")], mixed: false });
    }
    if wanmpi_runtime::KNOWN_TRANSPORTS.contains(&"wamp") {
        v.push(Transport { label: "wamp", name: "wamp", env: &[], mixed: false });
    }
    if wanmpi_runtime::KNOWN_TRANSPORTS.contains(&"adaptive") {
        v.push(Transport { label: "adaptive", name: "adaptive", env: &[], mixed: false });
    }
    if let Ok(only) = std::env::var("WANMPI_TEST_TRANSPORTS") {
        let keep: Vec<&str> = only.split(',').collect();
        v.retain(|t| keep.contains(&t.label));
    }
    v
}

/// target/<profile>, where cargo put mpirun and the programs.
pub fn bin_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    exe.parent().and_then(|d| d.parent()).expect("target/<profile>/deps/..").to_path_buf()
}

pub fn mpirun() -> PathBuf {
    let p = bin_dir().join("mpirun");
    assert!(p.exists(), "{} is missing: build it first (scripts/build, or cargo build --release -p wanmpi-launcher)", p.display());
    p
}

/// Runs `prog args` on `n` ranks over transport `t` with extra env vars.
pub fn run(prog: &str, n: usize, t: &Transport, args: &[&str], env: &[(&str, &str)]) -> (Output, Duration) {
    let mut cmd = Command::new(mpirun());
    cmd.args(["-n", &n.to_string(), "--transport", t.name, "--timeout", "180"]);
    for (k, v) in t.env.iter().chain(env.iter()) {
        cmd.args(["-x", &format!("{k}={v}")]);
    }
    if t.mixed {
        for (k, v) in mixed_placement(n) {
            cmd.args(["-x", &format!("{k}={v}")]);
        }
    }
    cmd.arg(prog).args(args);
    let start = Instant::now();
    let out = cmd.output().expect("mpirun starts");
    (out, start.elapsed())
}

/// Runs a conformance program and asserts it passed.
// Shared by both test binaries; robustness.rs does not use this one.
#[allow(dead_code)]
pub fn pass(prog: &str, name: &str, ranks: &[usize], env: &[(&str, &str)]) {
    for t in transports() {
        for &n in ranks {
            let (out, took) = run(prog, n, &t, &[], env);
            let stdout = String::from_utf8_lossy(&out.stdout);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(
                out.status.success() && stdout.contains(&format!("PASS {name} on {n} ranks")),
                "{name} on {n} ranks over {} (env {env:?}) failed with {:?} after {took:?}\nstdout:\n{stdout}\nstderr:\n{stderr}",
                t.label,
                out.status
            );
            eprintln!("{name}: {n} ranks over {}: passed in {:.2}s", t.label, took.as_secs_f64());
        }
    }
}
