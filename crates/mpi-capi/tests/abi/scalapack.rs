//! Part of abi.rs (its C library is installed once): Debian's ScaLAPACK
//! test drivers (package scalapack-mpi-test) built against MPICH
//! (`mpich-tests`, run on wanmpi's libmpi.so.12 under the name
//! libmpich.so.12) and against Open MPI (`openmpi-tests`, run on wanmpi's
//! libmpi.so.40, the Open MPI ABI), on 4 ranks over the default transport
//! (shared memory on one host): every residual check must pass. Skipped, saying
//! so, when the package is not installed (scripts/install-deps installs
//! it).
//!
//! The drivers run with tests/scalapack/lacon_est.c preloaded: ScaLAPACK
//! 2.2.1's PSLACON/PDLACON read their caller's uninitialized EST, so
//! without it the ranks of xslu and xsllt decide differently from stack
//! garbage and the run fails ("PSGETRS parameter number 1 had an illegal
//! value", then a hang) under any MPI whose stack leftovers differ between
//! ranks. See that file.

use crate::common::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const MPICH_DRIVERS: &str = "/usr/lib/x86_64-linux-gnu/scalapack/mpich-tests";
const OPENMPI_DRIVERS: &str = "/usr/lib/x86_64-linux-gnu/scalapack/openmpi-tests";

/// The preload library, built once per test binary.
fn lacon_est() -> PathBuf {
    let so = out_dir("scalapack").join("liblacon_est.so");
    let src = root().join("tests/scalapack/lacon_est.c");
    let out = Command::new("cc")
        .args(["-std=c99", "-O1", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC", "-o"])
        .arg(&so)
        .arg(&src)
        .arg("-ldl")
        .output()
        .expect("run cc");
    assert!(out.status.success(), "cc lacon_est.c failed:\n{}", String::from_utf8_lossy(&out.stderr));
    so
}

/// Runs one driver from its directory (it reads its .dat file from the
/// working directory and prints to stdout); mpirun's --timeout bounds it.
fn run_driver(dir: &str, name: &str, preload: &Path) -> Output {
    let lib = prefix().join("lib");
    Command::new(mpirun())
        .current_dir(dir)
        .env("LD_LIBRARY_PATH", &lib)
        .env("LD_PRELOAD", preload)
        .env("WANMPI_TRANSPORT", "auto")
        .args(["-x", "LD_LIBRARY_PATH", "-x", "LD_PRELOAD", "-x", "WANMPI_TRANSPORT"])
        .args(["-n", "4", "--timeout", "120"])
        .arg(format!("./{name}"))
        .output()
        .expect("run mpirun")
}

/// "Finished N tests ... N tests completed and passed residual checks",
/// nothing failed or refused as illegal.
fn assert_all_checks_pass(name: &str, out: &Output) {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let count = |marker: &str| -> Option<u64> {
        stdout.lines().find_map(|l| {
            let l = l.trim();
            l.ends_with(marker).then(|| l.split_whitespace().next()?.parse().ok()).flatten()
        })
    };
    let finished = stdout.lines().find_map(|l| l.trim().strip_prefix("Finished")?.split_whitespace().next()?.parse::<u64>().ok());
    let passed = count("tests completed and passed residual checks.");
    let failed = count("tests completed and failed residual checks.");
    let ok = out.status.success()
        && finished.is_some_and(|n| n > 0)
        && passed == finished
        && failed == Some(0)
        && !stdout.contains("illegal value")
        && stdout.contains("END OF TESTS");
    assert!(
        ok,
        "{name} on 4 ranks ({}): finished {finished:?}, passed {passed:?}, failed {failed:?}\nstdout (end):\n{}\nstderr:\n{}",
        out.status,
        stdout.lines().rev().take(40).collect::<Vec<_>>().into_iter().rev().collect::<Vec<_>>().join("\n"),
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("{name}: {} of {} residual checks passed on 4 ranks (default transport)", passed.unwrap_or(0), finished.unwrap_or(0));
}

fn drivers_pass(dir: &str) {
    if !Path::new(dir).join("xslu").exists() {
        eprintln!("SKIPPED: {dir}/xslu not found (Debian package scalapack-mpi-test; scripts/install-deps installs it)");
        return;
    }
    let preload = lacon_est();
    for name in ["xslu", "xsllt"] {
        assert_all_checks_pass(name, &run_driver(dir, name, &preload));
    }
}

#[test]
fn lu_and_cholesky_drivers_pass_every_check() {
    drivers_pass(MPICH_DRIVERS);
}

#[test]
fn open_mpi_built_lu_and_cholesky_drivers_pass_every_check() {
    assert!(prefix().join("lib/libmpi.so.40").exists(), "libmpi.so.40 was not built (abi/install)");
    drivers_pass(OPENMPI_DRIVERS);
}
