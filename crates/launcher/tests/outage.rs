//! A WAN outage in the middle of a job (issue 25): every link of a 2-rank
//! ping-pong across the emulator (20 ms one way, MTU 1500) is cut for 35 s
//! (usrsctp gave an association up after 30 retransmissions of one chunk,
//! a 30 s outage at one retransmission a second).
//! The job rides through on each transport and resumes within a second or
//! two of the path's return; with a shorter `--outage-limit` the silent peer
//! is given up at the limit with a message that says the path was silent.
//! Needs root (namespaces, TUN) and the workspace's pingpong and wanmpi-emu;
//! says why and skips without them.

mod common;
use common::*;
use std::path::{Path, PathBuf};
use std::time::Duration;

const DELAY_MS: f64 = 20.0;
const ITERS: usize = 150;
const OUTAGE_S: f64 = 35.0;

fn pingpong(test: &str) -> Option<PathBuf> {
    if let Err(e) = wanmpi_emulator::preflight() {
        eprintln!("SKIPPED {test}: {e}");
        return None;
    }
    let dir = Path::new(MPIRUN).parent()?;
    match (dir.join("pingpong"), dir.join("wanmpi-emu")) {
        (p, e) if p.is_file() && e.is_file() => Some(p),
        _ => {
            eprintln!("SKIPPED {test}: build pingpong and wanmpi-emu first (cargo build -p wanmpi-examples -p wanmpi-emulator, same profile)");
            None
        }
    }
}

/// A topology file: two hosts 20 ms apart whose link is down from 2 s
/// after the forwarder starts (the ranks start within a second) for
/// `outage_s`.
fn topology(name: &str, outage_s: f64) -> PathBuf {
    let path = std::env::temp_dir().join(format!("wanmpi-outage-{name}-{}.conf", std::process::id()));
    let text = format!("hosts 2\ndefault delay={DELAY_MS}ms\nat 2s down 0 <-> 1\nat {}ms up 0 <-> 1\n", 2000.0 + outage_s * 1000.0);
    std::fs::write(&path, text).expect("write topology");
    path
}

/// The longest round trip the ping-pong printed, in seconds.
fn longest_rtt(stdout: &str) -> f64 {
    let line = stdout.lines().find(|l| l.starts_with("1,")).unwrap_or_else(|| panic!("no result line: {stdout}"));
    line.split(',').nth(4).and_then(|x| x.parse::<f64>().ok()).expect("max_rtt_us") / 1e6
}

fn ride_through(transport: &str) -> Result<f64, String> {
    let pp = pingpong("outage").ok_or("skipped")?;
    let topo = topology(transport, OUTAGE_S);
    let iters = ITERS.to_string();
    let args = ["-n", "2", "--transport", transport, "--emulate", topo.to_str().unwrap_or_default(), pp.to_str().unwrap_or_default()];
    let r = mpirun(&[&args[..], &["--sizes", "1", "--iters", &iters, "--csv"]].concat());
    let _ = std::fs::remove_file(&topo);
    if r.code != Some(0) {
        return Err(format!("{transport}: the job did not ride through a {OUTAGE_S} s outage ({:?}): {}", r.code, r.stderr));
    }
    // The round trip caught by the outage lasted at most the outage, one
    // round trip (it may have started just before the cut) and the time
    // the transport took to notice the path was back.
    let longest = longest_rtt(&r.stdout);
    let beyond = longest - OUTAGE_S;
    eprintln!("{transport}: the longest of {ITERS} round trips took {longest:.2} s across a {OUTAGE_S} s outage: {beyond:.2} s beyond it");
    Ok(beyond)
}

#[test]
fn a_long_outage_is_ridden_through_and_resumes_promptly() {
    if pingpong("a_long_outage_is_ridden_through_and_resumes_promptly").is_none() {
        return;
    }
    let runs: Vec<(&str, Result<f64, String>)> = std::thread::scope(|s| {
        let hs: Vec<_> = ["wamp", "sctp"].map(|t| (t, s.spawn(move || ride_through(t)))).into_iter().collect();
        hs.into_iter().map(|(t, h)| (t, h.join().expect("thread"))).collect()
    });
    for (t, r) in runs {
        let beyond = r.unwrap_or_else(|e| panic!("{e}"));
        // The target is 2 round trips + 1 s; 0.5 s more for a loaded
        // machine (sctp with usrsctp's backed-off timer lost 4-5 s here).
        assert!(beyond < 2.0 * 2.0 * DELAY_MS / 1000.0 + 1.5, "{t}: the job stood still {beyond:.2} s beyond the outage");
    }
}

#[test]
fn past_the_outage_limit_the_silent_peer_is_given_up_naming_the_path() {
    let Some(pp) = pingpong("past_the_outage_limit_the_silent_peer_is_given_up_naming_the_path") else { return };
    for transport in ["wamp", "sctp"] {
        let topo = topology(&format!("limit-{transport}"), 12.0);
        let args = ["-n", "2", "--outage-limit", "3", "--transport", transport, "--emulate", topo.to_str().unwrap_or_default()];
        let r = mpirun(&[&args[..], &[pp.to_str().unwrap_or_default(), "--sizes", "1", "--iters", "1000", "--csv"]].concat());
        let _ = std::fs::remove_file(&topo);
        assert_ne!(r.code, Some(0), "{transport}: the job should end at the limit: {}", r.stderr);
        assert!(r.stderr.contains("no answer") && r.stderr.contains("outage limit"), "{transport}: {}", r.stderr);
        // Cut at 2 s, given up about 3 s later: well before the link returns at 14 s.
        assert!(r.took < Duration::from_secs(12), "{transport}: took {:?}: {}", r.took, r.stderr);
        eprintln!("{transport}: given up after {:?}: {}", r.took, r.stderr.lines().find(|l| l.contains("no answer")).unwrap_or_default());
    }
}
