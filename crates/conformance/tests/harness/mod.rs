//! Runs conformance programs under the real `mpirun`, once per transport.

use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// A transport configuration to run the suite over.
pub struct Transport {
    pub label: &'static str,
    pub name: &'static str,
    pub env: &'static [(&'static str, &'static str)],
}

/// Every transport this build has, in the configurations the suite covers
/// (SCTP with its default 10 streams and with 1 stream, wamp and adaptive with
/// their defaults).
pub fn transports() -> Vec<Transport> {
    let mut v = vec![Transport { label: "tcp", name: "tcp", env: &[] }];
    if wanmpi_runtime::KNOWN_TRANSPORTS.contains(&"sctp") {
        v.push(Transport { label: "sctp-10", name: "sctp", env: &[("WANMPI_SCTP_STREAMS", "10")] });
        v.push(Transport { label: "sctp-1", name: "sctp", env: &[("WANMPI_SCTP_STREAMS", "1")] });
    }
    if wanmpi_runtime::KNOWN_TRANSPORTS.contains(&"wamp") {
        v.push(Transport { label: "wamp", name: "wamp", env: &[] });
    }
    if wanmpi_runtime::KNOWN_TRANSPORTS.contains(&"adaptive") {
        v.push(Transport { label: "adaptive", name: "adaptive", env: &[] });
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
