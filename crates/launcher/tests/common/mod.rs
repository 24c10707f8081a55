//! Running mpirun from tests, with a bound on how long it may take.

#![allow(dead_code)]

pub mod nat_jobs;

use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const MPIRUN: &str = env!("CARGO_BIN_EXE_mpirun");
pub const PROBE: &str = env!("CARGO_BIN_EXE_wanmpi-launch-probe");
/// No test job may take longer than this; a hang fails the test.
pub const LIMIT: Duration = Duration::from_secs(60);

pub struct Run {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub took: Duration,
}

pub fn command(args: &[&str]) -> Command {
    let mut c = Command::new(MPIRUN);
    c.args(args).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    // The tests' own environment must not leak WANMPI_* settings in, nor
    // an outer Slurm allocation (mpirun would run ranks with srun).
    for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("WANMPI_") || k.starts_with("SLURM_")) {
        c.env_remove(k);
    }
    c
}

/// Waits for a started mpirun, killing it past `LIMIT`.
pub fn finish(mut child: Child, started: Instant) -> Run {
    // A test may have taken stdout to read it as the job runs.
    let read_all = |r: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            if let Some(mut r) = r {
                let _ = r.read_to_string(&mut s);
            }
            s
        })
    };
    let t_out = read_all(child.stdout.take().map(|s| Box::new(s) as Box<dyn Read + Send>));
    let t_err = read_all(child.stderr.take().map(|s| Box::new(s) as Box<dyn Read + Send>));
    let status = loop {
        if let Some(st) = child.try_wait().expect("try_wait") {
            break st;
        }
        if started.elapsed() > LIMIT {
            let _ = child.kill();
            panic!("mpirun did not finish within {LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let took = started.elapsed();
    Run { code: status.code(), stdout: t_out.join().unwrap_or_default(), stderr: t_err.join().unwrap_or_default(), took }
}

pub fn mpirun(args: &[&str]) -> Run {
    mpirun_with(command(args))
}

pub fn mpirun_with(mut c: Command) -> Run {
    let started = Instant::now();
    finish(c.spawn().expect("start mpirun"), started)
}

/// True once `pid` is gone (or a zombie about to be reaped), within 5 s.
pub fn gone(pid: u32) -> bool {
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => return true,
            Ok(s) if s.rsplit(')').next().map(|r| r.trim_start().starts_with('Z')).unwrap_or(false) => return true,
            Ok(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
    false
}

/// The numbers that follow `marker` in `text`.
pub fn numbers_after(text: &str, marker: &str) -> Vec<u32> {
    text.match_indices(marker).filter_map(|(i, _)| text[i + marker.len()..].split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()).collect()
}

/// Ends every process left in network namespace `netns` (sshd sessions
/// survive their daemon): SIGTERM first, so a shell there runs its exit
/// traps (a login shell's rc files may hold a lock in the home directory
/// that SIGKILL would leave behind, stalling every later ssh session), then
/// SIGKILL to whatever is left after a second.
pub fn end_namespace_processes(netns: &str) {
    let pids = || -> Vec<i32> {
        let out = Command::new("ip").args(["netns", "pids", netns]).output().map(|o| o.stdout).unwrap_or_default();
        String::from_utf8_lossy(&out).split_whitespace().filter_map(|p| p.parse().ok()).collect()
    };
    for (sig, pause) in [(libc::SIGTERM, Duration::from_secs(1)), (libc::SIGKILL, Duration::ZERO)] {
        for pid in pids() {
            // SAFETY: kill(2) on a pid read from a namespace the test made.
            unsafe { libc::kill(pid, sig) };
        }
        let deadline = Instant::now() + pause;
        while !pids().is_empty() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// An sshd configuration for a test server: key authentication only, on
/// `addr` port 22, with the given host key and authorized keys file.
pub fn sshd_config(addr: &str, host_key: &std::path::Path, authorized_keys: &std::path::Path) -> String {
    let lines = [
        format!("ListenAddress {addr}"),
        "Port 22".into(),
        format!("HostKey {}", host_key.display()),
        format!("AuthorizedKeysFile {}", authorized_keys.display()),
        "PidFile none".into(),
        "StrictModes no".into(),
        "UsePAM no".into(),
        "PasswordAuthentication no".into(),
        "KbdInteractiveAuthentication no".into(),
        "PubkeyAuthentication yes".into(),
        "PermitRootLogin prohibit-password".into(),
        "LogLevel ERROR".into(),
    ];
    lines.join("\n") + "\n"
}

/// Waits (at most 15 s) until `ssh SSH_ARGS server true` from `client_ns` works.
pub fn wait_for_ssh(client_ns: &str, ssh_args: &str, server: &str) {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", client_ns, "ssh"]).args(ssh_args.split_whitespace()).args([server, "true"]);
        if c.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).status().map(|st| st.success()).unwrap_or(false) {
            return;
        }
        assert!(Instant::now() < deadline, "sshd on {server} did not answer within 15 s");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// mpirun inside network namespace `netns` with `--ssh-args SSH_ARGS`, its
/// output piped, and none of the test's own WANMPI_* variables.
pub fn mpirun_in_netns(netns: &str, ssh_args: &str) -> Command {
    let mut c = Command::new("ip");
    c.args(["netns", "exec", netns, MPIRUN, "--ssh-args", ssh_args]).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("WANMPI_")) {
        c.env_remove(k);
    }
    c
}
