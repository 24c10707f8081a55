//! The UDP transports across NAT (issue 26, parts 1 and 3), as separate
//! machines would see it: emulated hosts with their own `/tmp`, each
//! behind its kind of NAT (nftables in the host), mpirun started through
//! the ssh-like agent on a public host so the key/value service (and its
//! UDP reflector) is reachable, ranks on the NATed hosts.
//!
//! - both sites behind masquerading NATs: wamp and sctp (no NAT flag) run
//!   an allreduce and a 1 MiB exchange, found by hole punching;
//! - both behind symmetric NATs: the job fails within seconds, naming the
//!   ranks and candidates tried;
//! - the NATs' UDP timeout cut to 30 s and the job idle for 70 s: the
//!   keepalives hold the mappings;
//! - a NAT rebinding mid-job (the mapping expires and comes back on
//!   another port): the peer is followed, nothing lost or duplicated.
//!
//! Needs root and the sibling binaries (hello, pingpong, idle, wanmpi-emu);
//! says why and skips otherwise.

mod common;
use common::*;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use wanmpi_emulator::scenario::{self, Scenario, Setup};
use wanmpi_emulator::{NatKind, UpOptions};

/// Both sites behind masquerading NATs, mpirun on a public host.
const MASQ_BOTH: Scenario = Scenario {
    name: "masq-both-public-driver",
    about: "ranks at two sites behind masquerading NATs, mpirun on a public host",
    nat: &[NatKind::None, NatKind::Masq, NatKind::Masq],
    driver: 0,
    ranks: &[1, 2],
    sites: &[],
    site_nat: &[],
};

const JOB_LIMIT: Duration = Duration::from_secs(150);

fn sibling(name: &str) -> Option<PathBuf> {
    let dir = Path::new(MPIRUN).parent()?;
    Some(dir.join(name)).filter(|p| p.is_file())
}

/// The emulator's binary, or None with the reason printed.
fn ready(test: &str, programs: &[&str]) -> Option<(PathBuf, Vec<PathBuf>)> {
    if let Err(e) = wanmpi_emulator::preflight() {
        println!("SKIPPED {test}: {e}");
        return None;
    }
    let progs: Option<Vec<PathBuf>> = programs.iter().map(|p| sibling(p)).collect();
    match (sibling("wanmpi-emu"), progs) {
        (Some(e), Some(p)) => Some((e, p)),
        _ => {
            println!("SKIPPED {test}: build {programs:?} and wanmpi-emu first (cargo build --release -p wanmpi-examples -p wanmpi-emulator)");
            None
        }
    }
}

fn up(s: &Scenario, emu_bin: &Path) -> Setup {
    let opts = UpOptions { forwarder_exe: Some(emu_bin.to_path_buf()), ..UpOptions::default() };
    std::env::set_var("WANMPI_EMU_BIN", emu_bin);
    s.up("delay=5ms", &opts).unwrap_or_else(|e| panic!("{}: bringing the scenario up: {e}", s.name))
}

struct Job {
    ok: bool,
    stdout: String,
    stderr: String,
    took: Duration,
}

/// Runs `cmd` (bounded by JOB_LIMIT); `on_line` sees each stdout line as
/// it comes.
fn run_job(mut cmd: Command, mut on_line: impl FnMut(&str)) -> Job {
    let started = Instant::now();
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("start mpirun in the driver host");
    let (tx, rx) = mpsc::channel::<String>();
    let out = child.stdout.take().map(|s| {
        std::thread::spawn(move || {
            for line in BufReader::new(s).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        })
    });
    let err = child.stderr.take().map(|mut s| {
        std::thread::spawn(move || {
            let mut t = String::new();
            let _ = s.read_to_string(&mut t);
            t
        })
    });
    let mut stdout = String::new();
    let status = loop {
        while let Ok(line) = rx.try_recv() {
            on_line(&line);
            stdout += &line;
            stdout.push('\n');
        }
        if let Some(st) = child.try_wait().expect("try_wait") {
            break Some(st);
        }
        if started.elapsed() > JOB_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        // Bounded: wakes for the next line or every 50 ms to check the child.
        if let Ok(line) = rx.recv_timeout(Duration::from_millis(50)) {
            on_line(&line);
            stdout += &line;
            stdout.push('\n');
        }
    };
    if let Some(h) = out {
        let _ = h.join();
    }
    while let Ok(line) = rx.try_recv() {
        stdout += &line;
        stdout.push('\n');
    }
    let stderr = err.and_then(|h| h.join().ok()).unwrap_or_default();
    Job { ok: status.is_some_and(|s| s.success()), stdout, stderr, took: started.elapsed() }
}

