//! POSIX record locks (fcntl F_SETLKW): they exclude other processes, and
//! so the ranks sharing a file, also on NFS. They do not exclude threads of
//! one process; callers add a mutex where threads of a rank may race.

use std::io;
use std::os::fd::RawFd;

/// A held lock on `[start, start + len)` (`len` 0: to the end of the file,
/// however it grows); released on drop.
pub struct RangeLock {
    fd: RawFd,
    start: u64,
    len: u64,
}

fn fcntl_lock(fd: RawFd, kind: i32, start: u64, len: u64) -> io::Result<()> {
    // SAFETY: flock is plain data; zeroed is a valid value before we fill it.
    let mut fl: libc::flock = unsafe { std::mem::zeroed() };
    fl.l_type = kind as libc::c_short;
    fl.l_whence = libc::SEEK_SET as libc::c_short;
    fl.l_start = i64::try_from(start).map_err(|_| io::Error::from_raw_os_error(libc::EOVERFLOW))?;
    fl.l_len = i64::try_from(len).map_err(|_| io::Error::from_raw_os_error(libc::EOVERFLOW))?;
    loop {
        // SAFETY: fd is an open descriptor of the caller; fl lives across the call.
        if unsafe { libc::fcntl(fd, libc::F_SETLKW, &fl) } == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINTR) {
            return Err(e);
        }
    }
}

impl RangeLock {
    /// Waits for a shared (`write == false`) or exclusive lock.
    pub fn take(fd: RawFd, write: bool, start: u64, len: u64) -> io::Result<RangeLock> {
        let kind = if write { libc::F_WRLCK } else { libc::F_RDLCK };
        fcntl_lock(fd, kind, start, len)?;
        Ok(RangeLock { fd, start, len })
    }
}

impl Drop for RangeLock {
    fn drop(&mut self) {
        // Unlocking an owned range of an open fd cannot fail in a way we
        // could act on; closing the fd would release it anyway.
        let _ = fcntl_lock(self.fd, libc::F_UNLCK, self.start, self.len);
    }
}
