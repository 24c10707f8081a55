//! Bringing an emulation up and down, and driving it: the API the CLI, the
//! launcher and the tests share.

use crate::addr::{host_addr, tun_name, PREFIX_LEN};
use crate::control;
use crate::counters::Counters;
use crate::error::{EmuError, Result};
use crate::hostns;
use crate::nat::{self, NatKind};
use crate::netns;
use crate::state::{self, Lock, ProcId, State};
use crate::topology::Topology;
use std::io::Read;
use std::net::Ipv4Addr;
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Default MTU of every TUN device: Ethernet's, which every real WAN path
/// has. Random loss is drawn per packet, so the MTU decides how many losses a
/// long message sees (a 300 KiB message is about 210 packets at 1500).
pub const DEFAULT_MTU: u32 = 1500;
/// Largest MTU of a TUN device (`UpOptions::mtu`): a TCP segment is then one
/// forwarder read, and a long message meets about 40 times fewer losses
/// than at 1500. The emulator's default before issue 13.
pub const MAX_MTU: u32 = 65000;
/// Smallest MTU an IPv4 host must accept.
pub const MIN_MTU: u32 = 576;

/// How long `up` waits for the forwarder to report READY.
const READY_LIMIT: Duration = Duration::from_secs(10);

/// Options of `Emulation::up` beyond the topology.
#[derive(Debug, Clone, Default)]
pub struct UpOptions {
    /// The `wanmpi-emu` binary to run as forwarder. Default: `$WANMPI_EMU_BIN`,
    /// else a `wanmpi-emu` beside (or one level above) the current executable,
    /// else `wanmpi-emu` on `PATH`.
    pub forwarder_exe: Option<PathBuf>,
    /// State directory to create. Default: `/run/wanmpi-emu/<id>`.
    pub state_dir: Option<PathBuf>,
    /// TCP congestion control to set in every host (`reno`, `cubic`, `bbr`);
    /// default: the kernel's.
    pub congestion_control: Option<String>,
    /// MTU of the hosts' TUN devices, MIN_MTU..=MAX_MTU; default DEFAULT_MTU.
    pub mtu: Option<u32>,
}

/// One emulated host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Host {
    pub index: usize,
    /// Name of its network namespace (`ip netns exec NAME ...` works too).
    pub netns: String,
    /// Its address on each path (index = path) in the address plan. Behind
    /// NAT this is on no interface of the host: `Emulation::nat` gives the
    /// address others reach it at and its own (private) one.
    pub addrs: Vec<Ipv4Addr>,
}

/// A running emulation. Dropping one that this process brought up tears it
/// down (so a failing test still cleans up); one obtained by `attach` is left
/// running unless `down` is called.
pub struct Emulation {
    state: State,
    topology: Topology,
    child: Option<Child>,
    /// The hosts' holder processes this process started (reaped at teardown).
    holders: Vec<Child>,
    owned: bool,
    done: bool,
}

/// Fail early, with a reason, when namespaces cannot be made here.
pub fn preflight() -> Result<()> {
    // SAFETY: geteuid has no preconditions.
    let euid = unsafe { libc::geteuid() };
    if !Path::new("/dev/net/tun").exists() {
        return Err(EmuError::NotPermitted("/dev/net/tun does not exist".into()));
    }
    if euid != 0 {
        // not root: CAP_NET_ADMIN might still be there; find out by trying.
        let probe = format!("{}probe{}", state::NETNS_PREFIX, std::process::id());
        netns::ip(&["netns", "add", &probe]).map_err(|e| {
            let why = match e {
                EmuError::NotPermitted(w) => w,
                other => other.to_string(),
            };
            EmuError::NotPermitted(format!("running as uid {euid} and {why}"))
        })?;
        netns::ip(&["netns", "del", &probe])?;
    }
    Ok(())
}

fn new_id() -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
    let mix = (std::process::id() as u64).wrapping_mul(0x9E37_79B9) ^ nanos as u64 ^ crate::forwarder::now_ns();
    format!("{:06x}", mix & 0xff_ffff)
}

