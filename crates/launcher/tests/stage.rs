//! `mpirun --stage` against real sshd in emulated hosts whose /tmp is their
//! own (tests/sshd_site): the program exists only in mpirun's /tmp, so the
//! far side can run it only from the copy. The ranks run from a per-job
//! directory of mode 0700 under the far side's /tmp, and the directory is
//! gone when the job ends, whether it succeeded or a rank failed.
//!
//! Needs root, sshd, ssh and the emulator's forwarder; says why and skips
//! without them.

mod common;
mod sshd_site;
use common::*;
use sshd_site::*;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The entries of a server's /tmp that look like a staged job's.
fn staged_dirs(root: &Path) -> Vec<String> {
    std::fs::read_dir(root.join("tmp"))
        .map(|d| d.filter_map(|e| e.ok()?.file_name().to_str().map(str::to_string)).filter(|n| n.starts_with("wanmpi-")).collect())
        .unwrap_or_default()
}

#[test]
fn staged_ranks_run_from_a_private_copy_that_is_removed() {
    if let Some(why) = skip_reason() {
        eprintln!("SKIPPED staged_ranks_run_from_a_private_copy_that_is_removed: {why}");
        return;
    }
    let site = bring_up("stage");
    // The program exists in mpirun's /tmp only: the servers see a /tmp of their own.
    let src = PathBuf::from(format!("/tmp/wanmpi-stage-src-{}", std::process::id()));
    let _src_gone = Scratch(src.clone());
    std::fs::create_dir_all(&src).expect("source dir");
    let prog = src.join("probe");
    std::fs::copy(PROBE, &prog).expect("copy the probe");
    let roots = site.server_roots();
    for root in &roots {
        assert!(!root.join(prog.strip_prefix("/").unwrap()).exists(), "the far side sees mpirun's /tmp: the test proves nothing");
    }
    let hosts = format!("{}:1,{}:2", site.servers[0], site.servers[1]);
    let p = prog.display().to_string();

    // A job that succeeds.
    let started = Instant::now();
    let t = Instant::now();
    let mut child =
        mpirun_in(&site, &["--stage", "--host", &hosts, &p, "exchange", "print:ready {pid}", "sleep:1", "finalize"]).spawn().expect("mpirun");
    let (pids, mut lines, rest) = wait_ready(&mut child, started, 3);
    eprintln!("staged and ready after {:?}", t.elapsed());
    let mut dirs = Vec::new();
    for pid in &pids {
        let exe = std::fs::read_link(format!("/proc/{pid}/exe")).expect("a rank's exe");
        let dir = exe.parent().expect("a directory").to_path_buf();
        assert!(dir.starts_with("/tmp") && dir.file_name().is_some_and(|n| n.to_string_lossy().starts_with("wanmpi-")), "rank {pid} runs {exe:?}");
        assert_eq!(exe.file_name().and_then(|n| n.to_str()), Some("probe"));
        let seen = PathBuf::from(format!("/proc/{pid}/root")).join(dir.strip_prefix("/").unwrap());
        let mode = std::fs::metadata(&seen).expect("the staged directory").permissions().mode();
        assert_eq!(mode & 0o777, 0o700, "{dir:?}");
        dirs.push(dir);
    }
    // One copy per host: ranks sharing a host share it.
    dirs.sort();
    dirs.dedup();
    assert_eq!(dirs.len(), 2, "{dirs:?}");
    let r = finish(child, started);
    lines.extend(rest.try_iter());
    assert_eq!(r.code, Some(0), "stdout: {lines:?}\nstderr: {}", r.stderr);
    assert_eq!(lines.iter().filter(|l| l.ends_with("got v0,v1,v2")).count(), 3, "{lines:?}");
    for root in &roots {
        assert_eq!(staged_dirs(root), Vec::<String>::new(), "left behind in {root:?}/tmp");
    }

    // A job whose rank fails: the copies go too.
    let r = mpirun_with(mpirun_in(&site, &["--stage", "--host", &hosts, &p, "exchange", "exit:3@1", "sleep:5", "finalize"]));
    assert_eq!(r.code, Some(3), "stderr: {}", r.stderr);
    for root in &roots {
        assert_eq!(staged_dirs(root), Vec::<String>::new(), "left behind in {root:?}/tmp after a failure");
    }

    // Without --stage the far side has no such program.
    let r = mpirun_with(mpirun_in(&site, &["--host", &hosts, &p, "finalize"]));
    assert_eq!(r.code, Some(127), "stdout: {}\nstderr: {}", r.stdout, r.stderr);
    drop(site);
}
