//! The machine ssh would connect to for a host name: an alias of the
//! user's ssh configuration (`Host gw1` / `HostName 203.0.113.7`) means
//! nothing to DNS, so mpirun asks ssh itself (`ssh [--ssh-args] -G HOST`,
//! which prints the configuration it would use and connects nowhere) and
//! routes toward the `hostname` it names. Without this an alias got no
//! address, and its ranks were told mpirun's host name for the key/value
//! service.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// `ssh -G` reads files only, but a `Match exec` in a configuration runs a
/// command: never wait for it longer than this.
const LIMIT: Duration = Duration::from_secs(5);

/// The `hostname` ssh would use for `host`, asked of the agent's ssh with
/// its options (`agent`: `ssh` and the `--ssh-args` words); `None` if the
/// agent is not ssh, ssh fails, or says nothing new.
pub fn hostname(agent: &[String], host: &str) -> Option<String> {
    let (prog, opts) = agent.split_first()?;
    if prog.rsplit('/').next() != Some("ssh") {
        return None;
    }
    let mut child =
        Command::new(prog).args(opts).arg("-G").arg(host).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().ok()?;
    let deadline = Instant::now() + LIMIT;
    let status = loop {
        match child.try_wait() {
            Ok(Some(st)) => break st,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    };
    let mut out = String::new();
    child.stdout.take()?.read_to_string(&mut out).ok()?;
    if !status.success() {
        return None;
    }
    parse_hostname(&out).filter(|h| h != host)
}

/// The value of the `hostname` line of `ssh -G` output.
fn parse_hostname(out: &str) -> Option<String> {
    out.lines().find_map(|l| l.strip_prefix("hostname ")).map(|h| h.trim().to_string()).filter(|h| !h.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hostname_line_is_read() {
        let out = "user alice\nhostname 203.0.113.7\nport 22\nhostkeyalias gw1\n";
        assert_eq!(parse_hostname(out).as_deref(), Some("203.0.113.7"));
        assert_eq!(parse_hostname("user alice\n"), None);
    }

    #[test]
    fn only_ssh_is_asked() {
        assert_eq!(hostname(&["rsh".into()], "gw1"), None);
        assert_eq!(hostname(&[], "gw1"), None);
    }

    /// Real OpenSSH where installed: `-o HostName=` stands for a
    /// configuration file's alias; a plain name comes back as itself.
    #[test]
    fn ssh_names_the_machine_behind_an_alias() {
        if Command::new("ssh").arg("-V").stderr(Stdio::null()).status().is_err() {
            eprintln!("SKIPPED ssh_names_the_machine_behind_an_alias: no ssh client");
            return;
        }
        let agent = ["ssh".to_string(), "-o".into(), "HostName=198.18.0.9".into()];
        assert_eq!(hostname(&agent, "gw1").as_deref(), Some("198.18.0.9"));
        assert_eq!(hostname(&["ssh".to_string()], "plain-name-42"), None, "unchanged: nothing new");
    }
}
