//! What makes an emulated host a separate machine beyond its network: its
//! own `/tmp`, `/dev/shm`, `/sys` (showing its own interfaces), `/etc/hosts`
//! and host name, in a mount and a UTS namespace held by one small process
//! per host (`wanmpi-emu hold`, started by `up`, stopped by `down`).
//!
//! A process is used rather than a bind-mounted namespace file because a
//! mount namespace file bound in the machine's namespace is not visible
//! from inside another host's mount namespace made earlier, while
//! `/proc/<holder>/ns/*` is, so the launch agent (`agent.rs`) works from
//! inside an emulated host too (mpirun running on host 0 starting ranks on
//! host 1). The holder's pid and start time are in the state file; a
//! recycled pid is never taken for it. The holder goes back to the
//! machine's network namespace once its mounts are made (its `/sys` keeps
//! showing the host's network): it is not one of the host's processes, and
//! what ends every process in a host's namespace (`ip netns pids`) leaves it
//! alone. The host's network namespace is entered by its `/run/netns` name,
//! visible in every host's mount namespace (all made after it).

use crate::error::{EmuError, Result};
use crate::nat::NatKind;
use crate::state::{self, ProcId, State};
use crate::topology::Topology;
use std::ffi::CString;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// How long `up` waits for a holder's READY.
const READY_LIMIT: Duration = Duration::from_secs(10);

/// The host name of emulated host `index` (also in every host's `/etc/hosts`).
pub fn host_name(index: usize) -> String {
    format!("h{index}")
}

/// The `/etc/hosts` host `me` sees: its own name at its own address (the
/// private one behind NAT, as on a cloud VM), every other host's name at
/// its public address.
pub fn hosts_file(topo: &Topology, me: usize) -> String {
    let mut s = String::from("127.0.0.1\tlocalhost\n");
    let site_natted = |h: usize| !topo.sites.is_empty() && topo.site_nat_of(topo.site_of(h)) != NatKind::None;
    for h in 0..topo.hosts {
        let n = crate::nat::info(topo, h);
        // itself, and hosts on its own private LAN, at their private addresses
        let near = h == me || (site_natted(h) && topo.site_of(h) == topo.site_of(me));
        let addr = if near { n.private.unwrap_or(n.public) } else { n.public };
        s.push_str(&format!("{addr}\t{}\n", host_name(h)));
    }
    s
}

fn hosts_path(dir: &Path, host: usize) -> std::path::PathBuf {
    dir.join(format!("hosts-{}", host_name(host)))
}

fn cstr(s: &str) -> CString {
    CString::new(s).unwrap_or_default()
}

fn check(rc: libc::c_int, what: &str) -> Result<()> {
    if rc != 0 {
        return Err(EmuError::io(what.to_string(), std::io::Error::last_os_error()));
    }
    Ok(())
}

fn mount(src: &str, target: &str, fstype: Option<&str>, flags: libc::c_ulong, data: Option<&str>) -> Result<()> {
    let (s, t) = (cstr(src), cstr(target));
    let f = fstype.map(cstr);
    let d = data.map(cstr);
    // SAFETY: valid NUL-terminated strings or null pointers.
    let rc = unsafe {
        libc::mount(
            s.as_ptr(),
            t.as_ptr(),
            f.as_ref().map_or(std::ptr::null(), |c| c.as_ptr()),
            flags,
            d.as_ref().map_or(std::ptr::null(), |c| c.as_ptr().cast()),
        )
    };
    check(rc, &format!("mounting {target}"))
}

/// The holder's side (`wanmpi-emu hold`): enter host `host`'s network
/// namespace, make the mount and UTS namespaces, print READY and wait to be
/// stopped. Runs single-threaded (setns of a mount namespace needs it).
pub fn hold(dir: &Path, host: usize) -> Result<()> {
    let st = State::load(dir)?;
    let ns = st.netns.get(host).ok_or_else(|| EmuError::NoSuchHost(host.to_string()))?;
    let home = File::open("/proc/thread-self/ns/net").map_err(|e| EmuError::io("opening own netns", e))?;
    crate::netns::enter(ns)?;
    // SAFETY: unshare on the calling (only) thread.
    check(unsafe { libc::unshare(libc::CLONE_NEWNS | libc::CLONE_NEWUTS) }, "unshare(mount, uts)")?;
    // Nothing mounted here leaks back to the machine, nor arrives from it.
    mount("none", "/", None, libc::MS_REC | libc::MS_PRIVATE, None)?;
    // before /tmp is covered: the state directory may be under it
    let hosts = hosts_path(dir, host);
    if let Err(e) = mount(&hosts.to_string_lossy(), "/etc/hosts", None, libc::MS_BIND, None) {
        eprintln!("wanmpi-emu hold: host {host}: {e}");
    }
    mount("tmpfs", "/tmp", Some("tmpfs"), libc::MS_NOSUID | libc::MS_NODEV, Some("mode=1777"))?;
    mount("tmpfs", "/dev/shm", Some("tmpfs"), libc::MS_NOSUID | libc::MS_NODEV, Some("mode=1777"))?;
    // sysfs shows the interfaces of the namespace that mounts it (as `ip
    // netns exec` does); a machine where this fails keeps the old one.
    // SAFETY: a valid path.
    if unsafe { libc::umount2(cstr("/sys").as_ptr(), libc::MNT_DETACH) } == 0 {
        if let Err(e) = mount("sysfs", "/sys", Some("sysfs"), 0, None) {
            eprintln!("wanmpi-emu hold: host {host}: {e}");
        }
    }
    let name = host_name(host);
    // SAFETY: a valid buffer of the given length.
    check(unsafe { libc::sethostname(name.as_ptr().cast(), name.len()) }, "sethostname")?;
    crate::netns::setns_file(&home).map_err(|e| EmuError::io("returning to the machine's netns", e))?;
    // SAFETY: a valid path; the old cwd belongs to the machine's namespace.
    unsafe { libc::chdir(cstr("/").as_ptr()) };
    println!("READY");
    // SAFETY: closing our stdout tells `up` we are ready even if it reads to EOF.
    unsafe { libc::close(1) };
    loop {
        // SAFETY: pause has no preconditions; SIGTERM (default action) ends us.
        unsafe { libc::pause() };
    }
}

