//! The state directory of one emulation: what it created, so that `down`
//! can remove exactly that (and nothing else), even after the forwarder or
//! the process that ran `up` crashed.
//!
//! Files: `state` (this record), `topology.conf` (what the forwarder
//! emulates), `ctl.sock` (control), `forwarder.log`, `counters.txt` (written
//! by the forwarder at exit and on SIGUSR1), `lock` (held during up/down),
//! `hosts-h<i>` (the `/etc/hosts` host i sees), `holder.log`, `scenario.hosts`
//! (a scenario's hostfile).
//! Each host's holder process (its own `/tmp`, `/dev/shm`, host name:
//! `hostns.rs`) is recorded as soon as it runs, by pid and start time.
//!
//! A namespace is recorded *before* it is created, so a crash between the two
//! leaves a record of something that may not exist, never the reverse.

use crate::error::{EmuError, Result};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const MAGIC: &str = "wanmpi-emu-state 1";

/// Default parent of state directories: `/run/wanmpi-emu/<id>`.
pub const DEFAULT_ROOT: &str = "/run/wanmpi-emu";

/// Prefix of every namespace the emulator creates.
pub const NETNS_PREFIX: &str = "wemu";

/// The forwarder as recorded: pid plus its start time, so that a recycled pid
/// is never mistaken for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcId {
    pub pid: i32,
    pub start: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct State {
    pub dir: PathBuf,
    pub id: String,
    pub hosts: usize,
    pub paths: u8,
    pub netns: Vec<String>,
    pub forwarder: Option<ProcId>,
    /// The holder process of each host's mount and UTS namespaces: (host, process).
    pub holders: Vec<(usize, ProcId)>,
    /// NAT routers of sites: (the host whose TUN it holds, its namespace).
    pub routers: Vec<(usize, String)>,
    /// The `wanmpi-emu` binary that runs the forwarder and the holders (the
    /// launch agent is the same binary).
    pub exe: Option<PathBuf>,
}

impl State {
    pub fn netns_name(id: &str, host: usize) -> String {
        format!("{NETNS_PREFIX}{id}-h{host}")
    }

    /// The namespace holding host `host`'s TUN devices: its site's NAT
    /// router when it has one, else its own.
    pub fn tun_netns(&self, host: usize) -> Option<&str> {
        self.routers.iter().find(|(h, _)| *h == host).map(|(_, ns)| ns.as_str()).or(self.netns.get(host).map(String::as_str))
    }

    /// Name of the NAT router namespace of site `site` (inside this
    /// emulation's `wemu<id>-h` prefix, so `down` removes it).
    pub fn router_name(id: &str, site: usize) -> String {
        format!("{NETNS_PREFIX}{id}-hr{site}")
    }

    /// The recorded holder of host `host`'s namespaces.
    pub fn holder(&self, host: usize) -> Option<ProcId> {
        self.holders.iter().rev().find(|(h, _)| *h == host).map(|(_, p)| *p)
    }

    /// Does `name` look like one of this emulation's namespaces? A second
    /// check before deleting anything, in case the state file was edited.
    pub fn owns_netns(&self, name: &str) -> bool {
        name.starts_with(&format!("{NETNS_PREFIX}{}-h", self.id))
    }

    pub fn path(dir: &Path) -> PathBuf {
        dir.join("state")
    }

    /// Write atomically (temp file + rename).
    pub fn save(&self) -> Result<()> {
        let mut s = format!("{MAGIC}\nid={}\nhosts={}\npaths={}\n", self.id, self.hosts, self.paths);
        for n in &self.netns {
            s.push_str(&format!("netns={n}\n"));
        }
        if let Some(p) = self.forwarder {
            s.push_str(&format!("forwarder_pid={}\nforwarder_start={}\n", p.pid, p.start));
        }
        if let Some(e) = &self.exe {
            s.push_str(&format!("exe={}\n", e.display()));
        }
        for (h, ns) in &self.routers {
            s.push_str(&format!("router={h}:{ns}\n"));
        }
        for (h, p) in &self.holders {
            s.push_str(&format!("holder={h}:{}:{}\n", p.pid, p.start));
        }
        let tmp = self.dir.join("state.tmp");
        let ctx = |e| EmuError::io(format!("writing {}", tmp.display()), e);
        let mut f = File::create(&tmp).map_err(ctx)?;
        f.write_all(s.as_bytes()).map_err(ctx)?;
        f.sync_all().map_err(ctx)?;
        std::fs::rename(&tmp, Self::path(&self.dir)).map_err(|e| EmuError::io("renaming state file", e))
    }

