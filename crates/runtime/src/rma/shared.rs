//! The memory of a shared window (MPI_Win_allocate_shared, MPI-4.0 §12.2.3),
//! with no name anywhere: rank 0 makes a memfd and says where it is (a
//! `Ticket`: pid, fd number, inode and a random token); the other ranks
//! open it through `/proc/<pid>/fd/<n>` and check it, as the shm transport
//! opens its peers' memory (`wanmpi_transport_shm::proc_fd`).
//!
//! Why: a named POSIX segment (`/dev/shm/<name>`) can be created first by
//! another user of the host under the predictable name (rank 0's exclusive
//! create then fails: no window), and a job killed between create and
//! unlink leaves it there. A memfd has no name to take, the kernel lets
//! only our user (with ptrace read rights over rank 0) open it by /proc,
//! and it goes with the last fd or mapping.
//!
//! The memfd is mode 0600, its size sealed (`F_SEAL_SHRINK | F_SEAL_GROW`:
//! nobody can truncate it under our mappings, which would turn a later
//! access into SIGBUS), and not fallocated (a page costs memory once
//! touched). The token sits in the 16 bytes after the window's data, so a
//! reused pid and fd number cannot pass for rank 0's memory.

use std::fs::File;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::io::{AsRawFd, FromRawFd, OwnedFd};

use wanmpi_transport_shm::proc_fd;

use super::memory::Mapping;

const SEALS: libc::c_int = libc::F_SEAL_SHRINK | libc::F_SEAL_GROW;

/// Bytes of the broadcast ticket: five u64 fields and a flag.
pub(crate) const TICKET_BYTES: usize = 48;

/// Where rank 0's memory is, as broadcast to the others.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Ticket {
    pub pid: u32,
    pub fd: i32,
    pub ino: u64,
    pub token: [u64; 2],
}

impl Ticket {
    /// The bytes broadcast; all zero says rank 0 failed.
    pub(crate) fn encode(t: Option<&Ticket>) -> [u8; TICKET_BYTES] {
        let mut b = [0u8; TICKET_BYTES];
        if let Some(t) = t {
            let words = [1u64, t.pid as u64, t.fd as u64, t.ino, t.token[0], t.token[1]];
            for (c, w) in b.chunks_mut(8).zip(words) {
                c.copy_from_slice(&w.to_le_bytes());
            }
        }
        b
    }

    /// What `encode` wrote: None when rank 0 failed, Err for garbage.
    pub(crate) fn decode(b: &[u8; TICKET_BYTES]) -> Result<Option<Ticket>, String> {
        let w: Vec<u64> = b.chunks(8).map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes"))).collect();
        match w[0] {
            0 => Ok(None),
            1 => {
                let pid = u32::try_from(w[1]).ok().filter(|&p| p > 0);
                let fd = i32::try_from(w[2]).ok();
                match (pid, fd) {
                    (Some(pid), Some(fd)) => Ok(Some(Ticket { pid, fd, ino: w[3], token: [w[4], w[5]] })),
                    _ => Err(format!("a bad ticket (pid {}, fd {})", w[1], w[2])),
                }
            }
            f => Err(format!("a bad ticket (flag {f})")),
        }
    }
}

/// The file's length for `data` bytes of window: the data, padded to 8,
/// then the token.
fn file_len(data: usize) -> Option<usize> {
    data.checked_next_multiple_of(8)?.checked_add(16)
}

/// Rank 0's side: a sealed memfd for `data` bytes, mapped; its fd stays
/// open (the `File`) until every rank has mapped it.
pub(crate) fn make(data: usize) -> Result<(File, Mapping, Ticket), String> {
    let len = file_len(data).ok_or_else(|| format!("a window of {data} bytes is too large"))?;
    // SAFETY: a constant C string; a non-negative result is a new fd we own.
    let raw = unsafe { libc::memfd_create(c"wanmpi-win".as_ptr(), libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING) };
    if raw < 0 {
        return Err(format!("memfd_create: {}", std::io::Error::last_os_error()));
    }
    // SAFETY: raw is a fresh fd of ours.
    let file = File::from(unsafe { OwnedFd::from_raw_fd(raw) });
    // A memfd starts as mode 0777: only our user can reach it through /proc
    // anyway, but say so in the inode too (the others check it).
    file.set_permissions(std::fs::Permissions::from_mode(0o600)).map_err(|e| format!("fchmod: {e}"))?;
    file.set_len(len as u64).map_err(|e| format!("cannot size it to {len} bytes: {e}"))?;
    // SAFETY: plain fcntl on an fd we own.
    if unsafe { libc::fcntl(file.as_raw_fd(), libc::F_ADD_SEALS, SEALS | libc::F_SEAL_SEAL) } != 0 {
        return Err(format!("sealing its size: {}", std::io::Error::last_os_error()));
    }
    let token = proc_fd::random_token().map_err(|e| format!("a random token: {e}"))?;
    let ino = file.metadata().map_err(|e| format!("fstat: {e}"))?.ino();
    let map = map(&file, len)?;
    // SAFETY: the token's 16 bytes lie at the end of the `len` bytes mapped;
    // the mapping is 8-aligned (page-aligned) and so is len - 16.
    unsafe { std::ptr::copy_nonoverlapping(token.as_ptr(), map.ptr.add(len - 16).cast::<u64>(), 2) };
    let ticket = Ticket { pid: std::process::id(), fd: file.as_raw_fd(), ino, token };
    Ok((file, map, ticket))
}