/// mpirun's options for `transport`, with its counters printed at the end.
fn transport_args(transport: &str) -> Vec<String> {
    let stats = if transport == "sctp" { "WANMPI_SCTP_STATS=1" } else { "WANMPI_WAMP_STATS=1" };
    vec!["--transport".into(), transport.into(), "-x".into(), stats.into()]
}

fn hello_and_exchange(setup: &Setup, transport: &str, hello: &Path, pingpong: &Path) -> Result<String, String> {
    let args = transport_args(transport);
    let extra: Vec<&str> = args.iter().map(String::as_str).collect();
    let h = run_job(setup.mpirun(Path::new(MPIRUN), &extra, hello, &[]).expect("mpirun command"), |_| {});
    let mut report = format!("{transport}: hello {} in {:.1} s\n", if h.ok { "ok" } else { "FAILED" }, h.took.as_secs_f64());
    if !h.ok || !h.stdout.contains("allreduce: sum of ranks = 1 (expected 1)") {
        return Err(format!("{report}stdout:\n{}\nstderr:\n{}", h.stdout, h.stderr));
    }
    let pp =
        run_job(setup.mpirun(Path::new(MPIRUN), &extra, pingpong, &["--sizes", "1048576", "--iters", "3", "--csv"]).expect("mpirun command"), |_| {});
    let line = pp.stdout.lines().find(|l| l.starts_with("1048576,")).map(str::to_string);
    report += &format!(
        "{transport}: 1 MiB exchange {} in {:.1} s: {}\n",
        if pp.ok { "ok" } else { "FAILED" },
        pp.took.as_secs_f64(),
        line.clone().unwrap_or_default()
    );
    if !pp.ok || line.is_none() {
        return Err(format!("{report}stdout:\n{}\nstderr:\n{}", pp.stdout, pp.stderr));
    }
    Ok(report)
}

/// One scenario at a time: they share two cores.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

#[test]
fn both_sites_behind_masquerading_nat_wamp_and_sctp_punch_through() {
    let _g = serial();
    let Some((emu, progs)) = ready("both_sites_behind_masquerading_nat", &["hello", "pingpong"]) else { return };
    let sc = std::env::var("NAT_UDP_SCEN").ok().and_then(|n| scenario::by_name(&n)).unwrap_or(MASQ_BOTH);
    let setup = up(&sc, &emu);
    for transport in ["wamp", "sctp"] {
        match hello_and_exchange(&setup, transport, &progs[0], &progs[1]) {
            Ok(r) => println!("{r}"),
            Err(r) => panic!("{r}"),
        }
    }
}

#[test]
fn both_sites_behind_symmetric_nat_fail_fast_naming_ranks_and_candidates() {
    let _g = serial();
    let Some((emu, progs)) = ready("both_sites_behind_symmetric_nat", &["hello"]) else { return };
    let setup = up(&scenario::by_name("symmetric").expect("known scenario"), &emu);
    for transport in ["wamp", "sctp"] {
        let args = transport_args(transport);
        let extra: Vec<&str> = args.iter().map(String::as_str).collect();
        let j = run_job(setup.mpirun(Path::new(MPIRUN), &extra, &progs[0], &[]).expect("mpirun command"), |_| {});
        println!("{transport}: failed in {:.1} s:\n{}", j.took.as_secs_f64(), j.stderr);
        assert!(!j.ok, "{transport}: no path, yet the job passed:\n{}", j.stdout);
        assert!(j.stderr.contains("no path from rank"), "{transport}: the error must say there is no path:\n{}", j.stderr);
        // The public addresses of both NATs appear among the candidates.
        for h in [1, 2] {
            let public = setup.emu.nat(h).expect("nat").public.to_string();
            assert!(j.stderr.contains(&public), "{transport}: names {public}:\n{}", j.stderr);
        }
        assert!(j.took < Duration::from_secs(12), "{transport}: took {:.1} s", j.took.as_secs_f64());
    }
}

