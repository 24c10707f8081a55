//! Issue 26 on tcp with no NAT flag: the cloud case (each VM behind 1:1
//! NAT, the hostfile naming public addresses) and the firewall case (one
//! site masquerading, letting nothing in, mpirun at the public site) run a
//! 2-rank allreduce and a 1 MiB exchange over `--transport tcp`, through
//! emulated hosts that share nothing but the network (the emulator's
//! `wanmpi_emulator::scenario`, the ssh-like agent). The ranks' statistics
//! show which candidate each connection used. An ignored test measures the
//! 8 B ping-pong latency through 1:1 NAT against the same links without NAT
//! (`-- --ignored --nocapture nat_latency`; docs/benchmarks.md "NAT").
//!
//! Needs root and the sibling binaries (hello, pingpong, wanmpi-emu); says
//! why and skips otherwise.

mod common;
use common::*;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};
use wanmpi_emulator::{scenario, UpOptions};

/// Past tcp's path timeout (10 s) with room: a job that cannot connect
/// reports its own error first.
const JOB_LIMIT: Duration = Duration::from_secs(60);

fn sibling(name: &str) -> Option<PathBuf> {
    Some(Path::new(MPIRUN).parent()?.join(name)).filter(|p| p.is_file())
}

fn ready(test: &str) -> Option<(PathBuf, PathBuf, PathBuf)> {
    if let Err(e) = wanmpi_emulator::preflight() {
        println!("SKIPPED {test}: {e}");
        return None;
    }
    match (sibling("hello"), sibling("pingpong"), sibling("wanmpi-emu")) {
        (Some(h), Some(p), Some(e)) => Some((h, p, e)),
        _ => {
            println!("SKIPPED {test}: build hello, pingpong and wanmpi-emu first (cargo build --release -p wanmpi-examples -p wanmpi-emulator)");
            None
        }
    }
}

/// Runs `cmd` to its end, killed past `JOB_LIMIT`: (succeeded, stdout, stderr, took).
fn run_job(mut cmd: std::process::Command) -> (bool, String, String, Duration) {
    let started = Instant::now();
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("start mpirun in the driver host");
    let read = |r: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            if let Some(mut r) = r {
                let _ = r.read_to_string(&mut s);
            }
            s
        })
    };
    let out = read(child.stdout.take().map(|s| Box::new(s) as Box<dyn std::io::Read + Send>));
    let err = read(child.stderr.take().map(|s| Box::new(s) as Box<dyn std::io::Read + Send>));
    let ok = loop {
        if let Some(st) = child.try_wait().expect("try_wait") {
            break st.success();
        }
        if started.elapsed() > JOB_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            break false;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    (ok, out.join().unwrap_or_default(), err.join().unwrap_or_default(), started.elapsed())
}

/// One scenario at a time: they share two cores.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

/// Scenario `name` on tcp: the allreduce and the 1 MiB exchange pass; the
/// statistics' path lines are returned.
fn tcp_scenario(name: &str) {
    let _g = serial();
    let Some((hello, pingpong, emu_bin)) = ready(name) else { return };
    let s = scenario::by_name(name).unwrap_or_else(|| panic!("no scenario {name}"));
    std::env::set_var("WANMPI_EMU_BIN", &emu_bin);
    let setup = s.up("delay=5ms", &UpOptions { forwarder_exe: Some(emu_bin.clone()), ..UpOptions::default() }).expect("scenario up");
    let extra = ["--transport", "tcp", "-x", "WANMPI_STATS=1"];
    let (ok, out, err, took) = run_job(setup.mpirun(Path::new(MPIRUN), &extra, &hello, &[]).expect("mpirun"));
    assert!(ok && out.contains("allreduce: sum of ranks = 1 (expected 1)"), "{name}: hello in {took:?}\nstdout:\n{out}\nstderr:\n{err}");
    let paths: Vec<&str> = err.lines().filter(|l| l.contains("path to rank")).collect();
    println!("{name}: hello in {:.1} s; {}", took.as_secs_f64(), paths.join("; "));
    assert_eq!(paths.len(), 2, "each rank names its path\n{err}");
    let (ok, out, err, took) =
        run_job(setup.mpirun(Path::new(MPIRUN), &extra, &pingpong, &["--sizes", "1048576", "--iters", "3", "--csv"]).expect("mpirun"));
    let line = out.lines().find(|l| l.starts_with("1048576,"));
    assert!(ok && line.is_some(), "{name}: 1 MiB exchange in {took:?}\nstdout:\n{out}\nstderr:\n{err}");
    println!("{name}: 1 MiB exchange {}", line.unwrap_or_default());
}

#[test]
fn cloud_one_to_one_nat_on_tcp() {
    tcp_scenario("cloud");
}

#[test]
fn firewall_masquerading_site_on_tcp() {
    tcp_scenario("firewall");
}

