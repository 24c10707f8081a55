//! Network namespaces: creating and deleting them with `ip`, entering one
//! from a thread (`setns`), and commands that start inside one.

use crate::error::{EmuError, Result};
use std::fs::File;
use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// Where `ip netns` keeps its named namespaces.
pub fn netns_path(name: &str) -> PathBuf {
    PathBuf::from("/run/netns").join(name)
}

pub fn netns_exists(name: &str) -> bool {
    netns_path(name).exists()
}

/// Names of every named network namespace on the machine.
pub fn list_netns() -> Vec<String> {
    std::fs::read_dir("/run/netns")
        .map(|d| d.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default()
}

/// Run `ip ARGS`, turning a failure into an error that carries its stderr.
pub fn ip(args: &[&str]) -> Result<()> {
    ip_with_input(args, None)
}

/// Run `ip -n NS -batch -` with `commands` (one per line) on stdin: one
/// process for many settings.
pub fn ip_batch(ns: &str, commands: &str) -> Result<()> {
    ip_with_input(&["-n", ns, "-batch", "-"], Some(commands))
}

fn ip_with_input(args: &[&str], input: Option<&str>) -> Result<()> {
    let cmd_text = format!("ip {}", args.join(" "));
    let mut child = Command::new("ip")
        .args(args)
        .stdin(if input.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| EmuError::io(format!("running `{cmd_text}` (is iproute2 installed?)"), e))?;
    if let (Some(text), Some(mut stdin)) = (input, child.stdin.take()) {
        stdin.write_all(text.as_bytes()).map_err(|e| EmuError::io(format!("feeding `{cmd_text}`"), e))?;
    }
    let out = child.wait_with_output().map_err(|e| EmuError::io(format!("waiting for `{cmd_text}`"), e))?;
    if out.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&out.stderr).trim().to_string();
    if stderr.contains("Operation not permitted") || stderr.contains("Permission denied") {
        return Err(EmuError::NotPermitted(format!("`{cmd_text}`: {stderr}")));
    }
    Err(EmuError::Command { cmd: cmd_text, status: out.status.to_string(), stderr })
}

/// Move the calling thread into the namespace `name`.
pub fn enter(name: &str) -> Result<()> {
    let f = File::open(netns_path(name)).map_err(|e| EmuError::io(format!("opening netns {name}"), e))?;
    setns_file(&f).map_err(|e| EmuError::io(format!("entering netns {name}"), e))
}

/// Move the calling thread into the network namespace that `f` refers to.
pub fn setns_file(f: &File) -> std::io::Result<()> {
    // SAFETY: setns on a valid fd; affects only the calling thread.
    if unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Run `f` on a fresh thread that lives inside namespace `name`. Sockets it
/// creates belong to that namespace and can be used from any thread after.
pub fn in_netns<T: Send>(name: &str, f: impl FnOnce() -> T + Send) -> Result<T> {
    std::thread::scope(|s| {
        s.spawn(|| {
            enter(name)?;
            Ok(f())
        })
        .join()
        .map_err(|_| EmuError::Forwarder(format!("a closure run inside netns {name} panicked")))?
    })
}

/// A `Command` that starts `program` inside namespace `name` (setns between
/// fork and exec, like `ip netns exec` but without remounting /sys).
pub fn command_in(name: &str, program: impl AsRef<std::ffi::OsStr>) -> Result<Command> {
    let f = File::open(netns_path(name)).map_err(|e| EmuError::io(format!("opening netns {name}"), e))?;
    let mut cmd = Command::new(program);
    // SAFETY: the closure only calls setns, which is async-signal-safe.
    unsafe {
        cmd.pre_exec(move || setns_file(&f));
    }
    Ok(cmd)
}

/// Write a sysctl (`net.ipv4.tcp_congestion_control`) from inside the
/// current thread's namespace.
pub fn write_sysctl(key: &str, value: &str) -> Result<()> {
    let path = PathBuf::from("/proc/sys").join(key.replace('.', "/"));
    std::fs::write(&path, value).map_err(|e| EmuError::io(format!("writing {}", path.display()), e))
}