    pub fn load(dir: &Path) -> Result<State> {
        let path = Self::path(dir);
        let text = std::fs::read_to_string(&path).map_err(|e| EmuError::io(format!("reading {}", path.display()), e))?;
        let mut lines = text.lines();
        if lines.next() != Some(MAGIC) {
            return Err(EmuError::state(&path, "not a wanmpi-emu state file"));
        }
        let mut st = State {
            dir: dir.to_path_buf(),
            id: String::new(),
            hosts: 0,
            paths: 1,
            netns: Vec::new(),
            forwarder: None,
            holders: Vec::new(),
            routers: Vec::new(),
            exe: None,
        };
        let (mut pid, mut start) = (None, None);
        for line in lines {
            let Some((k, v)) = line.split_once('=') else { continue };
            let num = || v.parse::<u64>().map_err(|_| EmuError::state(&path, format!("bad value in `{line}`")));
            match k {
                "id" => st.id = v.to_string(),
                "hosts" => st.hosts = num()? as usize,
                "paths" => st.paths = num()? as u8,
                "netns" => st.netns.push(v.to_string()),
                "forwarder_pid" => pid = Some(num()? as i32),
                "forwarder_start" => start = Some(num()?),
                "exe" => st.exe = Some(PathBuf::from(v)),
                "router" => {
                    let bad = || EmuError::state(&path, format!("bad value in `{line}`"));
                    let (h, ns) = v.split_once(':').ok_or_else(bad)?;
                    st.routers.push((h.parse().map_err(|_| bad())?, ns.to_string()));
                }
                "holder" => {
                    let f: Vec<u64> = v.split(':').filter_map(|x| x.parse().ok()).collect();
                    let [h, p, t] = f[..] else { return Err(EmuError::state(&path, format!("bad value in `{line}`"))) };
                    st.holders.push((h as usize, ProcId { pid: p as i32, start: t }));
                }
                _ => {}
            }
        }
        if st.id.is_empty() || !st.id.chars().all(|c| c.is_ascii_alphanumeric()) {
            return Err(EmuError::state(&path, "missing or malformed id"));
        }
        if let (Some(pid), Some(start)) = (pid, start) {
            st.forwarder = Some(ProcId { pid, start });
        }
        Ok(st)
    }
}

/// An exclusive `flock` on `DIR/lock`, released on drop.
pub struct Lock(#[allow(dead_code)] File); // kept open: the flock lives with the fd

impl Lock {
    /// Take the lock, waiting at most `limit` for another up/down to finish.
    pub fn take(dir: &Path, limit: Duration) -> Result<Lock> {
        let path = dir.join("lock");
        let f = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| EmuError::io(format!("opening {}", path.display()), e))?;
        let deadline = Instant::now() + limit;
        loop {
            // SAFETY: flock on an fd we own.
            if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
                return Ok(Lock(f));
            }
            if Instant::now() >= deadline {
                return Err(EmuError::state(dir, "locked by another wanmpi-emu up/down"));
            }
            // flock has no timed wait; poll at a coarse period, bounded above
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Start time (clock ticks since boot) and state letter of `pid`, if alive.
pub fn proc_start(pid: i32) -> Option<(u64, char)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    let state = fields.first()?.chars().next()?;
    Some((fields.get(19)?.parse().ok()?, state))
}

/// Is the recorded process still the same live (not zombie) process?
pub fn is_running(p: ProcId) -> bool {
    matches!(proc_start(p.pid), Some((start, st)) if start == p.start && st != 'Z' && st != 'X')
}

/// Every state directory under `root`.
pub fn list(root: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> =
        std::fs::read_dir(root).map(|d| d.filter_map(|e| e.ok()).map(|e| e.path()).filter(|p| State::path(p).exists()).collect()).unwrap_or_default();
    v.sort();
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn save_load_round_trip() {
        let dir = std::env::temp_dir().join(format!("wemu-state-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let st = State {
            dir: dir.clone(),
            id: "ab12".into(),
            hosts: 2,
            paths: 1,
            netns: vec![State::netns_name("ab12", 0), State::netns_name("ab12", 1)],
            forwarder: Some(ProcId { pid: 42, start: 7 }),
            holders: vec![(1, ProcId { pid: 43, start: 8 })],
            routers: vec![(0, State::router_name("ab12", 0))],
            exe: Some(PathBuf::from("/usr/bin/wanmpi-emu")),
        };
        st.save().unwrap();
        assert_eq!(State::load(&dir).unwrap(), st);
        assert!(st.owns_netns("wemuab12-h1"));
        assert!(!st.owns_netns("wemuab123-h1"));
        assert!(!st.owns_netns("other"));
        let _l = Lock::take(&dir, Duration::from_millis(10)).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn own_process_is_running() {
        let pid = std::process::id() as i32;
        let (start, _) = proc_start(pid).unwrap();
        assert!(is_running(ProcId { pid, start }));
        assert!(!is_running(ProcId { pid, start: start + 1 }));
    }
}
