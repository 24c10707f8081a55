//! Waking a rank that may be asleep: one anonymous pipe per rank (its
//! "doorbell"). The rank keeps both ends, non-blocking (so it never sees
//! end-of-file), and polls the read end; a peer writes one byte to "ring"
//! it.
//!
//! Why a pipe: it has no name another user could create first, and a peer
//! of the same user can open it by `/proc/<pid>/fd/<n>` (`proc_fd.rs`); an
//! eventfd cannot be reopened that way, and an abstract Unix socket lives
//! in a network namespace (the emulator puts ranks of one host in
//! different ones).
//!
//! Lost wake-ups are avoided by the flag protocol in `transport.rs`: a
//! sleeper sets a flag, fences, re-checks the ring, then sleeps; a writer
//! publishes, fences, then checks the flag. Rings are counted in the
//! slot headers, so the sleeper reads the pipe only when a byte is due.

use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::os::unix::io::{AsRawFd, FromRawFd, OwnedFd};
use wanmpi_transport::TransportError;

/// This rank's own doorbell: readable while a ring is pending.
pub(crate) struct Doorbell {
    read: OwnedFd,
    /// Kept so the read end never sees end-of-file; also rings ourselves.
    write: OwnedFd,
}

impl Doorbell {
    pub(crate) fn create() -> Result<Doorbell, TransportError> {
        let mut fds = [0; 2];
        // SAFETY: a live two-int array; on success both are fresh fds of ours.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } != 0 {
            return Err(TransportError::Setup(format!("shm doorbell: pipe: {}", std::io::Error::last_os_error())));
        }
        // SAFETY: see above.
        Ok(unsafe { Doorbell { read: OwnedFd::from_raw_fd(fds[0]), write: OwnedFd::from_raw_fd(fds[1]) } })
    }

    pub(crate) fn fd(&self) -> i32 {
        self.read.as_raw_fd()
    }

    /// The pipe's inode, published so a peer knows it opened this pipe.
    pub(crate) fn ino(&self) -> Result<u64, TransportError> {
        let f = std::fs::File::from(self.read.try_clone().map_err(|e| TransportError::Setup(format!("shm doorbell: {e}")))?);
        Ok(f.metadata().map_err(|e| TransportError::Setup(format!("shm doorbell: fstat: {e}")))?.ino())
    }

    /// Reads every pending byte (non-blocking); returns how many.
    pub(crate) fn drain(&self) -> u64 {
        let mut buf = [0u8; 256];
        let mut total = 0;
        loop {
            // SAFETY: reading into a live buffer of its length.
            let n = unsafe { libc::read(self.read.as_raw_fd(), buf.as_mut_ptr() as *mut libc::c_void, buf.len()) };
            total += n.max(0) as u64;
            if n < buf.len() as isize {
                // EAGAIN or a short read: empty now. EINTR: a later drain retries.
                return total;
            }
        }
    }

    /// Rings our own doorbell: used when we leave frames behind, so a caller
    /// polling the fd does not sleep on them.
    pub(crate) fn ring_self(&self) -> bool {
        ring_fd(self.write.as_raw_fd())
    }
}

/// A peer's doorbell, opened for writing.
pub(crate) struct Bell {
    fd: OwnedFd,
}

impl Bell {
    /// Opens the doorbell `fd` of process `pid` and checks it is the pipe
    /// of inode `ino` it published, ours alone. Read-write, though we only
    /// write: a pipe with a reader (us) never raises SIGPIPE when its owner
    /// dies, which would kill a C program that did not ignore the signal.
    pub(crate) fn open(pid: u32, fd: i32, ino: u64) -> Result<Bell, String> {
        let f = crate::proc_fd::open(pid, fd)?;
        let meta = f.metadata().map_err(|e| format!("fstat: {e}"))?;
        crate::proc_fd::ours(&meta, "a pipe", meta.file_type().is_fifo())?;
        if meta.ino() != ino {
            return Err(format!("it is pipe {}, the rank published pipe {ino}", meta.ino()));
        }
        Ok(Bell { fd: OwnedFd::from(f) })
    }

    /// Writes one byte. False if it could not (pipe full: it is readable
    /// anyway).
    pub(crate) fn ring(&self) -> bool {
        ring_fd(self.fd.as_raw_fd())
    }
}

fn ring_fd(fd: i32) -> bool {
    // SAFETY: writing one byte from a live buffer.
    unsafe { libc::write(fd, b"!".as_ptr() as *const libc::c_void, 1) == 1 }
}
