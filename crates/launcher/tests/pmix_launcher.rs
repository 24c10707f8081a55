//! A program on wanmpi's libmpi.so.12 started by a launcher that is not
//! ours but speaks PMIx: Open MPI's `mpirun` (Debian's 4.1, whose daemons
//! are PMIx servers). MPI_Init finds `PMIX_NAMESPACE`, loads libpmix and
//! makes one job of the ranks (before: each rank was a world of one).
//! `srun --mpi=pmix` is tested in slurm.rs. Skips, saying why, without Open
//! MPI's mpirun or the C library.

mod common;
use common::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

const OPEN_MPI_RUN: &str = "/usr/bin/mpirun.openmpi";

/// hello.c built against wanmpi's C library, or why not.
fn hello() -> Result<PathBuf, String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let prefix = root.join("target/wanmpi");
    if !prefix.join("lib/libmpi.so.12").is_file() {
        return Err(format!("{} has no lib/libmpi.so.12 (run scripts/install-c)", prefix.display()));
    }
    if !Path::new(OPEN_MPI_RUN).is_file() {
        return Err(format!("{OPEN_MPI_RUN} is missing (apt-get install openmpi-bin)"));
    }
    let exe = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("pmix-hello-{}", std::process::id()));
    let lib = prefix.join("lib");
    let built = Command::new("cc")
        .arg(format!("-I{}", prefix.join("include").display()))
        .arg("-o")
        .arg(&exe)
        .arg(root.join("examples/c/hello.c"))
        .arg(format!("-L{}", lib.display()))
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .arg("-lmpi")
        .status()
        .is_ok_and(|s| s.success());
    assert!(built, "cc hello.c against {}", lib.display());
    Ok(exe)
}

#[test]
fn open_mpis_mpirun_starts_one_job_on_libmpi() {
    let exe = match hello() {
        Ok(e) => e,
        Err(why) => {
            eprintln!("SKIPPED open_mpis_mpirun_starts_one_job_on_libmpi: {why}");
            return;
        }
    };
    let mut c = Command::new(OPEN_MPI_RUN);
    c.args(["--allow-run-as-root", "--oversubscribe", "-n", "3", "--mca", "btl", "self,tcp"]).arg(&exe);
    c.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("WANMPI_") || k.starts_with("SLURM_") || k.starts_with("PMIX_")) {
        c.env_remove(k);
    }
    let r = finish(c.spawn().expect("start Open MPI's mpirun"), Instant::now());
    let _ = std::fs::remove_file(&exe);
    assert_eq!(r.code, Some(0), "stdout: {}\nstderr: {}", r.stdout, r.stderr);
    for rank in 0..3 {
        assert!(r.stdout.contains(&format!("hello from rank {rank} of 3")), "one job of 3 ranks: {}", r.stdout);
    }
    assert!(r.stdout.contains("sum of ranks = 3 (expected 3)"), "{}", r.stdout);
}
