//! A blocked call wakes when the progress thread took its message: with the
//! progress thread on and no spinning (the caller sleeps at once), a 1-byte
//! ping-pong on loopback must cost about what it costs without the thread.
//! The thread once read back the wake-up it had rung for the caller, which
//! then slept until its 20 ms timeout or the next packet: 20-60 times the
//! round trip (tcp 935 us against 34 us, sctp 3.8 ms against 62 us).

mod common;
use common::*;
use std::path::Path;

/// Mean 1-byte round trip (us) of pingpong over `transport`.
fn round_trip(pingpong: &str, transport: &str, progress_thread: bool) -> f64 {
    let mut c = command(&["-n", "2", "--transport", transport, pingpong, "--sizes", "1", "--iters", "300", "--csv"]);
    c.env("WANMPI_SPIN_ROUNDS", "0").env("WANMPI_PROGRESS_THREAD", if progress_thread { "1" } else { "0" });
    let r = mpirun_with(c);
    assert_eq!(r.code, Some(0), "{transport}: {}", r.stderr);
    let line = r.stdout.lines().find(|l| l.starts_with("1,")).unwrap_or_else(|| panic!("no 1-byte line: {}", r.stdout));
    line.split(',').nth(2).and_then(|x| x.parse().ok()).expect("rtt")
}

#[test]
fn a_caller_asleep_wakes_when_the_progress_thread_takes_its_message() {
    let pingpong = Path::new(MPIRUN).with_file_name("pingpong");
    if !pingpong.is_file() {
        eprintln!("SKIPPED a_caller_asleep_wakes_when_the_progress_thread_takes_its_message: build pingpong first (cargo build -p wanmpi-examples, same profile)");
        return;
    }
    let pp = pingpong.to_str().unwrap_or_default();
    for transport in ["tcp", "sctp", "wamp"] {
        let without = round_trip(pp, transport, false);
        let with = round_trip(pp, transport, true);
        eprintln!("{transport}: 1-byte round trip {without:.1} us without the progress thread, {with:.1} us with it");
        // Generous for a loaded machine; the fault cost 20x or more.
        assert!(with < 4.0 * without + 150.0, "{transport}: {with:.1} us with the progress thread against {without:.1} us without");
    }
}
