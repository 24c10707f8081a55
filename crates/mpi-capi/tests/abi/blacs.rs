//! Part of abi.rs: the BLACS testers of Debian's scalapack-mpi-test built
//! against MPICH (`xFbtest`, a Fortran main program, and `xCbtest`, whose
//! BLACS calls MPI through Fortran's names too), run unchanged on wanmpi:
//! libmpich.so.12 is wanmpi's libmpi and libmpichfort.so.12 wanmpi's
//! Fortran glue (fortran/install). With MPICH's own libmpichfort they
//! crashed in `mpirinitc_` at start-up. On 4 ranks over the default
//! transport; every summary must report no failure, with as many passed
//! tests as MPICH 4.0.2 itself reports on this machine (22 summaries, the
//! same counts, and 5 auxiliary tests). The testers end with a deliberate BLACS_ABORT.
//! Skipped, saying so, when the package is not installed.

use crate::common::*;
use std::path::Path;
use std::process::Command;

const BLACS: &str = "/usr/lib/x86_64-linux-gnu/scalapack/mpich-tests/BLACS";

fn run_tester(name: &str) -> String {
    let lib = prefix().join("lib");
    assert!(lib.join("libmpichfort.so.12").exists(), "libmpichfort.so.12 not installed: is gfortran installed?");
    let out = Command::new(mpirun())
        .current_dir(BLACS)
        .env("LD_LIBRARY_PATH", &lib)
        .env("WANMPI_TRANSPORT", "auto")
        .args(["-x", "LD_LIBRARY_PATH", "-x", "WANMPI_TRANSPORT"])
        .args(["-n", "4", "--timeout", "240"])
        .arg(format!("./{name}"))
        .output()
        .expect("run mpirun");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    // The last auxiliary test calls BLACS_ABORT, which must end the job.
    assert!(
        stdout.contains("The final auxiliary test is for BLACS_ABORT") && stderr.contains("MPI_Abort called with code -1"),
        "{name} did not reach its final BLACS_ABORT test:\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    stdout
}

fn assert_all_pass(name: &str, stdout: &str) {
    let summaries: Vec<&str> = stdout.lines().filter(|l| l.contains(" TESTS;")).collect();
    assert_eq!(summaries.len(), 22, "{name}: summaries missing:\n{stdout}");
    for s in &summaries {
        assert!(s.trim_end().ends_with(" 0 FAILED."), "{name}: {s}");
        assert!(!s.contains(" 0 PASSED"), "{name}: nothing passed: {s}");
    }
    // MPICH's own run prints 5; ours of xCbtest sometimes one more (the
    // repeatable-sum test, which BLACS runs only on some topologies).
    let aux = stdout.lines().filter(|l| l.trim_start().starts_with("PASSED ")).count();
    let failed = stdout.lines().filter(|l| l.trim_start().starts_with("FAILED")).count();
    assert!(aux >= 5 && failed == 0, "{name}: auxiliary tests:\n{stdout}");
}

#[test]
fn blacs_testers_built_with_mpich_pass() {
    if !Path::new(BLACS).join("xFbtest").exists() {
        eprintln!("skipped: {BLACS} missing (install the Debian package scalapack-mpi-test)");
        return;
    }
    for name in ["xFbtest", "xCbtest"] {
        let stdout = run_tester(name);
        assert_all_pass(name, &stdout);
        eprintln!("{name}: 22 summaries without failure, the auxiliary tests passed");
    }
}