/// Sets the UDP conntrack timeouts of host `h`'s NAT (plain and
/// "stream", the one a flow with traffic both ways gets).
fn udp_timeout(setup: &Setup, h: usize, secs: u32) {
    for key in ["net.netfilter.nf_conntrack_udp_timeout", "net.netfilter.nf_conntrack_udp_timeout_stream"] {
        setup.emu.set_sysctl(h, key, &secs.to_string()).unwrap_or_else(|e| panic!("setting {key} in host {h}: {e}"));
    }
}

#[test]
fn an_idle_job_keeps_its_path_through_nats_with_a_30_s_udp_timeout() {
    let _g = serial();
    let Some((emu, progs)) = ready("an_idle_job_keeps_its_path", &["idle"]) else { return };
    let setup = up(&MASQ_BOTH, &emu);
    for h in [1, 2] {
        udp_timeout(&setup, h, 30);
    }
    for transport in ["wamp", "sctp"] {
        let args = transport_args(transport);
        let extra: Vec<&str> = args.iter().map(String::as_str).collect();
        let j = run_job(setup.mpirun(Path::new(MPIRUN), &extra, &progs[0], &["--idle", "70"]).expect("mpirun command"), |_| {});
        println!("{transport}: idle job in {:.1} s: {}", j.took.as_secs_f64(), j.stdout.trim());
        assert!(j.ok && j.stdout.contains("idle: ok after"), "{transport}:\nstdout:\n{}\nstderr:\n{}", j.stdout, j.stderr);
    }
}

/// Host `h`'s NAT maps new flows into ports 61000-61999 from now on (its
/// public address unchanged): with the old mapping expired, the rank's
/// next datagram leaves from a new port, as after a NAT reboot or a
/// carrier-grade NAT's rebinding.
fn remap_ports(setup: &Setup, h: usize) {
    let public = setup.emu.nat(h).expect("nat").public;
    let dev = wanmpi_emulator::addr::tun_name(0);
    // UDP into the new range; anything else (the key/value service's TCP)
    // as before.
    let script = format!(
        "flush chain ip wemu_nat post\n\
         add rule ip wemu_nat post oifname \"{dev}\" meta l4proto udp snat to {public}:61000-61999\n\
         add rule ip wemu_nat post oifname \"{dev}\" snat to {public}\n"
    );
    let mut c = setup.emu.command(h, "nft").expect("nft in the host");
    let mut child = c.args(["-f", "-"]).stdin(Stdio::piped()).spawn().expect("nft");
    std::io::Write::write_all(child.stdin.as_mut().expect("stdin"), script.as_bytes()).expect("feed nft");
    drop(child.stdin.take());
    assert!(child.wait().expect("nft").success(), "nft refused:\n{script}");
}

