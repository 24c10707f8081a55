//! ssh as the launch agent, against real sshd (Debian's openssh-server):
//! three emulated hosts (network namespaces behind the WAN emulator, with
//! 198.18.x addresses), mpirun in the first, sshd with key authentication in
//! the other two. The ranks start through ssh (the default agent) with
//! `--ssh-args`, find mpirun's key/value service over TCP (nothing on a
//! shared /tmp), and receive the job secret over ssh's standard input: no
//! process on the machine has it on its command line or in its environment
//! while the job runs, and hostile values reach the far side intact. Ranks
//! sharing a host share one ssh connection.
//!
//! Needs root, /usr/sbin/sshd, ssh, ssh-keygen and the emulator's forwarder
//! (`cargo build -p wanmpi-emulator`, same profile); says why and skips
//! without them.

mod common;
mod sshd_site;
use common::*;
use sshd_site::*;
use std::io::{BufRead, BufReader};
use std::process::Command;
use std::sync::mpsc::channel;
use std::time::{Duration, Instant};

#[test]
fn ranks_start_over_ssh_and_no_process_shows_the_secret() {
    if let Some(why) = skip_reason() {
        eprintln!("SKIPPED ranks_start_over_ssh_and_no_process_shows_the_secret: {why}");
        return;
    }
    let site = bring_up("proc");
    let hosts = format!("{}:1,{}:2", site.servers[0], site.servers[1]);
    let mut c =
        mpirun_in(&site, &["--host", &hosts, PROBE, "exchange", "secret", "env:WANMPI_BOOTSTRAP", "print:ready {pid}", "sleep:3", "finalize"]);
    // A $TMPDIR with no room for ssh's shared-connection socket (its path
    // plus the 17 bytes ssh appends while binding it): mpirun puts the
    // socket under /tmp instead, and the connection is still shared.
    let long = site.dir.0.join("a-temporary-directory-name-that-leaves-no-room-for-a-socket");
    std::fs::create_dir_all(&long).expect("the long TMPDIR");
    assert!(long.as_os_str().len() + "/wanmpi-ssh-PID-RANDOM/h0".len() + 17 > 107, "{} is too short", long.display());
    c.env("TMPDIR", &long);
    let started = Instant::now();
    let mut child = c.spawn().expect("start mpirun");
    let out = child.stdout.take().expect("stdout");
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    let (mut secret, mut ready, mut lines) = (None::<String>, Vec::new(), Vec::new());
    while ready.len() < 3 {
        let Ok(line) = rx.recv_timeout(Duration::from_secs(40)) else {
            let _ = child.kill();
            let r = finish(child, started);
            panic!("ranks did not get ready in 40 s: {lines:?}\nstderr: {}", r.stderr);
        };
        if let Some(s) = line.strip_prefix("secret=") {
            secret = Some(s.to_string());
        }
        ready.extend(numbers_after(&line, "ready "));
        lines.push(line);
    }
    let secret = secret.expect("a rank printed the secret");
    // Every process on this machine (every emulated host shares its process
    // table): mpirun, the ssh clients, sshd, the remote shells, the ranks.
    let mut checked = 0;
    for pid in all_pids() {
        for what in ["cmdline", "environ"] {
            let Ok(bytes) = std::fs::read(format!("/proc/{pid}/{what}")) else { continue };
            let text = String::from_utf8_lossy(&bytes).to_lowercase();
            assert!(!text.contains(&secret), "/proc/{pid}/{what} holds the secret: {text:?}");
            checked += 1;
        }
    }
    assert!(checked > 10, "read only {checked} /proc files");
    // The ranks really came through ssh: each is a descendant of an sshd.
    let ssh_clients =
        all_pids().into_iter().filter(|p| std::fs::read(format!("/proc/{p}/cmdline")).map(|c| c.starts_with(b"ssh\0")).unwrap_or(false)).count();
    assert!(ssh_clients >= 3, "{ssh_clients} ssh clients for 3 ranks");
    // One connection per host: the two ranks on the second server share one.
    let ss = Command::new("ip").args(["netns", "exec", &site.client_ns, "ss", "-Htn", "state", "established"]).output().expect("ss");
    let table = String::from_utf8_lossy(&ss.stdout).into_owned();
    for s in &site.servers {
        let conns = table.lines().filter(|l| l.split_whitespace().any(|w| w == format!("{s}:22"))).count();
        assert_eq!(conns, 1, "ssh connections to {s}:\n{table}");
    }
    let r = finish(child, started);
    lines.extend(r.stdout.lines().map(str::to_string));
    assert_eq!(r.code, Some(0), "stdout: {lines:?}\nstderr: {}", r.stderr);
    assert_eq!(lines.iter().filter(|l| l.ends_with("got v0,v1,v2")).count(), 3, "{lines:?}");
    // The service was reached over TCP at the client host's address.
    let want = format!("WANMPI_BOOTSTRAP=tcp:{}:", site.client_addr);
    assert_eq!(lines.iter().filter(|l| l.starts_with(&want)).count(), 3, "{lines:?}");
    drop(site);
}

