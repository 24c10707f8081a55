//! Opening another process's file descriptor by `/proc/<pid>/fd/<n>`, the
//! way a rank reaches a local peer's memfd and doorbell without a name.
//!
//! The kernel lets a process follow another's fd links only with ptrace
//! read access to it (`PTRACE_MODE_READ_FSCREDS`): the same user, not
//! another one (EACCES), and Yama's ptrace_scope, which limits attaching,
//! does not restrict it. Opening the link opens the same file afresh (a
//! memfd, a pipe). An eventfd cannot be reopened so (ENXIO), hence pipes
//! for doorbells. What comes back is still checked (`ours`), since a pid
//! can be reused and a fd number too.
//!
//! Public because the runtime opens the memory of shared RMA windows
//! (MPI_Win_allocate_shared) the same way.

use std::fs::{File, Metadata, OpenOptions};
use std::io;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};

/// Opens fd `fd` of process `pid` read-write, non-blocking, close-on-exec.
/// The error says what went wrong in words a user can act on.
pub fn open(pid: u32, fd: i32) -> Result<File, String> {
    let path = format!("/proc/{pid}/fd/{fd}");
    OpenOptions::new().read(true).write(true).custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC).open(&path).map_err(|e| {
        let why = match e.raw_os_error() {
            Some(libc::ENOENT) => "the process is gone or closed it (or runs on another host, or in another pid namespace)",
            Some(libc::EACCES) | Some(libc::EPERM) => "permission denied (does it run as another user, or is it not dumpable?)",
            _ => "",
        };
        format!("cannot open {path}: {e}{}{why}", if why.is_empty() { "" } else { ": " })
    })
}

/// Checks that an opened file is of the expected kind (`kind_ok`, named
/// `kind`), belongs to our effective user and is closed to everyone else.
pub fn ours(meta: &Metadata, kind: &str, kind_ok: bool) -> Result<(), String> {
    if !kind_ok {
        return Err(format!("it is not {kind} (mode {:o})", meta.mode()));
    }
    // SAFETY: geteuid cannot fail.
    let me = unsafe { libc::geteuid() };
    if meta.uid() != me {
        return Err(format!("it belongs to uid {}, we are uid {me}", meta.uid()));
    }
    if meta.mode() & 0o077 != 0 {
        return Err(format!("others may open it (mode {:o})", meta.mode() & 0o7777));
    }
    Ok(())
}

/// A fresh random token (128 bits) from the kernel.
pub fn random_token() -> io::Result<[u64; 2]> {
    let mut b = [0u8; 16];
    let mut got = 0;
    while got < b.len() {
        // SAFETY: writing into the rest of a live buffer.
        let n = unsafe { libc::getrandom(b[got..].as_mut_ptr() as *mut libc::c_void, b.len() - got, 0) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
            continue;
        }
        got += n as usize;
    }
    let (lo, hi) = b.split_at(8);
    Ok([u64::from_le_bytes(lo.try_into().expect("8 bytes")), u64::from_le_bytes(hi.try_into().expect("8 bytes"))])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pipe_of_ours_reopens_and_a_missing_fd_says_so() {
        let mut fds = [0; 2];
        // SAFETY: a live two-int array.
        assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
        let f = open(std::process::id(), fds[0]).unwrap();
        let m = f.metadata().unwrap();
        assert!(ours(&m, "a pipe", std::os::unix::fs::FileTypeExt::is_fifo(&m.file_type())).is_ok());
        assert!(ours(&m, "a file", m.file_type().is_file()).unwrap_err().contains("not a file"));
        let e = open(std::process::id(), 1 << 20).unwrap_err();
        assert!(e.contains("gone or closed"), "{e}");
        // SAFETY: closing the fds made above.
        unsafe {
            libc::close(fds[0]);
            libc::close(fds[1]);
        }
        assert_ne!(random_token().unwrap(), random_token().unwrap());
    }
}