pub(crate) fn find_forwarder() -> PathBuf {
    if let Some(p) = std::env::var_os("WANMPI_EMU_BIN") {
        return PathBuf::from(p);
    }
    if let Ok(me) = std::env::current_exe() {
        if me.file_name().is_some_and(|n| n == "wanmpi-emu") {
            return me;
        }
        // beside us, or one up (test binaries live in target/<profile>/deps)
        for dir in me.ancestors().skip(1).take(2) {
            let cand = dir.join("wanmpi-emu");
            if cand.is_file() {
                return cand;
            }
        }
    }
    PathBuf::from("wanmpi-emu")
}

impl Emulation {
    /// Create the hosts, start the forwarder, configure addresses. On any
    /// failure everything already created is removed before returning.
    pub fn up(topology: &Topology, opts: &UpOptions) -> Result<Emulation> {
        topology.validate()?;
        if let Some(m) = opts.mtu.filter(|m| !(MIN_MTU..=MAX_MTU).contains(m)) {
            return Err(EmuError::Parse(format!("mtu {m}: expected {MIN_MTU} to {MAX_MTU}")));
        }
        preflight()?;
        if (0..topology.hosts).any(|h| topology.nat_of(h) != NatKind::None) && !nat::nft_present() {
            return Err(EmuError::Parse("NAT needs `nft` (Debian package nftables; scripts/install-deps installs it)".into()));
        }
        let (id, dir) = match &opts.state_dir {
            Some(d) => (new_id(), d.clone()),
            None => {
                let id = new_id();
                (id.clone(), Path::new(state::DEFAULT_ROOT).join(&id))
            }
        };
        if let Some(parent) = dir.parent() {
            std::fs::create_dir_all(parent).map_err(|e| EmuError::io(format!("creating {}", parent.display()), e))?;
        }
        // create_dir fails if it exists: the directory is our claim on the id
        std::fs::create_dir(&dir).map_err(|e| EmuError::io(format!("creating state dir {}", dir.display()), e))?;
        let state = State {
            dir: dir.clone(),
            id,
            hosts: topology.hosts,
            paths: topology.paths,
            netns: Vec::new(),
            forwarder: None,
            holders: Vec::new(),
            routers: Vec::new(),
            exe: None,
        };
        let mut emu = Emulation { state, topology: topology.clone(), child: None, holders: Vec::new(), owned: true, done: false };
        match emu.bring_up(opts) {
            Ok(()) => Ok(emu),
            Err(e) => {
                if let Err(e2) = emu.teardown() {
                    eprintln!("wanmpi-emu: cleanup after failed up also failed: {e2}");
                }
                Err(e)
            }
        }
    }

    fn bring_up(&mut self, opts: &UpOptions) -> Result<()> {
        let _lock = Lock::take(&self.state.dir, Duration::from_secs(10))?;
        let conf = self.state.dir.join("topology.conf");
        std::fs::write(&conf, self.topology.to_text()).map_err(|e| EmuError::io(format!("writing {}", conf.display()), e))?;
        for h in 0..self.topology.hosts {
            let name = State::netns_name(&self.state.id, h);
            self.state.netns.push(name.clone());
            self.state.save()?; // record first, then create
            netns::ip(&["netns", "add", &name])?;
            let cc = opts.congestion_control.clone();
            netns::in_netns(&name, move || -> Result<()> {
                // no IPv6: no router solicitations or MLD through the links
                netns::write_sysctl("net.ipv6.conf.all.disable_ipv6", "1")?;
                netns::write_sysctl("net.ipv6.conf.default.disable_ipv6", "1")?;
                if let Some(cc) = cc {
                    netns::write_sysctl("net.ipv4.tcp_congestion_control", &cc)?;
                }
                Ok(())
            })??;
        }
        // a NAT router per site behind NAT, holding the TUN of its first host
        for s in 0..self.topology.site_count() {
            let Some(&first) = self.topology.site_hosts(s).first() else { continue };
            if self.topology.site_nat_of(s) == NatKind::None {
                continue;
            }
            let name = State::router_name(&self.state.id, s);
            self.state.routers.push((first, name.clone()));
            self.state.save()?; // record first, then create
            netns::ip(&["netns", "add", &name])?;
            netns::in_netns(&name, || -> Result<()> {
                netns::write_sysctl("net.ipv6.conf.all.disable_ipv6", "1")?;
                netns::write_sysctl("net.ipv6.conf.default.disable_ipv6", "1")?;
                netns::write_sysctl("net.ipv4.ip_forward", "1")
            })??;
        }
        self.start_forwarder(opts)?;
        let mtu = opts.mtu.unwrap_or(DEFAULT_MTU);
        for s in 0..self.topology.site_count() {
            let kind = self.topology.site_nat_of(s);
            let members = self.topology.site_hosts(s);
            if kind == NatKind::None || members.is_empty() {
                continue;
            }
            let hosts: Vec<(usize, String)> = members.iter().map(|&h| (h, self.state.netns[h].clone())).collect();
            let router = State::router_name(&self.state.id, s);
            crate::sitenat::configure(&router, s, kind, &hosts, mtu)?;
        }
        for h in 0..self.topology.hosts {
            if self.topology.site_nat_of(self.topology.site_of(h)) != NatKind::None {
                continue; // configured with its site's router above
            }
            let kind = self.topology.nat_of(h);
            if kind != NatKind::None {
                netns::ip_batch(&self.state.netns[h], &nat::ip_commands(h, self.topology.paths, mtu))?;
                nat::load(&self.state.netns[h], &nat::ruleset(h, self.topology.paths, kind))?;
                continue;
            }
            let mut batch = String::from("link set lo up\n");
            for p in 0..self.topology.paths {
                let (dev, a) = (tun_name(p), host_addr(h, p));
                batch.push_str(&format!("link set {dev} mtu {mtu} txqueuelen 1000 up\naddr add {a}/{PREFIX_LEN} dev {dev}\n"));
            }
            netns::ip_batch(&self.state.netns[h], &batch)?;
        }
        let exe = self.state.exe.clone().unwrap_or_else(find_forwarder);
        for h in 0..self.topology.hosts {
            let (child, p) = hostns::spawn(&exe, &self.state.dir, &self.topology, h)?;
            self.holders.push(child);
            self.state.holders.push((h, p));
        }
        self.state.save()?;
        for (h, child) in self.holders.iter_mut().enumerate() {
            hostns::await_ready(child, &self.state.dir, h)?;
        }
        Ok(())
    }