/// Start host `host`'s holder (the `exe` binary, `wanmpi-emu`) and return
/// it; `await_ready` then waits for its READY (all holders start at once).
pub fn spawn(exe: &Path, dir: &Path, topo: &Topology, host: usize) -> Result<(Child, ProcId)> {
    let hosts = hosts_path(dir, host);
    std::fs::write(&hosts, hosts_file(topo, host)).map_err(|e| EmuError::io(format!("writing {}", hosts.display()), e))?;
    let log_path = dir.join("holder.log");
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log_path)
        .map_err(|e| EmuError::io(format!("opening {}", log_path.display()), e))?;
    let mut cmd = Command::new(exe);
    cmd.arg("hold").arg("--state").arg(dir).arg("--host").arg(host.to_string());
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(log);
    // SAFETY: setsid is async-signal-safe (out of the caller's terminal group).
    unsafe {
        cmd.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
    let mut child = cmd.spawn().map_err(|e| EmuError::Forwarder(format!("starting holder {} hold: {e}", exe.display())))?;
    let pid = child.id() as i32;
    let Some((start, _)) = state::proc_start(pid) else {
        let _ = child.wait();
        return Err(EmuError::Forwarder(format!("holder of host {host} exited at once; see {}", log_path.display())));
    };
    Ok((child, ProcId { pid, start }))
}

/// Wait for the READY of host `host`'s holder `child` (started by `spawn`
/// with the state in `dir`); on failure the caller's teardown stops it.
pub fn await_ready(child: &mut Child, dir: &Path, host: usize) -> Result<()> {
    if child.stdout.take().is_some_and(|s| crate::emulation::wait_ready(s, READY_LIMIT)) {
        return Ok(());
    }
    let log = std::fs::read_to_string(dir.join("holder.log")).unwrap_or_default();
    Err(EmuError::Forwarder(format!("holder of host {host} not ready: {}", log.trim())))
}

/// The namespaces of a host's holder, opened (so that a later `setns`
/// needs no allocation: usable between fork and exec).
pub struct HostNs {
    net: File,
    uts: File,
    mnt: File,
}

impl HostNs {
    /// Open the namespaces of a host: network namespace `netns` (its name)
    /// and those of holder `p`, checking it is still that process.
    pub fn open(netns: &str, p: ProcId) -> Result<HostNs> {
        let open = |path: String| File::open(&path).map_err(|e| EmuError::io(format!("opening {path}"), e));
        let net = open(crate::netns::netns_path(netns).to_string_lossy().into_owned())?;
        let ns = HostNs { net, uts: open(format!("/proc/{}/ns/uts", p.pid))?, mnt: open(format!("/proc/{}/ns/mnt", p.pid))? };
        // checked after opening: the files hold the namespaces even if it exits now
        if !state::is_running(p) {
            return Err(EmuError::Forwarder(format!("the holder process {} of this host is gone; bring the emulation up again", p.pid)));
        }
        Ok(ns)
    }

    /// Move the calling process (single-threaded: mount namespaces need it)
    /// into the host: network, host name, then files. Only `setns` calls.
    pub fn enter(&self) -> std::io::Result<()> {
        for (f, kind) in [(&self.net, libc::CLONE_NEWNET), (&self.uts, libc::CLONE_NEWUTS), (&self.mnt, libc::CLONE_NEWNS)] {
            // SAFETY: setns on an fd we own.
            if unsafe { libc::setns(f.as_raw_fd(), kind) } != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
        Ok(())
    }

    /// Is the calling thread in this host's network namespace?
    pub fn is_current_net(&self) -> bool {
        use std::os::unix::fs::MetadataExt;
        let (Ok(mine), Ok(theirs)) = (std::fs::metadata("/proc/thread-self/ns/net"), self.net.metadata()) else { return false };
        (mine.dev(), mine.ino()) == (theirs.dev(), theirs.ino())
    }
}
