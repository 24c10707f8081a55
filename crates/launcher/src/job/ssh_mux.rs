//! One ssh connection per host, however many ranks it runs: OpenSSH's
//! connection sharing. Every ssh that starts a rank on a host with several
//! ranks gets `-o ControlMaster=auto -o ControlPath=DIR/hN -o
//! ControlPersist=2`: the first becomes a client of a master it leaves in
//! the background, the others wait for the master's socket and share its
//! connection. Each rank still has its own ssh process (its own output,
//! exit status and secret pipe). When the job ends, mpirun tells each master
//! to exit (`ssh -O exit`) rather than leave it lingering (`ControlPersist`
//! is only the fallback if that fails). DIR is private to mpirun's user and
//! removed then.

use crate::error::LaunchError;
use std::collections::HashMap;
use std::os::unix::fs::DirBuilderExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long the ranks after the first on a host wait for the master's
/// socket; past it they connect on their own (slower, never wrong).
pub const MASTER_WAIT: Duration = Duration::from_secs(15);

/// What OpenSSH appends to a ControlPath while it binds the master's socket.
const SSH_TEMP_SUFFIX: usize = 17;

pub struct Mux {
    dir: PathBuf,
    /// The agent's words (ssh and the user's options), to stop the masters.
    agent: Vec<String>,
    /// Host name -> its number in socket names, for hosts sharing.
    hosts: HashMap<String, usize>,
}

impl Mux {
    /// Connection sharing for the hosts in `rank_hosts` that run more than
    /// one rank (every remote host with `every_host`: `--stage` opens
    /// sessions of its own), when the agent is ssh; `None` when nothing
    /// would share.
    pub fn plan(agent: &[String], rank_hosts: &[(&str, bool)], job_id: &str, every_host: bool) -> Result<Option<Mux>, LaunchError> {
        let is_ssh = agent.first().is_some_and(|p| p.rsplit('/').next() == Some("ssh"));
        if !is_ssh || agent.iter().any(|w| w.contains("{host}")) {
            return Ok(None);
        }
        let mut count: HashMap<&str, usize> = HashMap::new();
        for (h, local) in rank_hosts {
            if !local {
                *count.entry(h).or_default() += 1;
            }
        }
        let mut shared: Vec<&str> = count.into_iter().filter(|(_, n)| *n > 1 || every_host).map(|(h, _)| h).collect();
        if shared.is_empty() {
            return Ok(None);
        }
        shared.sort_unstable();
        // A master binds its socket first as ControlPath plus "." and 16
        // random characters, then renames it.
        let longest = format!("h{}", shared.len() - 1).len() + SSH_TEMP_SUFFIX;
        let dir = crate::socket_dir::path_for(&format!("wanmpi-ssh-{job_id}"), longest);
        std::fs::DirBuilder::new().mode(0o700).create(&dir)?;
        let hosts = shared.into_iter().enumerate().map(|(i, h)| (h.to_string(), i)).collect();
        Ok(Some(Mux { dir, agent: agent.to_vec(), hosts }))
    }

    fn socket(&self, host: &str) -> Option<PathBuf> {
        self.hosts.get(host).map(|i| self.dir.join(format!("h{i}")))
    }

    /// Whether ranks on `host` share a connection.
    pub fn shares(&self, host: &str) -> bool {
        self.hosts.contains_key(host)
    }

    /// `agent` with the sharing options after `ssh`, for a rank on `host`.
    pub fn agent_for(&self, agent: &[String], host: &str) -> Vec<String> {
        let mut words = agent.to_vec();
        if let Some(sock) = self.socket(host) {
            let opts = [
                "-o".to_string(),
                "ControlMaster=auto".into(),
                "-o".into(),
                format!("ControlPath={}", sock.display()),
                "-o".into(),
                "ControlPersist=2".into(),
            ];
            words.splice(1..1, opts);
        }
        words
    }

    /// Waits (at most `limit`) until the master for `host` listens.
    pub fn wait_for_master(&self, host: &str, limit: Duration) -> bool {
        let Some(sock) = self.socket(host) else { return false };
        let deadline = Instant::now() + limit;
        loop {
            if sock.exists() {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// How long stopping one master may take before it is left to
/// `ControlPersist`.
const STOP_WAIT: Duration = Duration::from_secs(3);

impl Mux {
    /// Asks the master for `host`, if it is up, to end its connection now.
    fn stop_master(&self, host: &str) {
        if !self.socket(host).is_some_and(|s| s.exists()) {
            return;
        }
        let mut words = self.agent_for(&self.agent, host);
        words.extend(["-O".to_string(), "exit".into(), host.to_string()]);
        let child = Command::new(&words[0]).args(&words[1..]).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).spawn();
        let Ok(mut child) = child else { return };
        let deadline = Instant::now() + STOP_WAIT;
        while matches!(child.try_wait(), Ok(None)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        if matches!(child.try_wait(), Ok(None)) {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Mux {
    fn drop(&mut self) {
        let hosts: Vec<String> = self.hosts.keys().cloned().collect();
        for h in hosts {
            self.stop_master(&h);
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn only_ssh_hosts_with_several_ranks_share() {
        let ranks = [("a", false), ("b", false), ("b", false), ("localhost", true), ("localhost", true)];
        assert!(Mux::plan(&words("ip netns exec {host}"), &ranks, "t1", false).unwrap().is_none());
        assert!(Mux::plan(&words("rsh"), &ranks, "t2", false).unwrap().is_none());
        assert!(Mux::plan(&words("ssh"), &[("a", false), ("b", false)], "t3", false).unwrap().is_none());
        let every = Mux::plan(&words("ssh"), &[("a", false), ("b", false)], &format!("t5-{}", std::process::id()), true).unwrap().unwrap();
        assert!(every.shares("a") && every.shares("b"));
        let m = Mux::plan(&words("ssh -p 22"), &ranks, &format!("t4-{}", std::process::id()), false).unwrap().unwrap();
        assert!(m.shares("b") && !m.shares("a") && !m.shares("localhost"));
        let w = m.agent_for(&words("ssh -p 22"), "b");
        assert_eq!(w[..3], words("ssh -o ControlMaster=auto"));
        assert!(w[4].starts_with("ControlPath=") && w[4].ends_with("/h0"), "{w:?}");
        assert_eq!(w[5..], words("-o ControlPersist=2 -p 22"));
        assert_eq!(m.agent_for(&words("ssh -p 22"), "a"), words("ssh -p 22"));
        let dir = m.dir.clone();
        assert!(!m.wait_for_master("b", Duration::from_millis(30)));
        drop(m);
        assert!(!dir.exists());
    }
}