    fn start_forwarder(&mut self, opts: &UpOptions) -> Result<()> {
        let exe = opts.forwarder_exe.clone().unwrap_or_else(find_forwarder);
        // absolute: the launch agent runs it from other working directories
        let exe = std::fs::canonicalize(&exe).unwrap_or(exe);
        self.state.exe = Some(exe.clone());
        self.state.save()?;
        let log_path = self.state.dir.join("forwarder.log");
        let log = std::fs::File::create(&log_path).map_err(|e| EmuError::io(format!("creating {}", log_path.display()), e))?;
        let mut cmd = Command::new(&exe);
        cmd.arg("forward").arg("--state").arg(&self.state.dir);
        cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(log);
        // SAFETY: setsid is async-signal-safe; detaches from the terminal's
        // process group so ^C on the shell that ran `up` does not kill it.
        unsafe {
            cmd.pre_exec(|| {
                libc::setsid();
                Ok(())
            });
        }
        let mut child = cmd.spawn().map_err(|e| EmuError::Forwarder(format!("starting {}: {e} (set WANMPI_EMU_BIN?)", exe.display())))?;
        let pid = child.id() as i32;
        let start = state::proc_start(pid).map(|(s, _)| s);
        let stdout = child.stdout.take();
        self.child = Some(child);
        if let Some(start) = start {
            self.state.forwarder = Some(ProcId { pid, start });
            self.state.save()?;
        }
        let ready = stdout.is_some_and(|s| wait_ready(s, READY_LIMIT));
        if !ready || start.is_none() {
            let log = std::fs::read_to_string(&log_path).unwrap_or_default();
            let exit = match self.child.as_mut().map(|c| c.try_wait()) {
                Some(Ok(Some(status))) => format!("{} exited ({status})", exe.display()),
                _ => format!("{} gave no READY within {READY_LIMIT:?}", exe.display()),
            };
            return Err(EmuError::Forwarder(format!("did not become ready: {exit}; log: {}", log.trim())));
        }
        Ok(())
    }

    /// Attach to a running emulation by its state directory (for `status`,
    /// `exec`, `link`, `down` from another process). Dropping it leaves the
    /// emulation running.
    pub fn attach(state_dir: &Path) -> Result<Emulation> {
        let state = State::load(state_dir)?;
        let conf = state_dir.join("topology.conf");
        let text = std::fs::read_to_string(&conf).map_err(|e| EmuError::io(format!("reading {}", conf.display()), e))?;
        let topology = Topology::parse(&text)?;
        Ok(Emulation { state, topology, child: None, holders: Vec::new(), owned: false, done: false })
    }