#[test]
fn a_nat_rebinding_mid_job_is_followed_with_nothing_lost_or_duplicated() {
    let _g = serial();
    let Some((emu, progs)) = ready("a_nat_rebinding_mid_job", &["idle"]) else { return };
    // Rank 0 public (it follows), rank 1 behind a masquerading NAT that
    // rebinds while the job is idle.
    let setup = up(&scenario::by_name("firewall").expect("known scenario"), &emu);
    for transport in ["wamp", "sctp"] {
        // Mappings expire 2 s after the last datagram, so between two
        // keepalives (5 s) the NAT forgets the flow.
        udp_timeout(&setup, 1, 2);
        let args = transport_args(transport);
        let extra: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut remapped = None;
        let j = run_job(setup.mpirun(Path::new(MPIRUN), &extra, &progs[0], &["--idle", "20"]).expect("mpirun command"), |line| {
            if line.contains("idle: first exchange done") && remapped.is_none() {
                remap_ports(&setup, 1);
                remapped = Some(Instant::now());
            }
        });
        println!("{transport}: rebinding job in {:.1} s: {}\n{}", j.took.as_secs_f64(), j.stdout.trim(), j.stderr);
        assert!(remapped.is_some(), "{transport}: the job never reached its idle phase:\n{}\n{}", j.stdout, j.stderr);
        assert!(j.ok && j.stdout.contains("idle: ok after"), "{transport}:\nstdout:\n{}\nstderr:\n{}", j.stdout, j.stderr);
        // Rank 0 followed rank 1 to a port of the new range.
        let moved = j.stderr.lines().any(|l| l.contains(":61") && l.contains("address moved"));
        assert!(moved, "{transport}: rank 0 must now send to a port in 61000-61999:\n{}", j.stderr);
        // Back to the NAT's first behaviour for the next transport.
        udp_timeout(&setup, 1, 30);
        let script = format!(
            "flush chain ip wemu_nat post\nadd rule ip wemu_nat post oifname \"{}\" snat to {}\n",
            wanmpi_emulator::addr::tun_name(0),
            setup.emu.nat(1).expect("nat").public
        );
        let mut c = setup.emu.command(1, "nft").expect("nft");
        let mut child = c.args(["-f", "-"]).stdin(Stdio::piped()).spawn().expect("nft");
        std::io::Write::write_all(child.stdin.as_mut().expect("stdin"), script.as_bytes()).expect("feed nft");
        drop(child.stdin.take());
        assert!(child.wait().expect("nft").success());
    }
}

/// The same three hosts without NAT: the latency baseline.
const OPEN_THREE: Scenario = Scenario {
    name: "open-three",
    about: "three public hosts, mpirun on the first, ranks on the others",
    nat: &[NatKind::None, NatKind::None, NatKind::None],
    driver: 0,
    ranks: &[1, 2],
    sites: &[],
    site_nat: &[],
};

/// One job's average 8-byte ping-pong round trip, in us, on `transport`
/// in scenario `s` (brought up for it and torn down after).
fn latency_us(s: &Scenario, emu: &Path, pingpong: &Path, transport: &str) -> f64 {
    let setup = up(s, emu);
    let args = ["--transport", transport];
    let j = run_job(setup.mpirun(Path::new(MPIRUN), &args, pingpong, &["--sizes", "8", "--iters", "300", "--csv"]).expect("mpirun"), |_| {});
    let line =
        j.stdout.lines().find(|l| l.starts_with("8,")).unwrap_or_else(|| panic!("{}: no result:\n{}\n{}", s.name, j.stdout, j.stderr)).to_string();
    line.split(',').nth(2).and_then(|x| x.parse().ok()).expect("rtt_us")
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Measures (run by hand, figures in docs/benchmarks.md "NAT"): the 8-byte round
/// trip through masquerading NATs on both sides against the same hosts
/// without NAT, 5 ms per link; the two alternate, so a change in the
/// machine's load falls on both.
#[test]
#[ignore = "benchmark: cargo test --release -p wanmpi-launcher --test nat_udp latency -- --ignored --nocapture"]
fn latency_through_masquerading_nat_against_none() {
    let _g = serial();
    let Some((emu, progs)) = ready("latency_through_masquerading_nat", &["pingpong"]) else { return };
    for transport in ["wamp", "sctp"] {
        let (mut open, mut nat) = (vec![], vec![]);
        for _ in 0..7 {
            open.push(latency_us(&OPEN_THREE, &emu, &progs[0], transport));
            nat.push(latency_us(&MASQ_BOTH, &emu, &progs[0], transport));
        }
        println!("{transport}: jobs without NAT {open:.0?} us, through NAT {nat:.0?} us");
        let (o, n) = (median(open), median(nat));
        println!(
            "{transport}: 8 B round trip, median of 7 jobs x 300: no NAT {o:.1} us, masquerading NAT both sides {n:.1} us ({:+.2} %)",
            (n / o - 1.0) * 100.0
        );
    }
}
