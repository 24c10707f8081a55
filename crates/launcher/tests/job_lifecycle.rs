//! mpirun end to end: ranks exchange through the key/value service, exit
//! codes, failures, aborts, timeouts, and nothing left behind.

mod common;
use common::*;
use std::time::Duration;

/// A failure must end the whole job well before the sleeping ranks would.
const PROMPT: Duration = Duration::from_secs(20);

#[test]
fn ranks_exchange_through_the_key_value_service() {
    let r = mpirun(&["-n", "4", PROBE, "exchange", "finalize"]);
    assert_eq!(r.code, Some(0), "stderr: {}", r.stderr);
    for rank in 0..4 {
        assert!(r.stdout.contains(&format!("rank {rank} of 4 got v0,v1,v2,v3\n")), "stdout: {}", r.stdout);
    }
}

#[test]
fn tcp_bootstrap_works_too() {
    let r = mpirun(&["-np", "3", "--bootstrap", "tcp", PROBE, "exchange", "env:WANMPI_BOOTSTRAP", "finalize"]);
    assert_eq!(r.code, Some(0), "stderr: {}", r.stderr);
    assert_eq!(r.stdout.matches("got v0,v1,v2").count(), 3);
    assert_eq!(r.stdout.matches("WANMPI_BOOTSTRAP=tcp:127.0.0.1:").count(), 3, "{}", r.stdout);
}

/// A `$TMPDIR` too long for a Unix socket inside it (some CI systems set
/// one): the key/value service's socket goes under /tmp instead.
#[test]
fn a_temporary_directory_too_long_for_a_socket_is_passed_over() {
    let long = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "tmpdir-{}-{}",
        std::process::id(),
        "a-directory-name-long-enough-to-leave-no-room-for-a-socket"
    ));
    std::fs::create_dir_all(&long).expect("the long TMPDIR");
    assert!(long.as_os_str().len() + "/wanmpi-PID-RANDOM/kv.sock".len() > 107, "{} is too short for this test", long.display());
    let mut c = command(&["-n", "2", PROBE, "exchange", "env:WANMPI_BOOTSTRAP", "finalize"]);
    c.env("TMPDIR", &long);
    let r = mpirun_with(c);
    assert_eq!(r.code, Some(0), "stderr: {}", r.stderr);
    assert_eq!(r.stdout.matches("got v0,v1").count(), 2, "{}", r.stdout);
    assert_eq!(r.stdout.matches("WANMPI_BOOTSTRAP=unix:/tmp/wanmpi-").count(), 2, "{}", r.stdout);
    let _ = std::fs::remove_dir_all(&long);
}

#[test]
fn a_failing_exit_code_is_returned_and_names_the_rank() {
    let r = mpirun(&["-n", "3", PROBE, "exchange", "exit:3@1", "sleep:60", "finalize"]);
    assert_eq!(r.code, Some(3), "stderr: {}", r.stderr);
    assert!(r.took < PROMPT, "took {:?}", r.took);
    assert!(r.stderr.contains("mpirun: rank 1 (pid "), "{}", r.stderr);
    assert!(r.stderr.contains("on localhost) exited with code 3; ending the job"), "{}", r.stderr);
}

#[test]
fn a_killed_rank_ends_the_job_within_a_bounded_time() {
    let r = mpirun(&["-n", "3", PROBE, "exchange", "print:pid={pid}", "fence", "kill@2", "sleep:60", "finalize"]);
    assert_eq!(r.code, Some(128 + 9), "stderr: {}", r.stderr);
    assert!(r.took < PROMPT, "took {:?}", r.took);
    assert!(r.stderr.contains("was killed by signal 9 (SIGKILL); ending the job"), "{}", r.stderr);
    let named = numbers_after(&r.stderr, "rank 2 (pid ");
    assert_eq!(named.len(), 1, "{}", r.stderr);
    let pids = numbers_after(&r.stdout, "pid=");
    assert_eq!(pids.len(), 3, "{}", r.stdout);
    assert!(pids.contains(&named[0]), "the message names the killed rank's pid");
    for p in pids {
        assert!(gone(p), "rank process {p} outlived the job");
    }
}

#[test]
fn abort_ends_the_job_with_its_code_and_message() {
    let r = mpirun(&["-n", "2", PROBE, "exchange", "abort:7:input file missing@1", "sleep:60", "finalize"]);
    assert_eq!(r.code, Some(7), "stderr: {}", r.stderr);
    assert!(r.took < PROMPT, "took {:?}", r.took);
    assert!(r.stderr.contains("rank 1 (pid "), "{}", r.stderr);
    assert!(r.stderr.contains("called abort with code 7: input file missing; ending the job"), "{}", r.stderr);
}

#[test]
fn timeout_kills_the_job() {
    let r = mpirun(&["--timeout", "1", "-n", "2", PROBE, "print:started", "sleep:60"]);
    assert_eq!(r.code, Some(124), "stderr: {}", r.stderr);
    assert!(r.took < PROMPT, "took {:?}", r.took);
    assert!(r.stderr.contains("longer than its timeout of 1 s; ending the job"), "{}", r.stderr);
    assert_eq!(r.stdout.matches("started").count(), 2);
}

#[test]
fn ranks_that_ignore_sigterm_are_killed_after_the_grace() {
    let r = mpirun(&["--grace", "0.5", "-n", "2", PROBE, "ignore-term", "exchange", "exit:5@0", "sleep:60", "finalize"]);
    assert_eq!(r.code, Some(5), "stderr: {}", r.stderr);
    assert!(r.took < PROMPT, "took {:?}", r.took);
}