#[test]
fn hostile_values_cross_real_ssh_intact() {
    if let Some(why) = skip_reason() {
        eprintln!("SKIPPED hostile_values_cross_real_ssh_intact: {why}");
        return;
    }
    let site = bring_up("hostile");
    // Where both sides see it (the far side's /tmp is its own).
    let mark = site.dir.0.join("pwned");
    let m = mark.display().to_string();
    let values = [
        "two words",
        "x --progress-thread",
        "it's \"q\"",
        &format!("a; touch {m}"),
        &format!("$(touch {m})"),
        &format!("`touch {m}`"),
        "l1\nl2",
        "$HOME *",
        "",
    ];
    let mut args: Vec<String> = vec!["--host".into(), format!("{}:1,{}:1", site.servers[0], site.servers[1])];
    for (i, v) in values.iter().enumerate() {
        args.push("--env".into());
        args.push(format!("PROBE_X{i}={v}"));
    }
    args.push(PROBE.into());
    args.push("exchange".into());
    for i in 0..values.len() {
        args.push(format!("envhex:WANMPI_HOSTILE_{i}"));
        args.push(format!("envhex:PROBE_X{i}"));
    }
    for v in &values {
        args.push(format!("print:{v}"));
    }
    args.push("stdin".into());
    args.push("finalize".into());
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut c = mpirun_in(&site, &argv);
    for (i, v) in values.iter().enumerate() {
        c.env(format!("WANMPI_HOSTILE_{i}"), v);
    }
    let started = Instant::now();
    let r = finish(c.spawn().expect("start mpirun"), started);
    assert_eq!(r.code, Some(0), "stdout: {}\nstderr: {}", r.stdout, r.stderr);
    assert_eq!(r.stdout.matches("got v0,v1\n").count(), 2, "{}", r.stdout);
    for (i, v) in values.iter().enumerate() {
        let h = hex(v.as_bytes());
        for var in [format!("WANMPI_HOSTILE_{i}"), format!("PROBE_X{i}")] {
            assert_eq!(r.stdout.matches(&format!("{var}={h}\n")).count(), 2, "{var} = {v:?} did not cross intact:\n{}", r.stdout);
        }
        assert!(r.stdout.matches(&format!("{v}\n")).count() >= 2, "argument {v:?} did not cross intact:\n{}", r.stdout);
    }
    assert_eq!(r.stdout.matches("stdin=\n").count(), 2, "{}", r.stdout);
    assert!(!mark.exists(), "a hostile value ran a command on the far side");
    drop(site);
}

/// mpirun ended by SIGTERM mid-job: the ranks on the far hosts end too
/// (a command without a terminal gets no signal when its ssh goes; the
/// far-side step sees its stdin close), also one that ignores SIGTERM and
/// two that share one ssh connection.
#[test]
fn far_ranks_end_when_mpirun_is_terminated() {
    if let Some(why) = skip_reason() {
        eprintln!("SKIPPED far_ranks_end_when_mpirun_is_terminated: {why}");
        return;
    }
    let site = bring_up("term");
    let hosts = format!("{}:1,{}:2", site.servers[0], site.servers[1]);
    let mut c = mpirun_in(&site, &["--host", &hosts, PROBE, "ignore-term@2", "exchange", "print:ready {pid}", "sleep:60", "finalize"]);
    let started = Instant::now();
    let mut child = c.spawn().expect("start mpirun");
    let out = child.stdout.take().expect("stdout");
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    let mut ready = Vec::new();
    while ready.len() < 3 {
        let Ok(line) = rx.recv_timeout(Duration::from_secs(40)) else {
            let _ = child.kill();
            let r = finish(child, started);
            panic!("ranks did not get ready in 40 s: {ready:?}\nstderr: {}", r.stderr);
        };
        ready.extend(numbers_after(&line, "ready "));
    }
    // SAFETY: SIGTERM to the mpirun this test started (ip netns exec
    // replaced itself with it).
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let r = finish(child, started);
    assert_eq!(r.code, Some(128 + libc::SIGTERM), "stderr: {}", r.stderr);
    assert!(r.stderr.contains("mpirun received SIGTERM"), "{}", r.stderr);
    // The far side's step waits 2 s between SIGTERM and SIGKILL.
    for pid in &ready {
        assert!(gone(*pid), "rank pid {pid} still runs on a far host 5 s after mpirun ended:\n{}", r.stderr);
    }
    for ns in &site.server_ns {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let left = left_in(ns);
            if left.is_empty() {
                break;
            }
            assert!(Instant::now() < deadline, "processes left in {ns} besides sshd: {left:?}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    drop(site);
}

/// Command lines of the processes in namespace `ns` other than its sshd
/// listener.
fn left_in(ns: &str) -> Vec<String> {
    let out = Command::new("ip").args(["netns", "pids", ns]).output().map(|o| o.stdout).unwrap_or_default();
    String::from_utf8_lossy(&out)
        .split_whitespace()
        .filter_map(|p| {
            let cmd = std::fs::read(format!("/proc/{p}/cmdline")).ok()?;
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            let listener = cmd.contains("[listener]") || cmd.starts_with("/usr/sbin/sshd -D");
            let zombie = std::fs::read_to_string(format!("/proc/{p}/stat")).map(|s| s.contains(") Z ")).unwrap_or(true);
            (!listener && !zombie && !cmd.is_empty()).then(|| format!("{p}: {cmd}"))
        })
        .collect()
}
