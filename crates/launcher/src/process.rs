//! Starting ranks in process groups of their own, and signalling them.

use crate::command::RankCommand;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus, Stdio};

/// Starts a rank: own process group (so signals reach all it started, and a
/// Ctrl-C at the terminal reaches only mpirun), stdin from /dev/null, output
/// piped, and killed by the kernel if the launcher dies without cleaning up.
pub fn spawn(cmd: &RankCommand) -> std::io::Result<Child> {
    let (program, args) = cmd.argv.split_first().ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidInput, "empty command"))?;
    let mut c = Command::new(program);
    c.args(args)
        .envs(cmd.env.0.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    // SAFETY: the closure runs between fork and exec and calls only
    // async-signal-safe functions (prctl, getppid, _exit).
    let parent = std::process::id() as libc::pid_t;
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
    c.spawn()
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
