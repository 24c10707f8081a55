//! Starting ranks in process groups of their own, and signalling them.

use crate::command::{RankCommand, SecretVia};
use std::fs::File;
use std::io::Write;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus, Stdio};

/// A pipe holding `bytes`, its write end already closed: the reader gets
/// them and then end of file. Both ends are close-on-exec, so no other
/// process started meanwhile inherits either.
fn pipe_holding(bytes: &[u8]) -> std::io::Result<OwnedFd> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: pipe2 fills the two descriptors it creates.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both descriptors are new and owned here alone.
    let (r, w) = unsafe { (OwnedFd::from_raw_fd(fds[0]), File::from_raw_fd(fds[1])) };
    // A pipe holds at least 4 KiB: a secret never blocks this write.
    let mut w = w;
    w.write_all(bytes)?;
    Ok(r)
}

/// Starts a rank: own process group (so signals reach all it started, and a
/// Ctrl-C at the terminal reaches only mpirun), output piped, killed by the
/// kernel if the launcher dies without cleaning up, and `secret` (then end
/// of file) on a pipe where `cmd.secret` says: a local rank's descriptor 3,
/// with stdin from /dev/null; an agent's stdin. An agent's stdin stays open
/// after the secret (the returned child's `stdin`): keep it while the rank
/// runs, since on a remote host its end of file ends the rank (see
/// `command::REMOTE_STEP`).
pub fn spawn(cmd: &RankCommand, secret: &[u8]) -> std::io::Result<Child> {
    let (program, args) = cmd.argv.split_first().ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidInput, "empty command"))?;
    let to = match cmd.secret {
        SecretVia::Stdin => return spawn_agent(program, args, cmd, secret),
        SecretVia::Fd(n) => n,
    };
    let pipe = pipe_holding(secret)?;
    let from = pipe.as_raw_fd();
    let mut c = Command::new(program);
    c.args(args).envs(cmd.env.0.iter().map(|(k, v)| (k.as_str(), v.as_str()))).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    c.process_group(0);
    die_with_launcher(&mut c);
    // SAFETY: the closure runs between fork and exec and calls only
    // async-signal-safe functions (dup2, fcntl).
    unsafe {
        c.pre_exec(move || {
            // dup2 onto another number clears close-on-exec on the copy; if
            // the pipe already is that number, clear it here.
            let ok = if from == to { libc::fcntl(to, libc::F_SETFD, 0) == 0 } else { libc::dup2(from, to) == to };
            if !ok {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child = c.spawn();
    // Our copy of the read end closes here; the child holds its own.
    drop(pipe);
    child
}

/// A launch agent: the secret line goes into its stdin, which stays open.
fn spawn_agent(program: &str, args: &[String], cmd: &RankCommand, secret: &[u8]) -> std::io::Result<Child> {
    let mut c = Command::new(program);
    c.args(args).envs(cmd.env.0.iter().map(|(k, v)| (k.as_str(), v.as_str()))).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    c.process_group(0);
    die_with_launcher(&mut c);
    let mut child = c.spawn()?;
    // A pipe holds at least 4 KiB: the secret never blocks this write.
    if let Some(w) = child.stdin.as_mut() {
        if let Err(e) = w.write_all(secret) {
            let _ = child.kill();
            let _ = child.wait();
            return Err(e);
        }
    }
    Ok(child)
}

/// SIGKILL when the launcher dies (its ranks must not outlive it).
fn die_with_launcher(c: &mut Command) {
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: the closure runs between fork and exec and calls only
    // async-signal-safe functions (prctl, getppid, _exit).
    unsafe {
        c.pre_exec(move || {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong);
            // The launcher may have died before prctl took effect.
            if libc::getppid() != parent {
                libc::_exit(127);
            }
            Ok(())
        });
    }
}

/// Sends `sig` to the process group led by `pid`. Errors (group already gone)
/// are expected when ending a job and are ignored.
pub fn signal_group(pid: u32, sig: i32) {
    if let Ok(p) = libc::pid_t::try_from(pid) {
        if p > 0 {
            // SAFETY: plain syscall; a negative pid names the process group.
            unsafe {
                libc::kill(-p, sig);
            }
        }
    }
}

pub fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGUSR2 => "SIGUSR2",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGSYS => "SIGSYS",
        _ => "a signal",
    }
}

/// `Ok(code)` for a normal exit, `Err(signal)` for a death by signal.
pub fn decode(status: ExitStatus) -> Result<i32, i32> {
    match (status.code(), status.signal()) {
        (Some(c), _) => Ok(c),
        (None, Some(s)) => Err(s),
        (None, None) => Ok(-1),
    }
}
