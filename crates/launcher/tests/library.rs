//! Launching a job from a program, as the emulator and the bench runner do.

mod common;
use common::PROBE;
use wanmpi_launcher::{run, JobSpec, OutputMode, RankEnd, StreamKind};

#[test]
fn a_job_runs_and_its_output_is_captured() {
    let mut spec = JobSpec::local(PROBE, &["exchange", "eprint:e{rank}", "finalize"], 3);
    spec.output = OutputMode::Capture;
    let out = run(&spec).expect("job starts");
    assert_eq!(out.exit_code, 0);
    assert!(out.failure.is_none());
    assert!(out.ranks.iter().all(|r| r.end == RankEnd::Exited(0) && r.connected && r.finalized), "{:?}", out.ranks);
    let mut lines: Vec<(u32, String)> = out.output.iter().filter(|l| l.stream == StreamKind::Stdout).map(|l| (l.rank, l.text.clone())).collect();
    lines.sort();
    assert_eq!(lines, (0..3).map(|r| (r, format!("rank {r} of 3 got v0,v1,v2"))).collect::<Vec<_>>());
    assert_eq!(out.output.iter().filter(|l| l.stream == StreamKind::Stderr).count(), 3);
}

#[test]
fn a_failed_job_says_why() {
    let mut spec = JobSpec::local(PROBE, &["exchange", "exit:9@2", "sleep:60", "finalize"], 3);
    spec.output = OutputMode::Capture;
    let out = run(&spec).expect("job starts");
    assert_eq!(out.exit_code, 9);
    let why = out.failure.expect("a failure");
    assert!(why.starts_with("rank 2 (pid ") && why.ends_with("exited with code 9"), "{why}");
    assert_eq!(out.ranks[2].end, RankEnd::Exited(9));
    // The others were ended by the launcher.
    assert_eq!(out.ranks[0].end, RankEnd::Signaled(libc::SIGTERM));
}
