//! Shared by the C tests: installs the C library once per test binary
//! (scripts/install-c into target/wanmpi), compiles C programs, and runs
//! them under wanmpi's mpirun with a bound on their run time.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("workspace root")
}

/// The install prefix, built once per test binary.
pub fn prefix() -> &'static Path {
    static PREFIX: OnceLock<PathBuf> = OnceLock::new();
    PREFIX.get_or_init(|| {
        let root = root();
        let prefix = root.join("target/wanmpi");
        let out = Command::new(root.join("scripts/install-c")).arg(&prefix).output().expect("run scripts/install-c");
        assert!(out.status.success(), "scripts/install-c failed:\n{}", String::from_utf8_lossy(&out.stderr));
        prefix
    })
}

pub fn out_dir(name: &str) -> PathBuf {
    let d = root().join("target/ctest").join(name);
    std::fs::create_dir_all(&d).expect("create target/ctest");
    d
}

/// Compiles `tests/c/<name>.c` with `compiler` (a path or a command name).
pub fn compile(compiler: &Path, name: &str, tag: &str) -> PathBuf {
    let exe = out_dir(tag).join(name);
    let src = root().join("tests/c").join(format!("{name}.c"));
    let out = Command::new(compiler)
        .args(["-std=c99", "-O1", "-Wall", "-Wextra", "-o"])
        .arg(&exe)
        .arg(&src)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", compiler.display()));
    assert!(out.status.success(), "{} {name}.c failed:\n{}", compiler.display(), String::from_utf8_lossy(&out.stderr));
    exe
}

/// Compiles `crates/mpi-capi/tests/c/<name>.c` (this crate's own C tests,
/// which share tests/c/check.h) with `compiler`.
pub fn compile_own(compiler: &Path, name: &str, tag: &str) -> PathBuf {
    let exe = out_dir(tag).join(name);
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c").join(format!("{name}.c"));
    let inc = format!("-I{}", root().join("tests/c").display());
    let out = Command::new(compiler)
        .args(["-std=c99", "-O1", "-Wall", "-Wextra", "-Werror", &inc, "-o"])
        .arg(&exe)
        .arg(&src)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", compiler.display()));
    assert!(out.status.success(), "{} {name}.c failed:\n{}", compiler.display(), String::from_utf8_lossy(&out.stderr));
    exe
}

pub fn mpirun() -> PathBuf {
    root().join("target/release/mpirun")
}

/// Runs `exe` on `n` ranks; mpirun's --timeout bounds the job.
pub fn run(n: usize, exe: &Path, args: &[&str], env: &[(&str, String)]) -> Output {
    let mut c = Command::new(mpirun());
    for (k, v) in env {
        c.env(k, v);
        c.args(["-x", k]);
    }
    c.args(["-n", &n.to_string(), "--timeout", "120"]).arg(exe).args(args);
    c.output().expect("run mpirun")
}

pub fn assert_pass(out: &Output, name: &str, n: usize) {
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains(&format!("PASS {name}")),
        "{name} on {n} ranks failed ({}):\nstdout:\n{stdout}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Compiles `tests/c/<name>.c` with `compiler` (another MPI's wrapper, or
/// ours for another ABI) into a directory of the caller's own (tests run at
/// once: one compiling over a binary another runs would fail it) and checks
/// the binary asks for `library`, the ABI under test.
pub fn compile_for(compiler: &Path, name: &str, tag: &str, library: &str) -> PathBuf {
    let inc = format!("-I{}", root().join("tests/c").display());
    let exe = out_dir(tag).join(name);
    // No -Werror: gcc warns on sentinels such as the standard ABI's
    // MPI_UNWEIGHTED ((int *)10) passed as an array, which they are.
    let out = Command::new(compiler)
        .args(["-std=c99", "-O1", &inc, "-o"])
        .arg(&exe)
        .arg(root().join("tests/c").join(format!("{name}.c")))
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", compiler.display()));
    assert!(out.status.success(), "{} {name}.c failed:\n{}", compiler.display(), String::from_utf8_lossy(&out.stderr));
    let needed = Command::new("readelf").arg("-d").arg(&exe).output().expect("readelf");
    assert!(String::from_utf8_lossy(&needed.stdout).contains(library), "{name} was not linked against {library}");
    exe
}

/// p2p, coll and requests, built by `compile`, pass over tcp, sctp, wamp
/// and adaptive with the environment `env` gives for each transport.
pub fn pass_on_every_transport(abi: &str, compile: impl Fn(&str) -> PathBuf, env: impl Fn(&str) -> Vec<(&'static str, String)>) {
    for name in ["p2p", "coll", "requests"] {
        let exe = compile(name);
        for transport in ["tcp", "sctp", "wamp", "adaptive"] {
            let n = if name == "coll" { 3 } else { 2 };
            assert_pass(&run(n, &exe, &[], &env(transport)), name, n);
            eprintln!("{name} ({abi}): {n} ranks over {transport}: passed");
        }
    }
}