    /// Keep the emulation running after this value is dropped; returns its
    /// state directory (what `wanmpi-emu up` prints).
    pub fn detach(mut self) -> PathBuf {
        self.owned = false;
        self.child = None;
        self.holders.clear();
        self.state.dir.clone()
    }

    /// What the emulation recorded (its namespaces, holders, routers).
    pub(crate) fn state(&self) -> &State {
        &self.state
    }

    pub fn state_dir(&self) -> &Path {
        &self.state.dir
    }

    pub fn id(&self) -> &str {
        &self.state.id
    }

    pub fn topology(&self) -> &Topology {
        &self.topology
    }

    pub fn forwarder_pid(&self) -> Option<i32> {
        self.state.forwarder.map(|p| p.pid)
    }

    pub fn host_count(&self) -> usize {
        self.state.netns.len()
    }

    /// Host `index`: namespace name and addresses.
    pub fn host(&self, index: usize) -> Result<Host> {
        let netns = self.state.netns.get(index).ok_or_else(|| EmuError::NoSuchHost(index.to_string()))?;
        Ok(Host { index, netns: netns.clone(), addrs: (0..self.state.paths).map(|p| host_addr(index, p)).collect() })
    }

    pub fn hosts(&self) -> Vec<Host> {
        (0..self.host_count()).filter_map(|i| self.host(i).ok()).collect()
    }

    /// Resolve `0`, `h0`, a namespace name or an address (public, or
    /// private behind NAT) to a host index.
    pub fn resolve_host(&self, s: &str) -> Result<usize> {
        let by_index = s.strip_prefix('h').unwrap_or(s).parse::<usize>().ok();
        let private = |i: usize| self.nat(i).ok().and_then(|n| n.private).is_some_and(|a| a.to_string() == s);
        let found = by_index.filter(|i| *i < self.host_count()).or_else(|| {
            self.hosts().into_iter().find(|h| h.netns == s || h.addrs.iter().any(|a| a.to_string() == s) || private(h.index)).map(|h| h.index)
        });
        found.ok_or_else(|| EmuError::NoSuchHost(s.to_string()))
    }

    /// A `Command` that runs `program` inside host `index`.
    pub fn command(&self, index: usize, program: impl AsRef<std::ffi::OsStr>) -> Result<Command> {
        netns::command_in(&self.host(index)?.netns, program)
    }

    /// Run `f` on a thread inside host `index` (sockets made there belong to it).
    pub fn in_host<T: Send>(&self, index: usize, f: impl FnOnce() -> T + Send) -> Result<T> {
        netns::in_netns(&self.host(index)?.netns, f)
    }

    /// Set a sysctl inside host `index`, e.g. `net.ipv4.tcp_congestion_control`.
    pub fn set_sysctl(&self, index: usize, key: &str, value: &str) -> Result<()> {
        self.in_host(index, || netns::write_sysctl(key, value))?
    }

    /// Current counters of every link.
    pub fn counters(&self) -> Result<Counters> {
        Counters::parse(&control::request(&self.state.dir, "status")?)
    }

    /// Take both directions between hosts `a` and `b` down or up (every path,
    /// or only `path`).
    pub fn set_link(&self, a: usize, b: usize, up: bool, path: Option<u8>) -> Result<()> {
        let p = path.map(|p| format!(" {p}")).unwrap_or_default();
        control::request(&self.state.dir, &format!("link {a} {b} {}{p}", if up { "up" } else { "down" }))?;
        Ok(())
    }

    /// Is the forwarder process alive?
    pub fn forwarder_running(&self) -> bool {
        self.state.forwarder.is_some_and(state::is_running)
    }

    /// Tear down: stop the forwarder, delete the namespaces, remove the state
    /// directory. Returns the forwarder's final counters when it could write them.
    pub fn down(mut self) -> Result<Option<Counters>> {
        self.teardown()
    }

    fn teardown(&mut self) -> Result<Option<Counters>> {
        self.done = true;
        let r = teardown_state(&self.state, self.child.as_mut(), &mut self.holders);
        self.child = None;
        self.holders.clear();
        r
    }
}

