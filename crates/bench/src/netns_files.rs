//! What another MPI's launcher needs to run across emulated hosts:
//! name resolution of the hosts inside every namespace, and a remote-exec
//! agent that runs a command inside the namespace named like the host.
//!
//! `ip netns exec NS` bind-mounts each file of `/etc/netns/NS/` over the
//! file of the same name in `/etc`, so `/etc/netns/NS/hosts` is the hosts
//! file of everything started in NS. Both are removed on drop.

use crate::error::BenchError;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use wanmpi_emulator::Host;

const NETNS_ETC: &str = "/etc/netns";

/// The agent: `AGENT [-options] HOST COMMAND...`. Open MPI's rsh launcher
/// and MPICH hydra's ssh launcher both call it like ssh, with a command
/// meant for a remote shell, so it is run by `sh -c` inside the namespace.
pub const AGENT_SCRIPT: &str = r#"#!/bin/sh
# wanmpi bench: remote-exec agent for emulated hosts (network namespaces).
# Called like ssh: AGENT [-x ...] HOST COMMAND...; runs COMMAND in netns HOST.
while [ $# -gt 0 ]; do
  case "$1" in
    -*) shift ;;
    *) break ;;
  esac
done
host="$1"
shift
exec ip netns exec "$host" /bin/sh -c "$*"
"#;

/// Hosts files under /etc/netns and the agent script, removed on drop.
pub struct ForeignSetup {
    dirs: Vec<PathBuf>,
    pub agent: PathBuf,
}

/// The hosts-file text for `me`: every emulated host's namespace name at its
/// first address, and this machine's host name at `me`'s own address (MPIs
/// look up their own name to find the address they publish).
pub fn hosts_text(hosts: &[Host], me: usize, machine: &str) -> String {
    let mut s = String::from("127.0.0.1 localhost\n");
    for h in hosts {
        if let Some(a) = h.addrs.first() {
            let alias = if h.index == me && !machine.is_empty() { format!(" {machine}") } else { String::new() };
            s.push_str(&format!("{a} {}{alias}\n", h.netns));
        }
    }
    s
}

fn machine_name() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for its length; gethostname NUL-terminates
    // within it or we read up to the first NUL we find.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return String::new();
    }
    let end = buf.iter().position(|b| *b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

impl ForeignSetup {
    /// Writes /etc/netns/<ns>/hosts for every host (refusing to touch a
    /// directory that already exists: it is not ours) and the agent script
    /// into `work_dir`.
    pub fn create(hosts: &[Host], work_dir: &Path) -> Result<ForeignSetup, BenchError> {
        let mut setup = ForeignSetup { dirs: Vec::new(), agent: work_dir.join("netns-agent.sh") };
        let machine = machine_name();
        for h in hosts {
            let dir = Path::new(NETNS_ETC).join(&h.netns);
            if dir.exists() {
                return Err(BenchError::Usage(format!("{} already exists; not ours, not touching it", dir.display())));
            }
            std::fs::create_dir_all(&dir).map_err(|e| BenchError::io(format!("creating {}", dir.display()), e))?;
            setup.dirs.push(dir.clone());
            let f = dir.join("hosts");
            std::fs::write(&f, hosts_text(hosts, h.index, &machine)).map_err(|e| BenchError::io(format!("writing {}", f.display()), e))?;
        }
        std::fs::write(&setup.agent, AGENT_SCRIPT).map_err(|e| BenchError::io(format!("writing {}", setup.agent.display()), e))?;
        std::fs::set_permissions(&setup.agent, std::fs::Permissions::from_mode(0o755))
            .map_err(|e| BenchError::io(format!("chmod {}", setup.agent.display()), e))?;
        Ok(setup)
    }
}

impl Drop for ForeignSetup {
    fn drop(&mut self) {
        for d in &self.dirs {
            let _ = std::fs::remove_file(d.join("hosts"));
            let _ = std::fs::remove_dir(d);
        }
        let _ = std::fs::remove_file(&self.agent);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_file_names_every_host_and_this_machine_once() {
        let hosts: Vec<Host> =
            (0..2).map(|i| Host { index: i, netns: format!("wemuab-h{i}"), addrs: vec![format!("198.18.0.{}", i + 1).parse().unwrap()] }).collect();
        let t = hosts_text(&hosts, 1, "box");
        assert_eq!(t, "127.0.0.1 localhost\n198.18.0.1 wemuab-h0\n198.18.0.2 wemuab-h1 box\n");
    }
}
