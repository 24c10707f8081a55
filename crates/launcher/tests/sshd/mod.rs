//! Real sshd (Debian's openssh-server) in network namespaces a test made:
//! keys in a scratch directory, one daemon per host with key
//! authentication, and the ssh options that reach them. Everything is
//! removed when the values drop, however the test ends.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

pub const SSHD: &str = "/usr/sbin/sshd";

fn on_path(cmd: &str) -> bool {
    Command::new("sh").args(["-c", &format!("command -v {cmd}")]).stdout(Stdio::null()).status().map(|s| s.success()).unwrap_or(false)
}

/// Why ssh tests cannot run here, if they cannot.
pub fn missing() -> Option<String> {
    if !Path::new(SSHD).is_file() {
        return Some(format!("{SSHD} is missing (apt-get install openssh-server)"));
    }
    if !on_path("ssh") || !on_path("ssh-keygen") {
        return Some("ssh or ssh-keygen is missing (openssh-client)".into());
    }
    None
}

pub fn run_ok(cmd: &mut Command, what: &str) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(out.status.success(), "{what}: {}", String::from_utf8_lossy(&out.stderr));
}

/// A scratch directory, removed at the end.
pub struct Scratch(pub PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Keys and the daemons. A session sshd forked survives its daemon (and
/// would hold the test's stderr open): every process left in a server's
/// namespace is ended too.
pub struct Sshd {
    daemons: Vec<(Child, String)>,
    pub ssh_args: String,
    dir: PathBuf,
    _scratch: Scratch,
}

impl Drop for Sshd {
    fn drop(&mut self) {
        for (c, netns) in &mut self.daemons {
            let _ = c.kill();
            let _ = c.wait();
            super::common::end_namespace_processes(netns);
        }
    }
}

impl Sshd {
    pub fn keys(name: &str) -> Sshd {
        let dir = std::env::temp_dir().join(format!("wanmpi-sshd-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("scratch");
        let scratch = Scratch(dir.clone());
        for k in ["client_key", "host_key"] {
            run_ok(Command::new("ssh-keygen").args(["-q", "-t", "ed25519", "-N", "", "-f"]).arg(dir.join(k)), "ssh-keygen");
        }
        std::fs::copy(dir.join("client_key.pub"), dir.join("authorized_keys")).expect("authorized_keys");
        std::fs::create_dir_all("/run/sshd").expect("/run/sshd");
        let ssh_args = format!(
            "-F /dev/null -i {} -o IdentitiesOnly=yes -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR -o ConnectTimeout=5",
            dir.join("client_key").display()
        );
        Sshd { daemons: Vec::new(), ssh_args, dir: dir.clone(), _scratch: scratch }
    }

    /// Starts a daemon in `netns` listening on `addr`, port 22.
    pub fn serve(&mut self, netns: &str, addr: &str) {
        let conf = self.dir.join(format!("sshd_config.{}", self.daemons.len()));
        let text = super::common::sshd_config(addr, &self.dir.join("host_key"), &self.dir.join("authorized_keys"));
        std::fs::write(&conf, text).expect("sshd_config");
        let child = Command::new("ip")
            .args(["netns", "exec", netns, SSHD, "-D", "-e", "-f"])
            .arg(&conf)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start sshd");
        self.daemons.push((child, netns.to_string()));
    }

    /// Waits (at most 15 s) until ssh from `client_ns` to `server` works.
    pub fn wait_for(&self, client_ns: &str, server: &str) {
        super::common::wait_for_ssh(client_ns, &self.ssh_args, server);
    }
}