impl Drop for Emulation {
    fn drop(&mut self) {
        if self.owned && !self.done {
            if let Err(e) = self.teardown() {
                eprintln!("wanmpi-emu: teardown on drop failed: {e}");
            }
        }
    }
}

/// Wait for the forwarder's READY line on its stdout, at most `limit`.
pub(crate) fn wait_ready(mut out: std::process::ChildStdout, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    let mut got = Vec::new();
    while Instant::now() < deadline {
        let left = deadline.saturating_duration_since(Instant::now()).as_millis().min(i32::MAX as u128) as i32;
        let mut pfd = libc::pollfd { fd: out.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        // SAFETY: one valid pollfd.
        if unsafe { libc::poll(&mut pfd, 1, left.max(1)) } <= 0 {
            continue;
        }
        let mut buf = [0u8; 64];
        match out.read(&mut buf) {
            Ok(0) | Err(_) => return false, // forwarder exited
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
        if got.windows(5).any(|w| w == b"READY") {
            return true;
        }
    }
    false
}

/// Tear down what the state in `dir` records (for `wanmpi-emu down`, also
/// after the process that ran `up` or the forwarder crashed).
pub fn down_dir(dir: &Path) -> Result<Option<Counters>> {
    let st = State::load(dir)?;
    teardown_state(&st, None, &mut [])
}

fn teardown_state(st: &State, child: Option<&mut Child>, holders: &mut [Child]) -> Result<Option<Counters>> {
    let _lock = Lock::take(&st.dir, Duration::from_secs(10))?;
    if let Some(p) = st.forwarder {
        stop_process(p, child, "forwarder");
    }
    // every holder told at once, then each waited for
    for (_, p) in st.holders.iter().filter(|(_, p)| state::is_running(*p)) {
        // SAFETY: kill on a pid verified by its start time just now.
        unsafe { libc::kill(p.pid, libc::SIGTERM) };
    }
    for (i, (_, p)) in st.holders.iter().enumerate() {
        stop_process(*p, holders.get_mut(i), "holder");
    }
    let counters = std::fs::read_to_string(st.dir.join("counters.txt")).ok().and_then(|t| Counters::parse(&t).ok());
    let mut first_err = None;
    for name in st.netns.iter().chain(st.routers.iter().map(|(_, n)| n)) {
        if !st.owns_netns(name) {
            eprintln!("wanmpi-emu: state lists `{name}`, which is not ours; leaving it alone");
            continue;
        }
        if netns::netns_exists(name) {
            if let Err(e) = netns::ip(&["netns", "del", name]) {
                first_err.get_or_insert(e);
            }
        }
    }
    if let Some(e) = first_err {
        return Err(e);
    }
    std::fs::remove_dir_all(&st.dir).map_err(|e| EmuError::io(format!("removing {}", st.dir.display()), e))?;
    Ok(counters)
}

/// SIGTERM (the forwarder writes its counters and exits), then SIGKILL if it
/// has not gone within a bound. Only the recorded process is signalled.
fn stop_process(p: ProcId, mut child: Option<&mut Child>, what: &str) {
    if !state::is_running(p) {
        if let Some(c) = child {
            let _ = c.try_wait();
        }
        return;
    }
    // SAFETY: kill on the pid we verified by its start time just above.
    unsafe { libc::kill(p.pid, libc::SIGTERM) };
    let deadline = Instant::now() + Duration::from_secs(3);
    let mut sig = libc::SIGTERM;
    loop {
        // our own child must be reaped, or it stays a zombie we cannot tell from alive
        if let Some(c) = child.as_deref_mut() {
            let _ = c.try_wait();
        }
        if !state::is_running(p) {
            break;
        }
        if Instant::now() >= deadline {
            if sig == libc::SIGKILL {
                eprintln!("wanmpi-emu: {what} {} survived SIGKILL", p.pid);
                break;
            }
            sig = libc::SIGKILL;
            // SAFETY: same verified pid.
            unsafe { libc::kill(p.pid, libc::SIGKILL) };
            continue;
        }
        // no pidfd in std for a non-child; poll /proc at a short period, bounded above
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Tear down every emulation recorded under `root` (default `/run/wanmpi-emu`).
pub fn down_all(root: &Path) -> Vec<(PathBuf, Result<Option<Counters>>)> {
    state::list(root)
        .into_iter()
        .map(|d| {
            let r = down_dir(&d);
            (d, r)
        })
        .collect()
}
