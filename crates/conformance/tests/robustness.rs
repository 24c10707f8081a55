//! A rank that exits or is killed mid-run ends the job, within a bounded
//! time, with a message naming it; no rank hangs.

mod harness;
use harness::{run, transports};
use std::time::Duration;

fn dies(how: &str) {
    for t in transports() {
        let (out, took) = run(env!("CARGO_BIN_EXE_dies"), 4, &t, &["2", how], &[]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "job with a dead rank succeeded over {}", t.label);
        assert!(stderr.contains("rank 2"), "no message names rank 2 over {}:\n{stderr}", t.label);
        assert!(took < Duration::from_secs(30), "job took {took:?} to end over {}", t.label);
        assert!(!stderr.contains("completed?!"), "a receive from the dead rank completed:\n{stderr}");
        eprintln!("{how} over {}: ended in {:.2}s: {}", t.label, took.as_secs_f64(), stderr.lines().find(|l| l.contains("rank 2")).unwrap_or(""));
    }
}

#[test]
fn a_killed_rank_ends_the_job_naming_it() {
    dies("kill");
}

#[test]
fn a_rank_exiting_without_finalize_ends_the_job_naming_it() {
    dies("exit");
}

/// Killed while its long messages stream out: over shared memory a ring is
/// left half written. The job still ends naming the rank, and no segment of
/// the job stays behind in /dev/shm.
#[test]
fn a_rank_killed_mid_message_ends_the_job_naming_it_and_leaves_no_segment() {
    let segments = || -> Vec<String> {
        std::fs::read_dir("/dev/shm")
            .map(|d| d.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).filter(|n| n.starts_with("wanmpi-shm-")).collect())
            .unwrap_or_default()
    };
    let before = segments();
    dies("midsend");
    let left: Vec<String> = segments().into_iter().filter(|s| !before.contains(s)).collect();
    assert!(left.is_empty(), "the jobs left shared-memory files behind: {left:?}");
}
