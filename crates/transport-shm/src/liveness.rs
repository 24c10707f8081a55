//! Whether a peer process still lives.
//!
//! A pidfd (Linux 5.3+) is best: it refers to the process itself, so a
//! recycled pid cannot fool it, it becomes readable when the process exits
//! (zombies included, which `kill(pid, 0)` still finds), and it can sit in
//! our epoll set so a sleeping rank wakes at once. Without pidfds (old
//! kernels, seccomp) we fall back to `kill(pid, 0) == ESRCH`, polled.
//!
//! Pids are compared within one pid namespace: ranks of a host must share it
//! (true for the launcher and the emulator, which only splits networks).

use std::os::unix::io::{AsRawFd, FromRawFd, OwnedFd};

pub(crate) struct Watch {
    pid: u32,
    pidfd: Option<OwnedFd>,
}

impl Watch {
    /// Watches `pid`. Open it while the peer is known to live (during setup)
    /// so the pidfd names the right process.
    pub(crate) fn new(pid: u32) -> Watch {
        // SAFETY: plain syscall; a non-negative result is a new fd we own.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
        let pidfd = (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd as i32) });
        Watch { pid, pidfd }
    }

    pub(crate) fn pid(&self) -> u32 {
        self.pid
    }

    /// The pidfd, for an epoll set.
    pub(crate) fn fd(&self) -> Option<i32> {
        self.pidfd.as_ref().map(|f| f.as_raw_fd())
    }

    /// Whether the process has exited.
    pub(crate) fn exited(&self) -> bool {
        match &self.pidfd {
            Some(fd) => {
                let mut p = libc::pollfd { fd: fd.as_raw_fd(), events: libc::POLLIN, revents: 0 };
                // SAFETY: one live pollfd, zero timeout.
                unsafe { libc::poll(&mut p, 1, 0) == 1 && p.revents != 0 }
            }
            None => {
                // SAFETY: signal 0 only checks that the process exists.
                let r = unsafe { libc::kill(self.pid as libc::pid_t, 0) };
                r != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_live_process_lives_and_a_reaped_child_is_gone() {
        assert!(!Watch::new(std::process::id()).exited());
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let w = Watch::new(child.id());
        child.wait().unwrap();
        assert!(w.exited());
    }
}
