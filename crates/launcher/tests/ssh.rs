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
use common::*;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::channel;
use std::time::{Duration, Instant};
use wanmpi_emulator::{Emulation, LinkProfile, Topology, UpOptions};

const SSHD: &str = "/usr/sbin/sshd";

/// sshd processes and the namespaces they serve, ended when the test ends
/// however it ends. A session sshd forked survives its daemon (and would
/// hold the test's stderr open): every process left in a server's
/// namespace is ended too.
struct Daemons(Vec<(Child, String)>);

impl Drop for Daemons {
    fn drop(&mut self) {
        for (c, netns) in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
            let pids = Command::new("ip").args(["netns", "pids", netns.as_str()]).output().map(|o| o.stdout).unwrap_or_default();
            for pid in String::from_utf8_lossy(&pids).split_whitespace().filter_map(|p| p.parse::<i32>().ok()) {
                // SAFETY: kill(2) on a pid read from our own namespace.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
        }
    }
}

/// A scratch directory, removed at the end.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn on_path(cmd: &str) -> bool {
    Command::new("sh").args(["-c", &format!("command -v {cmd}")]).stdout(Stdio::null()).status().map(|s| s.success()).unwrap_or(false)
}

fn skip_reason() -> Option<String> {
    if let Err(e) = wanmpi_emulator::preflight() {
        return Some(format!("emulated hosts cannot be made here: {e}"));
    }
    if !Path::new(SSHD).is_file() {
        return Some(format!("{SSHD} is missing (apt-get install openssh-server)"));
    }
    if !on_path("ssh") || !on_path("ssh-keygen") {
        return Some("ssh or ssh-keygen is missing (openssh-client)".into());
    }
    let emu = Path::new(MPIRUN).parent().map(|d| d.join("wanmpi-emu"));
    if !emu.is_some_and(|p| p.is_file()) {
        return Some("build the forwarder first (cargo build -p wanmpi-emulator, same profile)".into());
    }
    None
}

fn run_ok(cmd: &mut Command, what: &str) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(out.status.success(), "{what}: {}", String::from_utf8_lossy(&out.stderr));
}

/// Keys, one sshd per server host, and the ssh options that reach them.
/// Fields drop in order: the daemons end before their hosts go.
struct Site {
    _daemons: Daemons,
    _emu: Emulation,
    _dir: Scratch,
    client_ns: String,
    client_addr: String,
    servers: Vec<String>,
    ssh_args: String,
}

fn bring_up(name: &str) -> Site {
    let dir = std::env::temp_dir().join(format!("wanmpi-ssh-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch");
    let scratch = Scratch(dir.clone());
    let key = dir.join("client_key");
    let host_key = dir.join("host_key");
    for k in [&key, &host_key] {
        run_ok(Command::new("ssh-keygen").args(["-q", "-t", "ed25519", "-N", "", "-f"]).arg(k), "ssh-keygen");
    }
    std::fs::copy(dir.join("client_key.pub"), dir.join("authorized_keys")).expect("authorized_keys");
    // sshd's privilege separation directory.
    std::fs::create_dir_all("/run/sshd").expect("/run/sshd");

    let emu = Emulation::up(&Topology::uniform(3, LinkProfile::parse("delay=1ms").expect("profile")), &UpOptions::default()).expect("emulation up");
    let hosts = emu.hosts();
    let mut daemons = Daemons(Vec::new());
    let mut servers = Vec::new();
    for h in &hosts[1..] {
        let addr = h.addrs[0].to_string();
        let conf = dir.join(format!("sshd_config.{}", h.index));
        let text = [
            format!("ListenAddress {addr}"),
            "Port 22".into(),
            format!("HostKey {}", host_key.display()),
            format!("AuthorizedKeysFile {}", dir.join("authorized_keys").display()),
            "PidFile none".into(),
            "StrictModes no".into(),
            "UsePAM no".into(),
            "PasswordAuthentication no".into(),
            "KbdInteractiveAuthentication no".into(),
            "PubkeyAuthentication yes".into(),
            "PermitRootLogin prohibit-password".into(),
            "LogLevel ERROR".into(),
        ]
        .join("\n");
        std::fs::write(&conf, text + "\n").expect("sshd_config");
        let child = Command::new("ip")
            .args(["netns", "exec", &h.netns, SSHD, "-D", "-e", "-f"])
            .arg(&conf)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start sshd");
        daemons.0.push((child, h.netns.clone()));
        servers.push(addr);
    }
    let ssh_args = format!(
        "-F /dev/null -i {} -o IdentitiesOnly=yes -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR -o ConnectTimeout=5",
        key.display()
    );
    let site = Site {
        client_ns: hosts[0].netns.clone(),
        client_addr: hosts[0].addrs[0].to_string(),
        _emu: emu,
        servers,
        ssh_args,
        _daemons: daemons,
        _dir: scratch,
    };
    // Each sshd answers within a bounded time.
    for s in &site.servers {
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            let mut c = Command::new("ip");
            c.args(["netns", "exec", &site.client_ns, "ssh"]).args(site.ssh_args.split_whitespace()).args([s.as_str(), "true"]);
            if c.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).status().map(|st| st.success()).unwrap_or(false) {
                break;
            }
            assert!(Instant::now() < deadline, "sshd on {s} did not answer within 15 s");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    site
}

/// mpirun inside the client host, with `args` after the ssh options.
fn mpirun_in(site: &Site, args: &[&str]) -> Command {
    let mut c = Command::new("ip");
    c.args(["netns", "exec", &site.client_ns, MPIRUN, "--ssh-args", &site.ssh_args, "--bootstrap"])
        .arg(format!("tcp:{}:0", site.client_addr))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("WANMPI_")) {
        c.env_remove(k);
    }
    c
}

fn all_pids() -> Vec<u32> {
    std::fs::read_dir("/proc").map(|d| d.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok()).collect()).unwrap_or_default()
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

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
    let mark = std::env::temp_dir().join(format!("wanmpi-ssh-pwned-{}", std::process::id()));
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
