//! `wanmpi-emu agent STATE HOST CMD...`: a launch agent that behaves as ssh
//! does, into an emulated host as a separate machine.
//!
//! As ssh: the host comes after the agent's own words, the rest of the
//! words are joined with spaces into one string run by `sh -c` on the far
//! side, stdin/stdout/stderr are passed on (here: kept, the process becomes
//! the command), the exit status is the command's, and the environment is
//! not forwarded (only `PATH`, `HOME`, `USER`, `LOGNAME`, `SHELL`, `TERM`,
//! `TZ`, `LANG` and `LC_*`, as sshd and Debian's `SendEnv` give).
//! `SSH_CONNECTION`/`SSH_CLIENT` say where the caller came from: its public
//! address when it runs in an emulated host (what the far side's sshd
//! would see through NAT), and the far host's own address (its private one
//! behind NAT). Unlike ssh, the agent reaches every host, also one behind a
//! firewall (as ssh through a jump host would); it enters the host's
//! network, UTS and mount namespaces (`hostns.rs`), so the command sees
//! that host's `/tmp` and `/dev/shm`, and nothing of the caller's. The
//! agent becomes the command (exec), so signals sent to it reach the
//! command, where ssh would close the connection instead (the far side then
//! sees its stdin end, which mpirun's remote step also watches).

use crate::emulation::Emulation;
use crate::error::{EmuError, Result};
use crate::state::DEFAULT_ROOT;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Variables that cross to the far side (ssh's defaults and Debian's `SendEnv LANG LC_*`).
const KEPT: [&str; 8] = ["PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "TZ", "LANG"];

/// The state directory named by `target`: a path (with a `/`) or an id.
pub fn state_dir_of(target: &str) -> PathBuf {
    if target.contains('/') {
        PathBuf::from(target)
    } else {
        Path::new(DEFAULT_ROOT).join(target)
    }
}

/// The string the far side's `sh -c` runs: the words joined by spaces, as
/// ssh sends them.
pub fn remote_command(words: &[String]) -> Result<String> {
    if words.is_empty() {
        return Err(EmuError::Parse("agent: no command given (an interactive shell is not supported)".into()));
    }
    Ok(words.join(" "))
}

/// Run `words` on `host` of the emulation at `target`; returns only on failure.
pub fn run(target: &str, host: &str, words: &[String]) -> EmuError {
    match prepare(target, host, words) {
        Ok(mut cmd) => {
            let e = cmd.exec();
            EmuError::io("agent: exec sh", e)
        }
        Err(e) => e,
    }
}

fn prepare(target: &str, host: &str, words: &[String]) -> Result<Command> {
    let line = remote_command(words)?;
    let emu = Emulation::attach(&state_dir_of(target))?;
    let index = emu.resolve_host(host)?;
    let caller = (0..emu.host_count()).find(|&j| emu.host_ns(j).is_ok_and(|ns| ns.is_current_net()));
    let far = emu.nat(index)?;
    let ns = emu.host_ns(index)?;
    let cwd = std::env::current_dir().ok();
    // This process is single-threaded here: it may join a mount namespace.
    ns.enter().map_err(|e| EmuError::io(format!("agent: entering host {index}"), e))?;
    // A cwd that exists there too (a shared home or work tree), else /.
    let dir = cwd.filter(|d| d.is_dir()).unwrap_or_else(|| PathBuf::from("/"));
    let mut cmd = Command::new("/bin/sh");
    cmd.arg("-c").arg(line).current_dir(dir).env_clear();
    // sshd makes the command a session leader, without a terminal; this
    // fails (and changes nothing) when the caller already made us a group leader
    // SAFETY: setsid is async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
    for (k, v) in std::env::vars_os() {
        let name = k.to_string_lossy();
        if KEPT.contains(&name.as_ref()) || name.starts_with("LC_") {
            cmd.env(&k, &v);
        }
    }
    if let Some(c) = caller {
        let from = emu.nat(c)?.public;
        let to = far.private.unwrap_or(far.public);
        // the port is made up: no TCP connection carries the agent
        cmd.env("SSH_CONNECTION", format!("{from} 50022 {to} 22"));
        cmd.env("SSH_CLIENT", format!("{from} 50022 22"));
    }
    Ok(cmd)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_join_as_ssh_joins_them() {
        let w: Vec<String> = ["echo", "'a b'", "c"].iter().map(|s| s.to_string()).collect();
        assert_eq!(remote_command(&w).unwrap(), "echo 'a b' c");
        assert!(remote_command(&[]).is_err());
        assert_eq!(state_dir_of("3fa2c1"), Path::new("/run/wanmpi-emu/3fa2c1"));
        assert_eq!(state_dir_of("/tmp/emu"), Path::new("/tmp/emu"));
    }
}
