//! Waking a rank that may be asleep: one named FIFO per rank (its
//! "doorbell"). The rank opens its own FIFO read-write and non-blocking
//! (so it never sees end-of-file and writers can always open it) and polls
//! it; a peer writes one byte to "ring" it.
//!
//! Why a FIFO: an eventfd cannot reach another process without fd passing,
//! and an abstract Unix socket lives in a network namespace (the emulator
//! puts ranks of one host in different ones), while a FIFO next to the
//! segments works wherever they do. The file is unlinked as soon as every
//! peer has opened it.
//!
//! Lost wake-ups are avoided by the flag protocol in `transport.rs`: a
//! sleeper sets a flag, fences, re-checks the ring, then sleeps; a writer
//! publishes, fences, then checks the flag. Rings are counted in the
//! segments, so the sleeper reads the FIFO only when a byte is due.

use std::fs::OpenOptions;
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::io::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::time::Instant;
use wanmpi_transport::TransportError;

/// This rank's own doorbell: readable while a ring is pending.
pub(crate) struct Doorbell {
    fd: OwnedFd,
    path: PathBuf,
    linked: bool,
}

impl Doorbell {
    /// Creates the FIFO `path` (it must not exist) and opens it.
    pub(crate) fn create(path: &Path) -> Result<Doorbell, TransportError> {
        let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes())
            .map_err(|_| TransportError::Setup(format!("shm doorbell path {} has a NUL byte", path.display())))?;
        // SAFETY: a valid C string; mkfifo does not keep it.
        if unsafe { libc::mkfifo(c.as_ptr(), 0o600) } != 0 {
            let e = io::Error::last_os_error();
            return Err(TransportError::Setup(format!("shm doorbell {}: {e} (a job with the same key still running?)", path.display())));
        }
        match OpenOptions::new().read(true).write(true).custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW).open(path) {
            Ok(f) => Ok(Doorbell { fd: f.into(), path: path.to_owned(), linked: true }),
            Err(e) => {
                let _ = std::fs::remove_file(path);
                Err(TransportError::Setup(format!("shm doorbell {}: {e}", path.display())))
            }
        }
    }

    pub(crate) fn fd(&self) -> i32 {
        self.fd.as_raw_fd()
    }

    /// Reads every pending byte (non-blocking); returns how many.
    pub(crate) fn drain(&self) -> u64 {
        let mut buf = [0u8; 256];
        let mut total = 0;
        loop {
            // SAFETY: reading into a live buffer of its length.
            let n = unsafe { libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr() as *mut libc::c_void, buf.len()) };
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
        ring_fd(self.fd.as_raw_fd())
    }

    pub(crate) fn unlink(&mut self) {
        if std::mem::take(&mut self.linked) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

impl Drop for Doorbell {
    fn drop(&mut self) {
        self.unlink();
    }
}

/// A peer's doorbell, opened for writing.
pub(crate) struct Bell {
    fd: OwnedFd,
}

impl Bell {
    /// Opens the peer's FIFO, waiting until `deadline` for the peer to create it.
    pub(crate) fn open(path: &Path, peer: u32, deadline: Instant) -> Result<Bell, TransportError> {
        let mut fd = None;
        crate::setup::wait_until(
            deadline,
            || format!("rank {peer} to create its doorbell {}", path.display()),
            || {
                // Read-write, though we only write: a FIFO with a reader (us)
                // never raises SIGPIPE when its owner dies, which would kill a
                // C program that did not ignore the signal.
                match OpenOptions::new().read(true).write(true).custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW).open(path) {
                    Ok(f) => {
                        fd = Some(OwnedFd::from(f));
                        Ok(true)
                    }
                    Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
                    Err(e) => Err(TransportError::Setup(format!("shm doorbell {}: {e}", path.display()))),
                }
            },
        )?;
        Ok(Bell { fd: fd.expect("wait_until returned after Ok(true)") })
    }

    /// Writes one byte. False if it could not (FIFO full: it is readable
    /// anyway).
    pub(crate) fn ring(&self) -> bool {
        ring_fd(self.fd.as_raw_fd())
    }
}

fn ring_fd(fd: i32) -> bool {
    // SAFETY: writing one byte from a live buffer.
    unsafe { libc::write(fd, b"!".as_ptr() as *const libc::c_void, 1) == 1 }
}