/// `--bootstrap tcp:PUBLIC:PORT` with mpirun's public address, on no
/// interface of its host behind 1:1 NAT: the service listens on the
/// wildcard and the far rank reaches it at the address given.
#[test]
fn the_service_at_mpiruns_public_address_behind_one_to_one_nat() {
    let _g = serial();
    let Some((hello, _, emu_bin)) = ready("bootstrap_public") else { return };
    std::env::set_var("WANMPI_EMU_BIN", &emu_bin);
    let s = scenario::by_name("cloud").expect("scenario");
    let setup = s.up("delay=2ms", &UpOptions { forwarder_exe: Some(emu_bin.clone()), ..UpOptions::default() }).expect("scenario up");
    let public = setup.emu.nat(s.driver).expect("driver's NAT").public;
    let kv = format!("tcp:{public}:47123");
    let extra = ["--transport", "tcp", "--bootstrap", kv.as_str()];
    let (ok, out, err, took) = run_job(setup.mpirun(Path::new(MPIRUN), &extra, &hello, &[]).expect("mpirun"));
    assert!(ok && out.contains("allreduce: sum of ranks = 1 (expected 1)"), "hello in {took:?}\nstdout:\n{out}\nstderr:\n{err}");
}

/// Both rank hosts behind symmetric NATs, mpirun public: tcp has no path
/// between them (that takes a relay, issue 26 part 4). The job fails in
/// seconds, not after tcp's 60 s setup limit, naming both ranks and the
/// candidates tried.
#[test]
fn no_tcp_path_between_two_symmetric_nats_is_named_within_seconds() {
    let _g = serial();
    let Some((hello, _, emu_bin)) = ready("no_path") else { return };
    std::env::set_var("WANMPI_EMU_BIN", &emu_bin);
    let s = scenario::by_name("symmetric").expect("scenario");
    let setup = s.up("delay=2ms", &UpOptions { forwarder_exe: Some(emu_bin.clone()), ..UpOptions::default() }).expect("scenario up");
    let (ok, out, err, took) = run_job(setup.mpirun(Path::new(MPIRUN), &["--transport", "tcp"], &hello, &[]).expect("mpirun"));
    println!("failed as it must in {:.1} s:\n{err}", took.as_secs_f64());
    assert!(!ok, "no path, yet it ran:\n{out}");
    assert!(took < Duration::from_secs(15), "took {took:?}\n{err}");
    assert!(err.contains("found no path to rank") && err.contains("(public)") && err.contains("did not reach rank"), "{err}");
}

/// mpirun on a laptop behind NAT, ranks on public hosts: no rank can dial
/// the key/value service (tunnelling it through the agent is not done).
/// The far ranks fail naming every address of the service they tried.
#[test]
fn mpirun_behind_nat_fails_naming_the_service_addresses_tried() {
    let _g = serial();
    let Some((hello, _, emu_bin)) = ready("laptop") else { return };
    std::env::set_var("WANMPI_EMU_BIN", &emu_bin);
    let s = scenario::by_name("laptop").expect("scenario");
    let setup = s.up("delay=2ms", &UpOptions { forwarder_exe: Some(emu_bin.clone()), ..UpOptions::default() }).expect("scenario up");
    let (ok, out, err, took) = run_job(setup.mpirun(Path::new(MPIRUN), &["--transport", "tcp"], &hello, &[]).expect("mpirun"));
    println!("failed as it must in {:.1} s:\n{err}", took.as_secs_f64());
    assert!(!ok, "ran:\n{out}");
    assert!(err.contains("no address of the key/value service answered"), "{err}");
}

/// The 8 B round trip on tcp through 1:1 NAT ("cloud") and on the same
/// links without NAT ("open"), interleaved rounds, medians printed.
#[test]
#[ignore = "a measurement: run with --ignored --nocapture"]
fn nat_latency() {
    let _g = serial();
    let Some((_, pingpong, emu_bin)) = ready("nat_latency") else { return };
    std::env::set_var("WANMPI_EMU_BIN", &emu_bin);
    let profile = std::env::var("NAT_BENCH_PROFILE").unwrap_or_else(|_| "delay=5ms".into());
    let rounds: usize = std::env::var("NAT_BENCH_ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(5);
    let mut rtts: Vec<(&str, Vec<f64>)> = vec![("open", vec![]), ("cloud", vec![])];
    let opts = UpOptions { forwarder_exe: Some(emu_bin.clone()), ..UpOptions::default() };
    for _ in 0..rounds {
        for (name, v) in rtts.iter_mut() {
            let setup = scenario::by_name(name).expect("scenario").up(&profile, &opts).expect("scenario up");
            let cmd =
                setup.mpirun(Path::new(MPIRUN), &["--transport", "tcp"], &pingpong, &["--sizes", "8", "--iters", "200", "--csv"]).expect("mpirun");
            let (ok, out, err, _) = run_job(cmd);
            let rtt = out.lines().find(|l| l.starts_with("8,")).and_then(|l| l.split(',').nth(2)?.parse::<f64>().ok());
            assert!(ok && rtt.is_some(), "{name}\nstdout:\n{out}\nstderr:\n{err}");
            v.push(rtt.unwrap_or_default());
        }
    }
    let median = |v: &[f64]| {
        let mut s = v.to_vec();
        s.sort_by(|a, b| a.total_cmp(b));
        s[s.len() / 2]
    };
    let (open, cloud) = (median(&rtts[0].1), median(&rtts[1].1));
    println!("profile {profile}, {rounds} rounds of 200 round trips of 8 B over tcp");
    for (name, v) in &rtts {
        println!("{name}: rtt_us {:?}, median {:.1}", v, median(v));
    }
    println!("1:1 NAT / no NAT: {:.3}", cloud / open);
}
