//! `--tolerate-rank-failure`: a failing rank does not end the job; the exit
//! code comes from the ranks that survive.

mod common;
use common::*;

#[test]
fn a_killed_rank_does_not_end_the_job() {
    let r = mpirun(&["-n", "3", "--tolerate-rank-failure", PROBE, "exchange", "kill@1", "sleep:1", "env:WANMPI_TOLERATE_RANK_FAILURE", "finalize"]);
    assert_eq!(r.code, Some(0), "survivors ended well: {}", r.stderr);
    assert!(r.stderr.contains("rank 1 (pid") && r.stderr.contains("was killed by signal 9 (SIGKILL); the other ranks go on"), "{}", r.stderr);
    assert_eq!(r.stdout.matches("WANMPI_TOLERATE_RANK_FAILURE=1").count(), 2, "ranks 0 and 2 ran on: {}", r.stdout);
}

#[test]
fn the_exit_code_comes_from_failing_survivors() {
    let r = mpirun(&["-n", "3", "--tolerate-rank-failure", PROBE, "exchange", "kill@1", "sleep:1", "exit:5@2", "finalize"]);
    assert_eq!(r.code, Some(5), "{}", r.stderr);
    assert!(r.stderr.contains("rank 2 (pid") && r.stderr.contains("exited with code 5 (surviving a tolerated rank failure)"), "{}", r.stderr);
    let all = mpirun(&["-n", "2", "--tolerate-rank-failure", PROBE, "exchange", "kill"]);
    assert_eq!(all.code, Some(137), "every rank died: {}", all.stderr);
    assert!(all.stderr.contains("every rank failed"), "{}", all.stderr);
}

#[test]
fn without_the_flag_a_killed_rank_ends_the_job() {
    let r = mpirun(&["-n", "3", PROBE, "exchange", "kill@1", "sleep:30", "finalize"]);
    assert_eq!(r.code, Some(137), "{}", r.stderr);
    assert!(r.took.as_secs() < 20, "the job was ended, not waited for");
}
