//! Nothing is left behind, however a job ends: mpirun or one of its ranks
//! killed with SIGKILL at a random moment of set-up or transfer, round
//! after round, and afterwards no process of the job remains and nothing of
//! ours is in /dev/shm (before issue 23, ring files of a job killed during
//! set-up stayed there for good). Nor does a key/value socket directory
//! (`$TMPDIR/wanmpi-<pid>-<hex>`) of a killed mpirun survive the next
//! mpirun of the same user, which removes those of dead mpiruns (before:
//! 34 directories left by 100 rounds). This test process is a child subreaper,
//! so ranks orphaned by a killed mpirun become its children: "no process
//! left" is "no child left". `WANMPI_SHM_KILL_ROUNDS` (default 24; the
//! script benches/shm-kill runs 100) and `WANMPI_SHM_KILL_SEED` replay.

mod common;

use common::job::command;
use common::shm_names_of;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// Children of this process, alive or zombie.
fn children() -> Vec<u32> {
    let mut out = vec![];
    for t in std::fs::read_dir("/proc/self/task").expect("/proc/self/task").flatten() {
        let s = std::fs::read_to_string(t.path().join("children")).unwrap_or_default();
        out.extend(s.split_whitespace().filter_map(|p| p.parse::<u32>().ok()));
    }
    out
}

/// Children of `pid` (mpirun's ranks).
fn children_of(pid: u32) -> Vec<u32> {
    let mut out = vec![];
    for t in std::fs::read_dir(format!("/proc/{pid}/task")).into_iter().flatten().flatten() {
        let s = std::fs::read_to_string(t.path().join("children")).unwrap_or_default();
        out.extend(s.split_whitespace().filter_map(|p| p.parse::<u32>().ok()));
    }
    out
}

/// Reaps every child that ended; true once none is left, within `limit`.
fn all_gone(limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        // SAFETY: reaping any ended child, not blocking.
        while unsafe { libc::waitpid(-1, std::ptr::null_mut(), libc::WNOHANG) } > 0 {}
        if children().is_empty() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

struct Rng(u64);
impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

#[test]
fn jobs_killed_at_random_moments_leave_no_process_and_nothing_in_dev_shm() {
    // SAFETY: plain prctl on this process.
    assert_eq!(unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) }, 0);
    let rounds: u32 = std::env::var("WANMPI_SHM_KILL_ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(24);
    let seed = std::env::var("WANMPI_SHM_KILL_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64) | 1);
    eprintln!("WANMPI_SHM_KILL_SEED={seed}");
    let mut rng = Rng(seed);
    let tmp = std::env::temp_dir().join(format!("wanmpi-shm-kill-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    let (mut mpirun_kills, mut rank_kills) = (0, 0);
    // Socket directories found right after a round (a killed mpirun's; the
    // next round's mpirun sweeps them).
    let mut left_dirs = 0;
    for round in 0..rounds {
        let n = 4 + rng.below(5) as usize;
        let mut c = command(n, 1.5);
        c.env("TMPDIR", &tmp).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
        let child = c.spawn().expect("start mpirun");
        let mpirun = child.id();
        // A moment in set-up (the first ~0.3 s) or in the transfer.
        let at = Duration::from_millis(rng.below(1200));
        std::thread::sleep(at);
        let ranks = children_of(mpirun);
        let (victim, what) = if round % 3 == 0 || ranks.is_empty() {
            mpirun_kills += 1;
            (mpirun, "mpirun".to_string())
        } else {
            rank_kills += 1;
            let r = ranks[rng.below(ranks.len() as u64) as usize];
            (r, format!("rank process {r}"))
        };
        // SAFETY: a signal to a process of ours (not yet reaped: it cannot
        // have been replaced).
        unsafe { libc::kill(victim as i32, libc::SIGKILL) };
        assert!(all_gone(Duration::from_secs(30)), "round {round}: {what} killed at {at:?} of {n} ranks; left: {:?}", children());
        let prefix = format!("wanmpi-{mpirun}-");
        left_dirs += std::fs::read_dir(&tmp).unwrap().flatten().filter(|e| e.file_name().to_string_lossy().starts_with(&prefix)).count();
        let names = shm_names_of(mpirun);
        assert!(names.is_empty(), "round {round}: {what} killed at {at:?}: /dev/shm holds {names:?}");
        drop(child);
    }
    let left = |tmp: &std::path::Path| -> Vec<String> {
        std::fs::read_dir(tmp).unwrap().flatten().map(|e| e.file_name().to_string_lossy().into_owned()).filter(|n| n.starts_with("wanmpi-")).collect()
    };
    // The next job of this user, in the same TMPDIR, sweeps the last ones.
    let mut next = command(2, 0.1);
    next.env("TMPDIR", &tmp).stdin(Stdio::null());
    let out = next.output().expect("run mpirun once more");
    assert!(out.status.success(), "the job after the killed ones failed: {}", String::from_utf8_lossy(&out.stderr));
    let after = left(&tmp);
    eprintln!(
        "{rounds} rounds: mpirun killed {mpirun_kills} times, a rank {rank_kills}; {left_dirs} key/value socket directories were left by a round, {} after the next mpirun",
        after.len()
    );
    assert!(after.is_empty(), "socket directories of killed mpiruns outlived the next mpirun: {after:?}");
    let _ = std::fs::remove_dir_all(&tmp);
}
