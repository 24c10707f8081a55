//! Running real jobs (wanmpi's mpirun and the C library, as built by
//! scripts/build) of the C program tests/c/shm_job.c.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("workspace root")
}

/// wanmpi's mpirun; the tests need `scripts/build` to have run.
/// `WANMPI_SHM_TEST_MPIRUN` names another (with `LD_LIBRARY_PATH` for its
/// library: how these tests were run against the code before issue 23).
pub fn mpirun() -> PathBuf {
    let p = std::env::var_os("WANMPI_SHM_TEST_MPIRUN").map_or_else(|| root().join("target/release/mpirun"), PathBuf::from);
    assert!(p.exists(), "{} is missing: run scripts/build first", p.display());
    p
}

/// tests/c/shm_job.c compiled with wanmpi's mpicc, once per test binary.
pub fn shm_job() -> &'static Path {
    static EXE: OnceLock<PathBuf> = OnceLock::new();
    EXE.get_or_init(|| {
        let mpicc = root().join("target/wanmpi/bin/mpicc");
        assert!(mpicc.exists(), "{} is missing: run scripts/build first", mpicc.display());
        let dir = root().join("target/shmtest");
        std::fs::create_dir_all(&dir).expect("target/shmtest");
        let exe = dir.join(format!("shm_job-{}", std::process::id()));
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/shm_job.c");
        let out = Command::new(&mpicc).args(["-O2", "-Wall", "-Werror", "-o"]).arg(&exe).arg(&src).output().expect("run mpicc");
        assert!(out.status.success(), "mpicc shm_job.c failed:\n{}", String::from_utf8_lossy(&out.stderr));
        exe
    })
}

/// A mpirun command for `n` ranks of shm_job, without WANMPI_* settings
/// of the test's own environment.
pub fn command(n: usize, seconds: f64) -> Command {
    let mut c = Command::new(mpirun());
    for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("WANMPI_") || k.starts_with("SLURM_")) {
        c.env_remove(k);
    }
    c.args(["-n", &n.to_string(), "--timeout", "240"]).arg(shm_job()).arg(seconds.to_string());
    c
}

/// The figures of shm_job's memory line: (ranks, pss, pss_shmem, memfd) in KiB.
pub fn memory_line(stdout: &str) -> Option<(u64, u64, u64, u64)> {
    let l = stdout.lines().find(|l| l.starts_with("memory: "))?;
    let w: Vec<&str> = l.split_whitespace().collect();
    let num = |key: &str| w.iter().position(|x| *x == key).and_then(|i| w.get(i + 1)?.parse().ok());
    Some((num("ranks")?, num("pss_kib")?, num("pss_shmem_kib")?, num("memfd_kib")?))
}
