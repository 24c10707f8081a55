//! Emulated hosts with real sshd (Debian's openssh-server) for the ssh
//! tests: three hosts (network namespaces behind the WAN emulator, 198.18.x
//! addresses), mpirun in the first, an sshd with key authentication in each
//! of the other two. Each sshd sees a /tmp of its own (a tmpfs mounted in
//! its mount namespace), so nothing mpirun's side keeps in /tmp is there:
//! the far side shares no /tmp with mpirun. Keys and configuration live
//! outside /tmp (in cargo's target tmp directory), where both sides see them.

#![allow(dead_code)]

use super::common::MPIRUN;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use wanmpi_emulator::{Emulation, LinkProfile, Topology, UpOptions};

const SSHD: &str = "/usr/sbin/sshd";

/// sshd processes and the namespaces they serve, ended when the test ends
/// however it ends. A session sshd forked survives its daemon (and would
/// hold the test's stderr open): every process left in a server's
/// namespace is ended too.
pub struct Daemons(Vec<(Child, String)>);

impl Drop for Daemons {
    fn drop(&mut self) {
        for (c, netns) in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
            super::common::end_namespace_processes(netns);
        }
    }
}

/// A scratch directory, removed at the end.
pub struct Scratch(pub PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub fn on_path(cmd: &str) -> bool {
    Command::new("sh").args(["-c", &format!("command -v {cmd}")]).stdout(Stdio::null()).status().map(|s| s.success()).unwrap_or(false)
}

pub fn skip_reason() -> Option<String> {
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

pub fn run_ok(cmd: &mut Command, what: &str) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(out.status.success(), "{what}: {}", String::from_utf8_lossy(&out.stderr));
}

/// Keys, one sshd per server host, and the ssh options that reach them.
/// Fields drop in order: the daemons end before their hosts go.
pub struct Site {
    _daemons: Daemons,
    _emu: Emulation,
    pub dir: Scratch,
    pub client_ns: String,
    pub client_addr: String,
    pub servers: Vec<String>,
    /// The server hosts' namespaces, in the order of `servers`.
    pub server_ns: Vec<String>,
    pub ssh_args: String,
}

pub fn bring_up(name: &str) -> Site {
    // Not under /tmp: the servers mount a /tmp of their own over it.
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("wanmpi-ssh-{}-{name}", std::process::id()));
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
    let (mut servers, mut server_ns) = (Vec::new(), Vec::new());
    for h in &hosts[1..] {
        let addr = h.addrs[0].to_string();
        let conf = dir.join(format!("sshd_config.{}", h.index));
        let text = super::common::sshd_config(&addr, &host_key, &dir.join("authorized_keys"));
        std::fs::write(&conf, text).expect("sshd_config");
        // `ip netns exec` gives sshd a mount namespace of its own (a slave
        // of this one), so the tmpfs hides this machine's /tmp from it alone.
        let start = format!("{} && exec {SSHD} -D -e -f '{}'", private_tmp(), conf.display());
        let child = Command::new("ip")
            .args(["netns", "exec", &h.netns, "sh", "-c", &start])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start sshd");
        daemons.0.push((child, h.netns.clone()));
        servers.push(addr);
        server_ns.push(h.netns.clone());
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
        server_ns,
        ssh_args,
        _daemons: daemons,
        dir: scratch,
    };
    // Each sshd answers within a bounded time.
    for s in &site.servers {
        super::common::wait_for_ssh(&site.client_ns, &site.ssh_args, s);
    }
    site
}

/// Shell words that mount a tmpfs of its own over /tmp. A checkout that
/// lives under /tmp (a CI clone may) stays visible through it: the far side
/// runs the programs at the same path and reads the keys there. It is bound
/// back from the shell's working directory, which still names the hidden
/// directory once the tmpfs is over it (`--no-canonicalize`: resolving "."
/// by its path would find the new, empty directory instead).
fn private_tmp() -> String {
    let mount = "mount -t tmpfs -o mode=1777,size=256m wanmpi-far-tmp /tmp";
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let root = root.canonicalize().unwrap_or(root);
    if !root.starts_with("/tmp") {
        return mount.to_string();
    }
    let r = root.display();
    format!("cd '{r}' && {mount} && mkdir -p '{r}' && mount --no-canonicalize --bind . '{r}' && cd /")
}

/// mpirun inside the client host, with `args` after the ssh options.
pub fn mpirun_in(site: &Site, args: &[&str]) -> Command {
    let mut c = super::common::mpirun_in_netns(&site.client_ns, &site.ssh_args);
    c.arg("--bootstrap").arg(format!("tcp:{}:0", site.client_addr)).args(args);
    c
}

pub fn all_pids() -> Vec<u32> {
    std::fs::read_dir("/proc").map(|d| d.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok()).collect()).unwrap_or_default()
}

pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

impl Site {
    /// Each server's view of the file system (its sshd's root, seen
    /// through /proc): `/proc/PID/root/tmp` is that server's own /tmp.
    pub fn server_roots(&self) -> Vec<PathBuf> {
        self._daemons.0.iter().map(|(c, _)| PathBuf::from(format!("/proc/{}/root", c.id()))).collect()
    }
}

/// Reads mpirun's stdout until `n` lines carried `ready PID`; the pids and
/// every line read. Kills mpirun and fails past 40 s.
pub fn wait_ready(child: &mut Child, started: Instant, n: usize) -> (Vec<u32>, Vec<String>, std::sync::mpsc::Receiver<String>) {
    use std::io::{BufRead, BufReader};
    let out = child.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    let (mut ready, mut lines) = (Vec::new(), Vec::new());
    while ready.len() < n {
        let Ok(line) = rx.recv_timeout(Duration::from_secs(40).saturating_sub(started.elapsed())) else {
            let _ = child.kill();
            let mut err = String::new();
            if let Some(mut e) = child.stderr.take() {
                let _ = std::io::Read::read_to_string(&mut e, &mut err);
            }
            let _ = child.wait();
            panic!("ranks did not get ready in 40 s: {lines:?}\nstderr: {err}");
        };
        ready.extend(super::common::numbers_after(&line, "ready "));
        lines.push(line);
    }
    (ready, lines, rx)
}
