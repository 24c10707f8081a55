//! The farm's C API end to end: install libmpi (scripts/install-c) and
//! libwanmpi_farm (crates/farm-capi/install) into target/wanmpi, compile
//! examples/c/farm.c with target/wanmpi/bin/mpicc, run it under mpirun.
//! The example checks every result against its own checksum and exits 1
//! unless each task's result arrived exactly once. A few seconds of runs.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("workspace root")
}

/// Installs both libraries once and compiles the example.
fn farm_exe() -> &'static Path {
    static EXE: OnceLock<PathBuf> = OnceLock::new();
    EXE.get_or_init(|| {
        let root = root();
        let prefix = root.join("target/wanmpi");
        for script in ["scripts/install-c", "crates/farm-capi/install"] {
            let out = Command::new(root.join(script)).arg(&prefix).output().expect("run install script");
            assert!(out.status.success(), "{script} failed:\n{}", String::from_utf8_lossy(&out.stderr));
        }
        let dir = root.join("target/ctest/farm-capi");
        std::fs::create_dir_all(&dir).expect("create target/ctest/farm-capi");
        let exe = dir.join("farm");
        let out = Command::new(prefix.join("bin/mpicc"))
            .args(["-std=c99", "-O1", "-Wall", "-Wextra", "-Werror", "-o"])
            .arg(&exe)
            .arg(root.join("examples/c/farm.c"))
            .arg("-lwanmpi_farm")
            .output()
            .expect("run mpicc");
        assert!(out.status.success(), "mpicc farm.c failed:\n{}", String::from_utf8_lossy(&out.stderr));
        exe
    })
}

fn run(n: usize, transport: &str, args: &[&str]) -> Output {
    Command::new(root().join("target/release/mpirun"))
        .args(["-n", &n.to_string(), "--transport", transport, "--timeout", "60"])
        .arg(farm_exe())
        .args(args)
        .output()
        .expect("run mpirun")
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

#[test]
fn c_farm_every_result_once_small_and_long_tasks() {
    // 12 KiB tasks with k = 1, then 128 KiB (rendezvous) tasks with k = 10.
    for (args, n) in [(["300", "12288", "2", "1"], 300), (["120", "131072", "2", "10"], 120)] {
        let o = run(4, "tcp", &args);
        let t = text(&o);
        assert!(o.status.success(), "farm {args:?} failed:\n{t}");
        assert!(t.contains(&format!("results: {n}/{n} ok, 0 missing, 0 duplicate, 0 mismatched")), "{t}");
        assert!(t.contains("farm time: measured"), "no summary from the Rust farm:\n{t}");
    }
}

#[test]
fn c_farm_over_sctp() {
    let o = run(3, "sctp", &["60", "20000", "1"]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(t.contains("results: 60/60 ok, 0 missing, 0 duplicate, 0 mismatched"), "{t}");
}

#[test]
fn c_farm_needs_two_processes_and_says_so() {
    let o = run(1, "tcp", &["10"]);
    let t = text(&o);
    assert!(!o.status.success(), "a one-process farm should fail:\n{t}");
    assert!(t.contains("wanmpi_farm_run: error 12") && t.contains("at least 2 processes"), "{t}");
}
