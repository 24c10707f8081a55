//! `mpirun --emulate`: ranks across a WAN emulation made for the job, one per
//! emulated host, and the emulation gone afterwards however the job ended.
//! Needs root (namespaces, TUN) and the workspace's other binaries
//! (wanmpi-emu, pingpong, hello: `cargo build -p wanmpi-emulator -p
//! wanmpi-examples`, which `cargo test --workspace` does); says why and
//! skips without them.

mod common;
use common::*;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A binary of another package of the workspace, built beside ours.
fn sibling(name: &str) -> Option<PathBuf> {
    let dir = Path::new(MPIRUN).parent()?;
    Some(dir.join(name)).filter(|p| p.is_file())
}

/// pingpong, hello and the forwarder, or `None` (with the reason printed).
fn ready(test: &str) -> Option<(PathBuf, PathBuf)> {
    if let Err(e) = wanmpi_emulator::preflight() {
        eprintln!("SKIPPED {test}: {e}");
        return None;
    }
    match (sibling("pingpong"), sibling("hello"), sibling("wanmpi-emu")) {
        (Some(p), Some(h), Some(_)) => Some((p, h)),
        _ => {
            eprintln!("SKIPPED {test}: build pingpong, hello and wanmpi-emu first (cargo build -p wanmpi-examples -p wanmpi-emulator, same profile)");
            None
        }
    }
}

/// The emulation id from mpirun's "emulation ID up" line.
fn emulation_id(stderr: &str) -> String {
    let line = stderr.lines().find(|l| l.starts_with("mpirun: emulation ")).unwrap_or_else(|| panic!("no emulation line in: {stderr}"));
    line.split_whitespace().nth(2).unwrap_or_default().to_string()
}

/// Nothing of emulation `id` is left: namespaces, state directory.
fn assert_gone(id: &str) {
    let prefix = format!("wemu{id}-");
    let left: Vec<String> = wanmpi_emulator::netns::list_netns().into_iter().filter(|n| n.starts_with(&prefix)).collect();
    assert!(left.is_empty(), "namespaces left behind: {left:?}");
    let dir = Path::new(wanmpi_emulator::state::DEFAULT_ROOT).join(id);
    assert!(!dir.exists(), "state directory {} left behind", dir.display());
}

#[test]
fn pingpong_round_trips_match_the_emulated_delay() {
    let Some((pingpong, _)) = ready("pingpong_round_trips_match_the_emulated_delay") else { return };
    let pp = pingpong.to_str().unwrap_or_default();
    for delay in [0u32, 20, 40, 80] {
        // A second run when the first is slow: on a loaded 2-core machine
        // one scheduling stall of a few tens of ms lifts a mean of 10 round
        // trips past the slack; twice in a row means the delay is wrong.
        let slow = (0..2).map(|_| pingpong_at(pp, delay)).find(|slow| slow.is_empty());
        assert!(slow.is_some(), "delay {delay} ms: round trips outside the bound in two runs (see above)");
    }
}

/// One emulated ping-pong at `delay` ms: the sizes whose mean round trip
/// is outside [2 x delay, 2 x delay + slack], described.
fn pingpong_at(pp: &str, delay: u32) -> Vec<String> {
    let profile = format!("delay={delay}ms");
    let r = mpirun(&["-n", "2", "--emulate", &profile, pp, "--sizes", "1,1024", "--iters", "10", "--csv"]);
    assert_eq!(r.code, Some(0), "delay {delay}: {}", r.stderr);
    let id = emulation_id(&r.stderr);
    assert_gone(&id);
    let mut slow = vec![];
    for size in ["1", "1024"] {
        let line = r.stdout.lines().find(|l| l.split(',').next() == Some(size)).unwrap_or_else(|| panic!("no {size} B line: {}", r.stdout));
        let rtt_ms: f64 = line.split(',').nth(2).and_then(|x| x.parse::<f64>().ok()).expect("rtt") / 1000.0;
        let want = 2.0 * delay as f64;
        // Below 2x delay is impossible; above it, the forwarder's and the
        // runtime's own costs (a fraction of a ms) plus scheduling noise
        // on a loaded 2-core machine.
        let slack = 3.0f64.max(0.05 * want);
        eprintln!("delay {delay} ms, {size} B: RTT {rtt_ms:.3} ms (want {want} .. {})", want + slack);
        assert!(rtt_ms >= want - 0.2, "delay {delay} ms, {size} B: RTT {rtt_ms} ms is below the emulated {want} ms");
        if rtt_ms > want + slack {
            slow.push(format!("{size} B: {rtt_ms:.3} ms > {want} + {slack}"));
        }
    }
    slow
}

