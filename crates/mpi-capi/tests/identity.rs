//! Who the header says we are, asked as software asks it: PETSc configured
//! against Debian's MPICH records that MPICH's `MPICH_NUMVERSION` and, at
//! every compile, refuses an `mpi.h` that is not the same MPICH ABI
//! (`tests/c/mpich_identity.c` asks its question). Our header answers as
//! the MPICH 4.0.2 ABI it implements, keeps saying `WANMPI`, and leaves the
//! MPICH macros out under `-DWANMPI_NO_MPICH_VERSION`.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::*;

/// Debian 12's MPICH header, where libmpich-dev puts it.
const DEBIAN_MPICH_H: &str = "/usr/include/x86_64-linux-gnu/mpich/mpi.h";

/// The `MPICH_NUMVERSION` of Debian's MPICH (libmpich-dev, installed by
/// scripts/install-deps), which a library built against it records.
fn debian_mpich_numversion() -> u64 {
    let text =
        std::fs::read_to_string(DEBIAN_MPICH_H).unwrap_or_else(|e| panic!("{DEBIAN_MPICH_H}: {e} (scripts/install-deps installs libmpich-dev)"));
    text.lines()
        .find_map(|l| l.strip_prefix("#define MPICH_NUMVERSION "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no MPICH_NUMVERSION in {DEBIAN_MPICH_H}"))
}

fn mpicc() -> PathBuf {
    prefix().join("bin/mpicc")
}

fn compile(tag: &str, defines: &[String]) -> (PathBuf, Output) {
    let exe = out_dir("identity").join(tag);
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/mpich_identity.c");
    let out = Command::new(mpicc())
        .args(["-std=c99", "-Wall", "-Wextra", "-Werror"])
        .args(defines)
        .arg("-o")
        .arg(&exe)
        .arg(&src)
        .output()
        .expect("run mpicc");
    (exe, out)
}

fn configured(n: u64) -> String {
    format!("-DCONFIGURED_MPICH_NUMVERSION={n}")
}

#[test]
fn header_passes_a_check_for_debians_mpich_and_runs() {
    let n = debian_mpich_numversion();
    assert_eq!(n, 40002300, "Debian 12's MPICH is 4.0.2: our header names that ABI");
    for (tag, defines) in [("petsc", vec![configured(n)]), ("strict", vec![configured(n), "-DSTRICT".into()])] {
        let (exe, out) = compile(tag, &defines);
        assert!(out.status.success(), "mpicc {defines:?} failed:\n{}", String::from_utf8_lossy(&out.stderr));
        let run = run(1, &exe, &[], &[]);
        assert_pass(&run, "mpich_identity", 1);
    }
}

#[test]
fn check_refuses_a_newer_mpich_and_a_header_without_the_macros() {
    let n = debian_mpich_numversion();
    // A library configured with MPICH 4.1 must not accept the 4.0 ABI.
    let (_, out) = compile("newer", &[configured(40100300)]);
    assert!(!out.status.success(), "a check configured for MPICH 4.1 accepted our 4.0.2 header");
    assert!(String::from_utf8_lossy(&out.stderr).contains("newer MPICH minor version"));
    // Nor one configured with MPICH 3.
    let (_, out) = compile("older-major", &[configured(30400300)]);
    assert!(!out.status.success(), "a check configured for MPICH 3.4 accepted our header");
    // The opt-out leaves MPICH's macros out, and the check then refuses us
    // with PETSc's complaint.
    let (_, out) = compile("opt-out", &[configured(n), "-DWANMPI_NO_MPICH_VERSION".into()]);
    assert!(!out.status.success(), "-DWANMPI_NO_MPICH_VERSION still defined MPICH_NUMVERSION");
    assert!(String::from_utf8_lossy(&out.stderr).contains("not MPICH's ABI"), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn header_defines_the_same_mpich_macros_as_debians_mpich() {
    // Each MPICH identification macro we define has MPICH 4.0.2's value.
    let ours = std::fs::read_to_string(root().join("include/mpi.h")).expect("read include/mpi.h");
    let theirs = std::fs::read_to_string(DEBIAN_MPICH_H).expect("read Debian's mpich mpi.h");
    let value = |text: &str, name: &str| -> Option<String> {
        text.lines().find_map(|l| {
            let rest = l.trim_start().strip_prefix("#define ")?.trim_start().strip_prefix(name)?;
            rest.starts_with([' ', '\t']).then(|| rest.trim().to_string())
        })
    };
    for name in [
        "MPICH_NAME",
        "MPICH_VERSION",
        "MPICH_NUMVERSION",
        "MPICH_HAS_C2F",
        "MPICH_RELEASE_TYPE_ALPHA",
        "MPICH_RELEASE_TYPE_BETA",
        "MPICH_RELEASE_TYPE_RC",
        "MPICH_RELEASE_TYPE_PATCH",
    ] {
        let o = value(&ours, name).unwrap_or_else(|| panic!("include/mpi.h does not define {name}"));
        let t = value(&theirs, name).unwrap_or_else(|| panic!("{DEBIAN_MPICH_H} does not define {name}"));
        assert_eq!(o, t, "{name}");
    }
}