/// Another rank's side: opens rank 0's memory from `t`, checks it is what
/// rank 0 made for a window of `data` bytes, and maps it. The error says
/// what was wrong.
pub(crate) fn open(t: &Ticket, data: usize) -> Result<Mapping, String> {
    let len = file_len(data).ok_or_else(|| format!("a window of {data} bytes is too large"))?;
    let file = proc_fd::open(t.pid, t.fd)?;
    let meta = file.metadata().map_err(|e| format!("fstat: {e}"))?;
    proc_fd::ours(&meta, "a regular file (memfd)", meta.file_type().is_file())?;
    if meta.ino() != t.ino {
        return Err(format!("it is inode {}, rank 0 made inode {} (its fd {} was closed or reused)", meta.ino(), t.ino, t.fd));
    }
    if meta.size() != len as u64 {
        return Err(format!("it is {} bytes, expected {len} (do all ranks agree on the window's sizes?)", meta.size()));
    }
    // SAFETY: plain fcntl on an fd we hold.
    let seals = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GET_SEALS) };
    if seals < 0 || seals & SEALS != SEALS {
        return Err("its size is not sealed (not a window's memfd)".into());
    }
    let map = map(&file, len)?;
    let mut token = [0u64; 2];
    // SAFETY: as in `make`: the last 16 bytes of the mapping, 8-aligned.
    unsafe { std::ptr::copy_nonoverlapping(map.ptr.add(len - 16).cast::<u64>(), token.as_mut_ptr(), 2) };
    if token != t.token {
        return Err("its token is not rank 0's (a reused pid or fd?)".into());
    }
    Ok(map)
}

fn map(file: &File, len: usize) -> Result<Mapping, String> {
    // SAFETY: maps `len` bytes of a file of that (sealed) size.
    let ptr = unsafe { libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, file.as_raw_fd(), 0) };
    if ptr == libc::MAP_FAILED {
        return Err(format!("mmap of {len} bytes: {}", std::io::Error::last_os_error()));
    }
    Ok(Mapping { ptr: ptr.cast(), len })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ticket_reads_back_and_a_failure_is_none() {
        let t = Ticket { pid: 42, fd: 7, ino: 1 << 40, token: [u64::MAX, 3] };
        assert_eq!(Ticket::decode(&Ticket::encode(Some(&t))), Ok(Some(t)));
        assert_eq!(Ticket::decode(&Ticket::encode(None)), Ok(None));
        let mut bad = Ticket::encode(Some(&t));
        bad[0] = 9;
        assert!(Ticket::decode(&bad).is_err());
    }

    #[test]
    fn memory_made_here_opens_through_proc_and_a_wrong_token_or_size_is_refused() {
        let Ok((file, mine, t)) = make(100) else { panic!("make") };
        // SAFETY: the first byte of a live mapping of 120 bytes.
        unsafe { *mine.ptr = 7 };
        let Ok(theirs) = open(&t, 100) else { panic!("open") };
        // SAFETY: as above, the other mapping of the same memory.
        assert_eq!(unsafe { *theirs.ptr }, 7);
        let e = open(&Ticket { token: [1, 2], ..t }, 100).err().expect("refused");
        assert!(e.contains("token"), "{e}");
        let e = open(&t, 200).err().expect("refused");
        assert!(e.contains("bytes, expected"), "{e}");
        let e = open(&Ticket { ino: t.ino + 1, ..t }, 100).err().expect("refused");
        assert!(e.contains("inode"), "{e}");
        drop(file);
        // Its fd number may be another file's by now (tests run on threads).
        assert!(open(&t, 100).is_err());
        assert!(file_len(usize::MAX).is_none());
    }
}