#[test]
fn one_rank_per_emulated_host() {
    let Some((_, hello)) = ready("one_rank_per_emulated_host") else { return };
    let r = mpirun(&["-n", "4", "--emulate", "delay=2ms", "--tag-output", hello.to_str().unwrap_or_default()]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(r.stdout.matches("hello from rank").count(), 4, "{}", r.stdout);
    assert!(r.stdout.contains("sum of ranks = 6 (expected 6)"), "{}", r.stdout);
    assert_gone(&emulation_id(&r.stderr));
    // Each rank sees its own host's address on tun0 and publishes it.
    let script = "echo addr=$WANMPI_ADDR tun0=$(ip -o -4 addr show dev tun0 | awk '{print $4}')";
    let r = mpirun(&["-n", "4", "--emulate", "delay=1ms", "--tag-output", "sh", "-c", script]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    for i in 0..4 {
        let want = format!("[{i}] addr=198.18.0.{n} tun0=198.18.0.{n}/24", n = i + 1);
        assert!(r.stdout.contains(&want), "missing {want:?} in {}", r.stdout);
    }
}

#[test]
fn congestion_control_is_set_and_reported() {
    let Some(_) = ready("congestion_control_is_set_and_reported") else { return };
    let r =
        mpirun(&["-n", "2", "--emulate", "delay=1ms", "--emulate-cc", "reno", "--tag-output", "cat", "/proc/sys/net/ipv4/tcp_congestion_control"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stderr.contains("TCP congestion control reno (set by --emulate-cc)"), "{}", r.stderr);
    assert!(r.stdout.contains("[0] reno") && r.stdout.contains("[1] reno"), "{}", r.stdout);
    let bad = mpirun(&["-n", "2", "--emulate", "delay=1ms", "--emulate-cc", "vegas-ish", "true"]);
    assert_eq!(bad.code, Some(2), "{}", bad.stderr);
}

#[test]
fn mtu_is_1500_by_default_and_set_by_emulate_mtu() {
    let Some(_) = ready("mtu_is_1500_by_default_and_set_by_emulate_mtu") else { return };
    let script = "ip -o link show dev tun0 | grep -o 'mtu [0-9]*'";
    for (extra, want) in [(None, 1500), (Some("65000"), 65000)] {
        let mut args = vec!["-n", "2", "--emulate", "delay=1ms", "--tag-output"];
        if let Some(m) = extra {
            args.extend(["--emulate-mtu", m]);
        }
        args.extend(["sh", "-c", script]);
        let r = mpirun(&args);
        assert_eq!(r.code, Some(0), "{}", r.stderr);
        assert!(r.stderr.contains(&format!(", MTU {want};")), "mpirun should report MTU {want}: {}", r.stderr);
        assert!(r.stdout.contains(&format!("[0] mtu {want}")) && r.stdout.contains(&format!("[1] mtu {want}")), "{}", r.stdout);
    }
}

#[test]
fn emulation_is_torn_down_after_failure_timeout_and_sigint() {
    let Some(_) = ready("emulation_is_torn_down_after_failure_timeout_and_sigint") else { return };
    let failed = mpirun(&["-n", "2", "--emulate", "delay=1ms", "sh", "-c", "exit $((WANMPI_RANK * 3))"]);
    assert_eq!(failed.code, Some(3), "{}", failed.stderr);
    assert!(failed.stderr.contains("rank 1") && failed.stderr.contains("exited with code 3"), "{}", failed.stderr);
    assert_gone(&emulation_id(&failed.stderr));

    let slow = mpirun(&["-n", "2", "--emulate", "delay=1ms", "--timeout", "1", "sleep", "30"]);
    assert_eq!(slow.code, Some(124), "{}", slow.stderr);
    assert!(slow.took < Duration::from_secs(20), "took {:?}", slow.took);
    assert_gone(&emulation_id(&slow.stderr));

    // SIGINT once the emulation is up: the job ends, the emulation goes.
    let started = Instant::now();
    let mut child = command(&["-n", "2", "--emulate", "delay=1ms", "sleep", "30"]).spawn().expect("spawn mpirun");
    let mut err = BufReader::new(child.stderr.take().expect("stderr"));
    let mut first = String::new();
    err.read_line(&mut first).expect("read the emulation line");
    let id = emulation_id(&first);
    // Keep reading so mpirun's last messages never meet a closed pipe.
    let rest = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut err, &mut s);
        s
    });
    // SAFETY: kill has no memory preconditions; the pid is our child's.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let r = finish(child, started);
    let rest = rest.join().unwrap_or_default();
    assert!(rest.contains("received SIGINT"), "{rest}");
    assert_eq!(r.code, Some(130), "mpirun after SIGINT");
    assert!(r.took < Duration::from_secs(20), "took {:?}", r.took);
    assert_gone(&id);
}
