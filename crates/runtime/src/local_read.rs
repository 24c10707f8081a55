//! The engine's `LocalRead` for real processes: `process_vm_readv` on the
//! pid the transport checked (`Transport::local_process`, shm), so a long
//! message between ranks of one host is copied once, from the sender's
//! buffer straight into the receiver's.
//!
//! A pidfd opened at start-up (while setup has just shown the peer alive)
//! guards against a recycled pid: a read counts only if the process the
//! pidfd names is still alive after it, and then the pid was still that
//! process during the read.
//!
//! The kernel's answers map onto the engine's fallback: EPERM, EACCES and
//! ENOSYS (Yama, seccomp, a container without the call) are `Refused`
//! (rendezvous through the ring from then on), ESRCH or a dead pidfd is
//! `Gone` (the receive fails naming the peer), anything else or a short
//! read is `Failed`.

use std::os::unix::io::{AsRawFd, FromRawFd, OwnedFd};

use wanmpi_engine::{LocalRead, ReadError};
use wanmpi_transport::{PeerId, Transport};

/// A local peer's process.
struct Process {
    pid: u32,
    /// `None` where pidfds are not available (old kernels, seccomp): then
    /// only ESRCH tells of an exit.
    pidfd: Option<OwnedFd>,
}

impl Process {
    fn open(pid: u32) -> Process {
        // SAFETY: plain syscall; a non-negative result is a new fd we own.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
        let pidfd = (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd as i32) });
        Process { pid, pidfd }
    }

    fn exited(&self) -> bool {
        let Some(fd) = &self.pidfd else { return false };
        let mut p = libc::pollfd { fd: fd.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        // SAFETY: one live pollfd, zero timeout.
        unsafe { libc::poll(&mut p, 1, 0) == 1 && p.revents != 0 }
    }
}

/// Reads the memory of the local peers the transport named.
pub(crate) struct ProcessRead {
    peers: Vec<Option<Process>>,
}

impl ProcessRead {
    /// A reader of every peer of `transport` on this host, or `None` when
    /// there is none.
    pub(crate) fn for_transport(transport: &dyn Transport) -> Option<ProcessRead> {
        let me = transport.rank();
        let peers: Vec<Option<Process>> =
            (0..transport.size()).map(|p| if p == me { None } else { transport.local_process(p).map(Process::open) }).collect();
        peers.iter().any(Option::is_some).then_some(ProcessRead { peers })
    }
}

impl LocalRead for ProcessRead {
    fn reaches(&self, peer: PeerId) -> bool {
        self.peers.get(peer as usize).is_some_and(Option::is_some)
    }

    fn read(&mut self, peer: PeerId, remote: u64, local: &mut [u8]) -> Result<(), ReadError> {
        let Some(Some(proc_)) = self.peers.get(peer as usize) else {
            return Err(ReadError::Refused(format!("rank {peer} is not a process of this host")));
        };
        let mut done = 0usize;
        while done < local.len() {
            let left = local.len() - done;
            let l = libc::iovec { iov_base: local[done..].as_mut_ptr().cast(), iov_len: left };
            let r = libc::iovec { iov_base: (remote as usize).wrapping_add(done) as *mut libc::c_void, iov_len: left };
            // SAFETY: `l` covers our own live slice; the remote side is
            // only read by the kernel, which checks it.
            let n = unsafe { libc::process_vm_readv(proc_.pid as libc::pid_t, &l, 1, &r, 1, 0) };
            if n < 0 {
                let e = std::io::Error::last_os_error();
                let why = format!("process_vm_readv of pid {}: {e}", proc_.pid);
                return Err(match e.raw_os_error() {
                    Some(libc::EPERM | libc::EACCES | libc::ENOSYS) => ReadError::Refused(why),
                    Some(libc::ESRCH) => ReadError::Gone(why),
                    _ => ReadError::Failed(why),
                });
            }
            if n == 0 {
                return Err(ReadError::Failed(format!("process_vm_readv of pid {} read nothing", proc_.pid)));
            }
            // A short count: the rest is read by the next call (the
            // kernel reads at most what the pages it pinned hold).
            done += n as usize;
        }
        if proc_.exited() {
            return Err(ReadError::Gone(format!("pid {} exited", proc_.pid)));
        }
        Ok(())
    }
}

/// Under Yama's `ptrace_scope` 1 a process may read only its descendants,
/// so ranks (siblings under mpirun) could not read each other: let any
/// process of our user read us, as Open MPI does. What this opens is in
/// docs/security.md ("Single copy"). Scope 0 needs nothing, scopes 2 and 3
/// cannot be opened this way (the reads are refused; rendezvous carries
/// the messages).
pub(crate) fn allow_readers() {
    let scope = std::fs::read_to_string("/proc/sys/kernel/yama/ptrace_scope").unwrap_or_default();
    if scope.trim() == "1" {
        // SAFETY: plain prctl with integer arguments.
        unsafe { libc::prctl(libc::PR_SET_PTRACER, libc::PR_SET_PTRACER_ANY, 0, 0, 0) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn own() -> ProcessRead {
        ProcessRead { peers: vec![None, Some(Process::open(std::process::id()))] }
    }

    #[test]
    fn reads_bytes_at_an_address_of_the_peer() {
        let src: Vec<u8> = (0..300_000u32).map(|i| (i * 7) as u8).collect();
        let mut dst = vec![0u8; src.len()];
        own().read(1, src.as_ptr() as u64, &mut dst).expect("reading our own memory");
        assert_eq!(src, dst);
    }

    #[test]
    fn a_bad_address_fails_and_an_unknown_peer_is_refused() {
        let mut dst = vec![0u8; 4096];
        assert!(matches!(own().read(1, 8, &mut dst), Err(ReadError::Failed(_))));
        assert!(matches!(own().read(0, 8, &mut dst), Err(ReadError::Refused(_))));
        assert!(!own().reaches(0) && own().reaches(1) && !own().reaches(7));
    }

    #[test]
    fn a_reaped_process_is_gone() {
        let mut child = std::process::Command::new("true").spawn().expect("spawn true");
        let p = Process::open(child.id());
        child.wait().expect("reap");
        let mut r = ProcessRead { peers: vec![None, Some(p)] };
        let mut dst = vec![0u8; 16];
        assert!(matches!(r.read(1, 4096, &mut dst), Err(ReadError::Gone(_))));
    }
}
