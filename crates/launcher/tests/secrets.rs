//! The job secret stays secret, and values passed through a launch agent
//! arrive exactly as given: no command line and no environment of a rank or
//! of an agent holds the secret while the job runs, and hostile values in
//! `WANMPI_*` variables, `-x`, and program arguments neither break the
//! command nor run anything.
//!
//! The agent here is a stand-in for ssh that needs no server: a script named
//! `ssh` that drops the host and hands the rest, joined by spaces, to `sh -c`
//! — what the ssh client and sshd do between them. Like the ssh client, it
//! stays alive while the rank runs, so its own command line and environment
//! can be inspected.

mod common;
use common::*;
use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::mpsc::channel;
use std::time::{Duration, Instant};

/// A fresh directory for one test.
fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("wanmpi-secrets-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("scratch dir");
    d
}

/// Writes the ssh stand-in into `dir` and returns its path.
fn fake_ssh(dir: &Path) -> String {
    let path = dir.join("ssh");
    // No `exec`: like the ssh client, the agent outlives the command start.
    std::fs::write(&path, "#!/bin/sh\n# ssh stand-in: drop the host, let a shell split the rest.\nshift\nsh -c \"$*\"\nexit $?\n")
        .expect("write agent");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod agent");
    path.to_str().expect("utf-8 path").to_string()
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Values that break or exploit an unquoted command line. `MARK` is
/// replaced by a path that must not exist afterwards.
const HOSTILE: &[&str] = &[
    "two words",
    "x --progress-thread",
    "it's \"quoted\" 'twice'",
    "a; touch MARK.semicolon",
    "$(touch MARK.dollar)",
    "`touch MARK.backtick`",
    "b && touch MARK.and || c",
    "c | touch MARK.pipe",
    "> MARK.redirect",
    "first line\nsecond line",
    "tab\there",
    "$HOME ~ * ? [a] {x,y} \\ \\n !",
    "",
];

fn hostile_values(dir: &Path) -> Vec<String> {
    HOSTILE.iter().map(|v| v.replace("MARK", &dir.join("pwned").display().to_string())).collect()
}

fn assert_nothing_ran(dir: &Path) {
    let left: Vec<String> =
        std::fs::read_dir(dir).expect("read scratch").filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    assert!(left.iter().all(|n| !n.starts_with("pwned")), "a hostile value ran a command: {left:?}");
}

/// Runs a job of two ranks through `agent` with every hostile value in a
/// `WANMPI_*` variable of mpirun's environment, in `--env`, and as a program
/// argument; checks each rank saw exactly the values.
fn hostile_job(name: &str, agent: impl Fn(&Path) -> String) {
    let dir = scratch(name);
    let values = hostile_values(&dir);
    let agent = agent(&dir);
    let mut args: Vec<String> =
        ["--host", "far-a:1,far-b:1", "--bootstrap", "tcp:127.0.0.1:0", "--launch-agent", &agent].iter().map(|s| s.to_string()).collect();
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
    // Program arguments go through the same shell: `print:` shows them back.
    for v in &values {
        args.push(format!("print:arg={}", hex(v.as_bytes())));
        args.push(format!("print:{v}"));
    }
    args.push("stdin".into());
    args.push("finalize".into());
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut c = command(&argv);
    for (i, v) in values.iter().enumerate() {
        c.env(format!("WANMPI_HOSTILE_{i}"), v);
    }
    let r = mpirun_with(c);
    assert_eq!(r.code, Some(0), "stdout: {}\nstderr: {}", r.stdout, r.stderr);
    assert_eq!(r.stdout.matches("got v0,v1\n").count(), 2, "{}", r.stdout);
    for (i, v) in values.iter().enumerate() {
        let h = hex(v.as_bytes());
        for var in [format!("WANMPI_HOSTILE_{i}"), format!("PROBE_X{i}")] {
            assert_eq!(r.stdout.matches(&format!("{var}={h}\n")).count(), 2, "{var} = {v:?} did not arrive intact:\n{}", r.stdout);
        }
        // A program argument prints itself; a newline in it makes two lines,
        // and mpirun forwards the two ranks' output line by line, so another
        // rank's line may come between them: look for each line.
        for line in v.split('\n') {
            let printed = format!("{line}\n");
            assert!(r.stdout.matches(&printed).count() >= 2, "argument {v:?} did not arrive intact:\n{}", r.stdout);
        }
    }
    // The secret's pipe was moved off stdin: the program reads nothing there.
    assert_eq!(r.stdout.matches("stdin=\n").count(), 2, "{}", r.stdout);
    assert_nothing_ran(&dir);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn hostile_values_arrive_intact_through_a_remote_shell_agent() {
    hostile_job("ssh", fake_ssh);
}

#[test]
fn hostile_values_arrive_intact_through_a_host_template_agent() {
    // `{host}` agents (ip netns exec) execute their words without a shell.
    hostile_job("template", |_| "env PROBE_VIA={host}".to_string());
}

/// Every process in the tree under `root`, `root` included.
fn tree(root: u32) -> Vec<u32> {
    let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
    for e in std::fs::read_dir("/proc").expect("/proc").filter_map(|e| e.ok()) {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
        // The field after the command name's closing parenthesis: state, ppid.
        let ppid = stat.rsplit(')').next().and_then(|r| r.split_whitespace().nth(1)).and_then(|p| p.parse::<u32>().ok());
        if let Some(pp) = ppid {
            children.entry(pp).or_default().push(pid);
        }
    }
    let mut all = vec![root];
    let mut i = 0;
    while i < all.len() {
        all.extend(children.get(&all[i]).cloned().unwrap_or_default());
        i += 1;
    }
    all
}

/// Reads the command line and environment of every process in `procs`:
/// none may hold any of `secrets`. Returns how many files it read.
fn assert_no_secret(procs: &[u32], secrets: &[String]) -> usize {
    let mut checked = 0;
    for pid in procs {
        for what in ["cmdline", "environ"] {
            let Ok(bytes) = std::fs::read(format!("/proc/{pid}/{what}")) else { continue };
            let text = String::from_utf8_lossy(&bytes).to_lowercase();
            for secret in secrets {
                assert!(!text.contains(secret.as_str()), "/proc/{pid}/{what} holds a secret: {text:?}");
            }
            assert!(!text.contains("wanmpi_job_secret="), "/proc/{pid}/{what} names a secret: {text:?}");
            checked += 1;
        }
    }
    checked
}

#[test]
fn no_command_line_or_environment_holds_the_secret() {
    let dir = scratch("proc");
    let agent = fake_ssh(&dir);
    // Rank 0 is local (started directly), rank 1 through the agent.
    let mut c = command(&[
        "--host",
        "localhost:1,far-host:1",
        "--bootstrap",
        "tcp:127.0.0.1:0",
        "--launch-agent",
        &agent,
        PROBE,
        "exchange",
        "secret",
        "print:ready {pid}",
        "sleep:20",
    ]);
    c.stdout(Stdio::piped());
    let started = Instant::now();
    let mut child = c.spawn().expect("start mpirun");
    let mpirun_pid = child.id();
    let (tx, rx) = channel();
    let out = child.stdout.take().expect("stdout");
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    let (mut secret, mut ready) = (None::<String>, Vec::new());
    while ready.len() < 2 {
        let line = rx.recv_timeout(Duration::from_secs(30)).expect("ranks did not get ready in 30 s");
        if let Some(s) = line.strip_prefix("secret=") {
            secret = Some(s.to_string());
        }
        ready.extend(numbers_after(&line, "ready "));
    }
    let secret = secret.expect("a rank printed the secret");
    assert_eq!(secret.len(), 64);
    let procs = tree(mpirun_pid);
    // mpirun, two ranks, the agent (and its shell) at least.
    assert!(procs.len() >= 4, "process tree {procs:?}");
    for r in &ready {
        assert!(procs.contains(r), "rank pid {r} not under mpirun: {procs:?}");
    }
    let checked = assert_no_secret(&procs, &[secret]);
    // The agent really is there, with the rank's words on its command line.
    let agent_seen =
        procs.iter().any(|p| std::fs::read(format!("/proc/{p}/cmdline")).map(|c| String::from_utf8_lossy(&c).contains("far-host")).unwrap_or(false));
    assert!(agent_seen, "no agent process in {procs:?}");
    assert!(checked >= 8, "read only {checked} /proc files");
    // SIGTERM ends the job: mpirun ends every rank's process group.
    // SAFETY: signalling the mpirun this test started.
    unsafe { libc::kill(mpirun_pid as i32, libc::SIGTERM) };
    let r = finish(child, started);
    assert_eq!(r.code, Some(128 + libc::SIGTERM), "{}", r.stderr);
    for pid in procs {
        assert!(gone(pid), "process {pid} outlived the job");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A rank spawns a job on this host and one through the agent: the port
/// the children connect back to reaches them on their secret pipe, never
/// on a command line (the agent's, the far side's shell's) or in an
/// environment. Before, `WANMPI_PARENT_PORT` with the port's secret was on
/// the agent's argv, readable by every user of both hosts.
#[test]
fn a_spawned_job_gets_its_parent_port_without_showing_it() {
    spawning_job("spawn-ssh", fake_ssh, "far-host");
}

/// The same through a `{host}` agent (srun, `ip netns exec`): the pipe is
/// the agent's stdin, moved to descriptor 3 by `sh -c`.
#[test]
fn a_spawned_job_through_a_host_template_agent_gets_its_parent_port_without_showing_it() {
    spawning_job("spawn-template", |_| "env PROBE_VIA={host}".to_string(), "PROBE_VIA=far-host");
}

/// A rank spawns a job here and one on `far-host` through `agent`;
/// `agent_mark` is what the agent's command line or environment holds.
fn spawning_job(name: &str, agent: impl Fn(&Path) -> String, agent_mark: &str) {
    let dir = scratch(name);
    let agent = agent(&dir);
    let mut c = command(&[
        "--host",
        "localhost:1,far-host:1",
        "--np",
        "1",
        "--bootstrap",
        "tcp:127.0.0.1:0",
        "--launch-agent",
        &agent,
        PROBE,
        "secret",
        "spawn:localhost:20",
        "spawn:far-host:20",
        "sleep:20",
    ]);
    c.stdout(Stdio::piped());
    let started = Instant::now();
    let mut child = c.spawn().expect("start mpirun");
    let mpirun_pid = child.id();
    let (tx, rx) = channel();
    let out = child.stdout.take().expect("stdout");
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    let (mut secrets, mut ports, mut ready, mut joined) = (Vec::new(), Vec::new(), Vec::new(), 0);
    while ready.len() < 2 || joined < 2 {
        let line = rx.recv_timeout(Duration::from_secs(30)).unwrap_or_else(|_| panic!("the spawned ranks did not get ready in 30 s: {ready:?}"));
        if let Some(s) = line.strip_prefix("secret=") {
            secrets.push(s.to_string());
        }
        if let Some(p) = line.strip_prefix("port=") {
            ports.push(p.to_string());
        }
        joined += line.contains("child-joined") as usize;
        ready.extend(numbers_after(&line, "child-ready "));
    }
    // Each port's secret is the last field of its name.
    let mut all: Vec<String> = ports.iter().map(|p| p.rsplit(':').next().expect("secret").to_string()).collect();
    assert_eq!(all.len(), 2, "{ports:?}");
    assert!(all.iter().all(|s| s.len() == 64), "{all:?}");
    // The job secrets of the parent and of both spawned jobs too.
    assert_eq!(secrets.len(), 3, "{secrets:?}");
    all.extend(secrets);
    let procs = tree(mpirun_pid);
    for r in &ready {
        assert!(procs.contains(r), "spawned rank {r} not under mpirun: {procs:?}");
    }
    // The agent, or (a `{host}` agent execs its words) what it became.
    let shows =
        |p: &u32, what: &str| std::fs::read(format!("/proc/{p}/{what}")).map(|c| String::from_utf8_lossy(&c).contains(agent_mark)).unwrap_or(false);
    let agent_seen = procs.iter().any(|p| shows(p, "cmdline") || shows(p, "environ"));
    assert!(agent_seen, "no agent process in {procs:?}");
    let checked = assert_no_secret(&procs, &all);
    // mpirun, the spawning rank, its two children (and the agent's shell).
    assert!(checked >= 8, "read only {checked} /proc files");
    // SAFETY: signalling the mpirun this test started.
    unsafe { libc::kill(mpirun_pid as i32, libc::SIGTERM) };
    let r = finish(child, started);
    assert_eq!(r.code, Some(128 + libc::SIGTERM), "{}", r.stderr);
    for pid in procs {
        assert!(gone(pid), "process {pid} outlived the job");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
