//! The farm's C API end to end: install libmpi (scripts/install-c) and
//! libwanmpi_farm (crates/farm-capi/install) into target/wanmpi, compile
//! examples/c/farm.c with target/wanmpi/bin/mpicc, run it under mpirun,
//! without and with the manager split into scheduler and writer (its fifth
//! argument). It checks every result against its own checksum (on the
//! writer rank with the split) and exits 1 unless each task's result arrived
//! exactly once. A few seconds of runs.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Mutex, OnceLock};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("workspace root")
}

/// Installs both libraries once (tests run in parallel: one installs, the
/// others wait).
fn install() -> &'static Path {
    static PREFIX: OnceLock<PathBuf> = OnceLock::new();
    PREFIX.get_or_init(|| {
        let root = root();
        let prefix = root.join("target/wanmpi");
        for script in ["scripts/install-c", "crates/farm-capi/install"] {
            let out = Command::new(root.join(script)).arg(&prefix).output().expect("run install script");
            assert!(out.status.success(), "{script} failed:\n{}", String::from_utf8_lossy(&out.stderr));
        }
        prefix
    })
}

/// Compiles examples/c/NAME.c against the installed libraries.
fn compile(name: &str) -> PathBuf {
    let prefix = install();
    let dir = root().join("target/ctest/farm-capi");
    std::fs::create_dir_all(&dir).expect("create target/ctest/farm-capi");
    let exe = dir.join(name);
    let out = Command::new(prefix.join("bin/mpicc"))
        .args(["-std=c99", "-O1", "-Wall", "-Wextra", "-Werror", "-o"])
        .arg(&exe)
        .arg(root().join(format!("examples/c/{name}.c")))
        .arg("-lwanmpi_farm")
        .output()
        .expect("run mpicc");
    assert!(out.status.success(), "mpicc {name}.c failed:\n{}", String::from_utf8_lossy(&out.stderr));
    exe
}

fn farm_exe() -> &'static Path {
    static EXE: OnceLock<PathBuf> = OnceLock::new();
    EXE.get_or_init(|| compile("farm"))
}

/// One job at a time: the machine has 2 cores.
static JOBS: Mutex<()> = Mutex::new(());

fn run_exe(exe: &Path, n: usize, transport: &str, args: &[&str]) -> Output {
    let _one = JOBS.lock().unwrap_or_else(|p| p.into_inner());
    Command::new(root().join("target/release/mpirun"))
        .args(["-n", &n.to_string(), "--transport", transport, "--timeout", "60"])
        .arg(exe)
        .args(args)
        .output()
        .expect("run mpirun")
}

fn run(n: usize, transport: &str, args: &[&str]) -> Output {
    run_exe(farm_exe(), n, transport, args)
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

#[test]
fn c_farm_split_writer_every_result_once_k1_and_k10() {
    // Writer rank 1 with k = 1; writer rank 3 with k = 10 over rendezvous-size tasks.
    for (n, args, tasks) in [(4, ["200", "12288", "2", "1", "1"], 200), (5, ["120", "131072", "2", "10", "3"], 120)] {
        let o = run_exe(farm_exe(), n, "tcp", &args);
        let t = text(&o);
        assert!(o.status.success(), "farm (writer) {args:?} failed:\n{t}");
        assert!(t.contains(&format!("results: {tasks}/{tasks} ok, 0 missing, 0 duplicate, 0 mismatched")), "{t}");
        assert!(t.contains(&format!("farm (C, writer rank {}):", args[4])), "the check did not run on the writer:\n{t}");
        assert!(t.contains(&format!("farm: results processed on rank {} (writer)", args[4])), "no writer line in rank 0's summary:\n{t}");
    }
}

#[test]
fn c_farm_split_writer_discards_a_stragglers_duplicates() {
    // Rank 3 computes 30x slower: the end game copies its tasks; whatever
    // it computes anyway reaches the writer as a duplicate and is discarded.
    let o = run_exe(farm_exe(), 5, "tcp", &["80", "4096", "4", "1", "1", "3"]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(t.contains("results: 80/80 ok, 0 missing, 0 duplicate, 0 mismatched"), "{t}");
    let reissued = t.lines().find(|l| l.starts_with("farm: 80 tasks, ")).and_then(|l| l.split_whitespace().nth(3)?.parse::<u64>().ok());
    assert!(reissued.is_some_and(|r| r >= 1), "no task was re-issued:\n{t}");
}

#[test]
fn c_farm_split_writer_needs_three_processes() {
    let o = run_exe(farm_exe(), 2, "tcp", &["10", "64", "1", "1", "1"]);
    let t = text(&o);
    assert!(!o.status.success(), "a two-process split farm should fail:\n{t}");
    assert!(t.contains("wanmpi_farm_run: error 12") && t.contains("at least 3 processes"), "{t}");
}