#[test]
fn exiting_without_finalize_while_others_run_is_a_failure() {
    let r = mpirun(&["-n", "2", PROBE, "exchange", "exit:0@0", "sleep:60", "finalize"]);
    assert_eq!(r.code, Some(1), "stderr: {}", r.stderr);
    assert!(r.took < PROMPT, "took {:?}", r.took);
    assert!(r.stderr.contains("rank 0 (pid "), "{}", r.stderr);
    assert!(r.stderr.contains("exited with code 0 without finalizing MPI"), "{}", r.stderr);
}

#[test]
fn programs_that_never_use_mpi_may_simply_exit() {
    let r = mpirun(&["-n", "3", PROBE, "print:plain"]);
    assert_eq!(r.code, Some(0), "stderr: {}", r.stderr);
    assert_eq!(r.stdout, "plain\nplain\nplain\n");
    assert_eq!(r.stderr, "");
}

#[test]
fn a_reported_lost_peer_ends_the_job() {
    let r = mpirun(&["-n", "2", PROBE, "exchange", "lost:0:connection reset@1", "sleep:60", "finalize"]);
    assert_eq!(r.code, Some(1), "stderr: {}", r.stderr);
    assert!(r.took < PROMPT, "took {:?}", r.took);
    assert!(r.stderr.contains("rank 1 (pid "), "{}", r.stderr);
    assert!(r.stderr.contains("lost contact with rank 0: connection reset; ending the job"), "{}", r.stderr);
}

#[test]
fn processes_a_rank_started_are_ended_with_it() {
    let r = mpirun(&["-n", "2", PROBE, "exchange", "grandchild:60@1", "fence", "exit:4@0", "sleep:60", "finalize"]);
    assert_eq!(r.code, Some(4), "stderr: {}", r.stderr);
    assert!(r.took < PROMPT, "took {:?}", r.took);
    let gc = numbers_after(&r.stdout, "grandchild pid ");
    assert_eq!(gc.len(), 1, "{}", r.stdout);
    assert!(gone(gc[0]), "grandchild {} outlived the job", gc[0]);
}

#[test]
fn a_program_that_cannot_start_is_reported() {
    let r = mpirun(&["-n", "2", "/nonexistent/wanmpi-program"]);
    assert_eq!(r.code, Some(127));
    assert!(r.stderr.contains("cannot start rank 0 (/nonexistent/wanmpi-program) on localhost"), "{}", r.stderr);
}

#[test]
fn sigterm_to_mpirun_ends_the_job() {
    let mut c = command(&["-n", "2", PROBE, "print:pid={pid}", "sleep:60"]);
    let started = std::time::Instant::now();
    let mut child = c.spawn().expect("start mpirun");
    // Read until both ranks said their pid, then signal mpirun.
    let mut out = std::io::BufReader::new(child.stdout.take().expect("stdout"));
    let mut pids = Vec::new();
    let mut line = String::new();
    while pids.len() < 2 && started.elapsed() < LIMIT {
        line.clear();
        if std::io::BufRead::read_line(&mut out, &mut line).unwrap_or(0) == 0 {
            break;
        }
        pids.extend(numbers_after(&line, "pid="));
    }
    assert_eq!(pids.len(), 2);
    // SAFETY: signalling the mpirun this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let r = finish(child, started);
    assert_eq!(r.code, Some(128 + 15), "stderr: {}", r.stderr);
    assert!(r.stderr.contains("mpirun received SIGTERM; ending the job"), "{}", r.stderr);
    for p in pids {
        assert!(gone(p), "rank {p} outlived mpirun");
    }
}

/// `mpirun ... > /dev/full`: the ranks' output cannot be written. The job
/// runs to its end (ranks never block on their pipes), but mpirun says what
/// was lost and fails, rather than exit 0 with the output gone.
#[test]
fn output_that_cannot_be_written_fails_the_job() {
    let full = || std::fs::OpenOptions::new().write(true).open("/dev/full").expect("/dev/full");
    let mut c = command(&["-n", "2", PROBE, "print:hello {rank}", "print:again {rank}", "exchange", "finalize"]);
    c.stdout(full());
    let r = mpirun_with(c);
    assert_eq!(r.code, Some(1), "stderr: {}", r.stderr);
    assert!(r.stderr.contains("cannot write the ranks' output to stdout (No space left on device"), "{}", r.stderr);
    assert!(r.stderr.contains("6 lines of the ranks' output could not be written"), "{}", r.stderr);
    // A rank's own failure keeps its exit code.
    let mut c = command(&["-n", "2", PROBE, "print:hello", "exit:3@1"]);
    c.stdout(full());
    assert_eq!(mpirun_with(c).code, Some(3));
    // stderr full too: nothing can be said, but the exit code says it, and
    // mpirun does not panic on its own messages.
    let mut c = command(&["-n", "1", PROBE, "print:hello", "eprint:oops"]);
    c.stdout(full()).stderr(full());
    let started = std::time::Instant::now();
    let r = finish(c.spawn().expect("start mpirun"), started);
    assert_eq!(r.code, Some(1));
    // Output that can be written still succeeds (the control).
    assert_eq!(mpirun(&["-n", "2", PROBE, "print:hello"]).code, Some(0));
}
