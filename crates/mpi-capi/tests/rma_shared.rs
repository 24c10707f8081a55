//! Shared windows (MPI_Win_allocate_shared) name nothing (tests/c/rma_shared.c):
//! their memory is a memfd that the other ranks open through /proc, so
//! nothing of the job is ever in /dev/shm, a name another user planted
//! there cannot stop a window (it stopped rank 0's exclusive create of
//! `/wanmpi-win-<pid>-<comm>` before), and memory a rank may not open
//! fails the window on every rank with a message that says why.

mod common;

use common::*;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// Unprivileged uids without a passwd entry (nothing to create or remove).
fn other_uid() -> u32 {
    62000 + std::process::id() % 1000
}

fn is_root() -> bool {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() == 0 }
}

#[test]
fn a_shared_window_leaves_nothing_in_dev_shm() {
    let exe = compile(&prefix().join("bin/mpicc"), "rma_shared", "mpicc-rma-shared");
    for n in [1, 3] {
        let out = run(n, &exe, &[], &[]);
        assert_pass(&out, "rma_shared", n);
        eprintln!("rma_shared on {n} ranks: {}", String::from_utf8_lossy(&out.stdout).lines().next().unwrap_or_default());
    }
}

/// Names of the old scheme for pids around rank 0's, planted by another
/// uid before the window is made: the window is made all the same.
#[test]
fn a_name_planted_by_another_user_does_not_stop_the_window() {
    if !is_root() {
        eprintln!("SKIPPED: this test needs root, to plant names in /dev/shm as another user");
        return;
    }
    let exe = compile(&prefix().join("bin/mpicc"), "rma_shared", "mpicc-rma-planted");
    let sync = out_dir("rma-planted").join(format!("sync-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&sync);
    std::fs::create_dir_all(&sync).unwrap();
    let mut job = Command::new(mpirun());
    job.args(["-n", "3", "--timeout", "120"]).arg(&exe).arg("plant").arg(&sync);
    let child = job.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().expect("run mpirun");
    let pid_file = sync.join("pid");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !pid_file.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    let pid: u32 = std::fs::read_to_string(&pid_file).expect("rank 0's pid").trim().parse().expect("a pid");
    // The names the window of the old code took: its communicator's id is
    // small in a fresh program; 256 of them cover it.
    let names: Vec<String> = (0..256).map(|c| format!("/dev/shm/wanmpi-win-{pid}-{c}")).collect();
    let script = names.iter().map(|n| format!(": > {n}")).collect::<Vec<_>>().join("; ");
    let planted = Command::new("sh").args(["-c", &script]).uid(other_uid()).gid(other_uid()).status().expect("plant as another uid");
    assert!(planted.success(), "planting failed");
    let owner = std::fs::metadata(&names[3]).map(|m| std::os::unix::fs::MetadataExt::uid(&m));
    assert_eq!(owner.ok(), Some(other_uid()), "the planted names belong to the other uid");
    std::fs::write(sync.join("planted"), b"").unwrap();
    let out = child.wait_with_output().expect("wait for mpirun");
    for n in &names {
        let _ = std::fs::remove_file(n);
    }
    let _ = std::fs::remove_dir_all(&sync);
    assert_pass(&out, "rma_shared", 3);
}

/// Memory another rank may not open (rank 0 non-dumpable, the job as an
/// unprivileged uid, so no capability lets the others in): every rank's
/// MPI_Win_allocate_shared fails, and says which rank and why.
#[test]
fn a_window_some_rank_cannot_open_fails_on_every_rank_with_the_reason() {
    if !is_root() {
        eprintln!("SKIPPED: this test needs root, to run the job as an unprivileged uid");
        return;
    }
    let exe = compile(&prefix().join("bin/mpicc"), "rma_shared", "mpicc-rma-nodump");
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut job = Command::new(mpirun());
    job.args(["-n", "3", "--timeout", "120"]).arg(&exe).arg("nodump");
    job.uid(other_uid()).gid(other_uid()).env("TMPDIR", "/tmp").env_remove("HOME");
    let out: Output = job.output().expect("run mpirun");
    let stdout = String::from_utf8_lossy(&out.stdout);
    eprintln!("{stdout}");
    assert_pass(&out, "rma_shared", 3);
    let refused: Vec<&str> = stdout.lines().filter(|l| l.contains(" refused: ")).collect();
    assert_eq!(refused.len(), 3, "every rank reports the failure: {stdout}");
    for l in refused {
        assert!(l.contains("rank 1") || l.contains("rank 2"), "the message names a rank that could not open it: {l}");
        assert!(l.contains("permission denied") || l.contains("Permission denied"), "the message says why: {l}");
    }
}
