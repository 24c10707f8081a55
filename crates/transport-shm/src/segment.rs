//! One shared segment per ordered pair of ranks (writer -> reader): a file
//! in /dev/shm holding a header page and the ring's data.
//!
//! Either side may create the file (`O_CREAT | O_EXCL`); the one that wins
//! sizes it, fills the header and stores `magic` last with Release, and the
//! other waits (bounded) for the size and the magic before trusting it. So
//! no ordering between the two ranks' setups is needed. Each side then
//! stores its pid; once both pids are there the file is unlinked, and the
//! mapping lives on only in the two processes.
//!
//! The header keeps what each side writes on its own cache line, so the
//! writer's `tail` and the reader's `head` do not bounce one line between
//! cores. The two counters, stored on every record, also have a line each,
//! apart from the doorbell counts and flags that the other side reads on
//! every poll or send: a counter store then never takes a line the other
//! side is about to read on the fast path.

use crate::ring::RingMem;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Instant;

pub(crate) const MAGIC: u64 = u64::from_le_bytes(*b"wanmpiSH");
pub(crate) const VERSION: u32 = 4;
/// The header takes one page, so the ring's data starts page-aligned.
pub(crate) const HEADER_BYTES: usize = 4096;

/// Written once at creation, then only the pids and closed flags.
#[repr(C, align(64))]
pub(crate) struct Meta {
    pub magic: AtomicU64,
    pub version: AtomicU32,
    pub writer_rank: AtomicU32,
    pub reader_rank: AtomicU32,
    _reserved: AtomicU32,
    pub ring_bytes: AtomicU64,
    /// Nonzero once that side has mapped the segment (and, for the writer,
    /// opened the reader's doorbell).
    pub writer_pid: AtomicU32,
    pub reader_pid: AtomicU32,
    /// Set by `shutdown`: the side left on purpose.
    pub writer_closed: AtomicU32,
    pub reader_closed: AtomicU32,
}

/// A ring counter alone on its line (stored per record; read by the other
/// side only for space estimates).
#[repr(C, align(64))]
pub(crate) struct CounterLine {
    pub value: AtomicU64,
}

/// Written by the writer (rarely: on rings and when the ring is full).
#[repr(C, align(64))]
pub(crate) struct WriterLine {
    /// Doorbell rings the writer gave the reader (for the reader's accounting).
    pub pokes: AtomicU64,
    /// The writer found the ring full: free bytes it wants before the
    /// reader rings it (0: none).
    pub space_wanted: AtomicU64,
}

/// Written by the reader (rarely: when it arms and rings).
#[repr(C, align(64))]
pub(crate) struct ReaderLine {
    /// Doorbell rings the reader gave the writer for freed space.
    pub space_pokes: AtomicU64,
    /// The reader may sleep: the writer rings its doorbell after publishing.
    pub armed: AtomicU32,
}

#[repr(C)]
pub(crate) struct Header {
    pub meta: Meta,
    pub writer: WriterLine,
    pub reader: ReaderLine,
    /// The writer's `tail`.
    pub tail: CounterLine,
    /// The reader's `head`.
    pub head: CounterLine,
}

const _: () = assert!(std::mem::size_of::<Header>() <= HEADER_BYTES);

/// A mapped segment. Unmapped on drop; unlinked on drop too if setup did
/// not get as far as unlinking it (a failed setup leaves nothing behind).
pub(crate) struct Segment {
    base: *mut u8,
    len: usize,
    ring_bytes: usize,
    path: PathBuf,
    linked: bool,
}

// SAFETY: the mapping is plain shared memory, accessed through atomics and
// the ring protocol; nothing in it is tied to a thread.
unsafe impl Send for Segment {}

fn setup_err(path: &Path, what: impl std::fmt::Display) -> wanmpi_transport::TransportError {
    wanmpi_transport::TransportError::Setup(format!("shm segment {}: {what}", path.display()))
}

impl Segment {
    /// Creates or opens the segment `path` of pair `writer -> reader` with
    /// `ring_bytes` of data, and maps it. Waits until `deadline` for a peer
    /// that created the file to finish its header.
    pub(crate) fn open(
        path: &Path,
        writer: u32,
        reader: u32,
        ring_bytes: usize,
        deadline: Instant,
    ) -> Result<Segment, wanmpi_transport::TransportError> {
        let len = HEADER_BYTES + ring_bytes;
        let (file, created) = loop {
            match OpenOptions::new().read(true).write(true).create_new(true).mode(0o600).custom_flags(libc::O_NOFOLLOW).open(path) {
                Ok(f) => break (f, true),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(setup_err(path, format!("cannot create: {e}"))),
            }
            match OpenOptions::new().read(true).write(true).custom_flags(libc::O_NOFOLLOW).open(path) {
                Ok(f) => break (f, false),
                // Removed between our two opens (a failed earlier attempt): create again.
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(setup_err(path, format!("cannot open: {e}"))),
            }
        };
        let mut seg = Segment { base: std::ptr::null_mut(), len, ring_bytes, path: path.to_owned(), linked: true };
        if created {
            reserve(&file, len).map_err(|e| setup_err(path, format!("cannot reserve {len} bytes (is /dev/shm full? WANMPI_SHM_RING): {e}")))?;
        } else {
            crate::setup::wait_until(
                deadline,
                || format!("the creator of {} to size it", path.display()),
                || {
                    let size = file.metadata().map_err(|e| setup_err(path, e))?.len() as usize;
                    if size != 0 && size != len {
                        return Err(setup_err(path, format!("is {size} bytes, expected {len}: do all ranks use the same WANMPI_SHM_RING?")));
                    }
                    Ok(size == len)
                },
            )?;
        }
        seg.base = map(&file, len).map_err(|e| setup_err(path, format!("mmap: {e}")))?;
        let m = &seg.header().meta;
        if created {
            m.version.store(VERSION, Ordering::Relaxed);
            m.writer_rank.store(writer, Ordering::Relaxed);
            m.reader_rank.store(reader, Ordering::Relaxed);
            m.ring_bytes.store(ring_bytes as u64, Ordering::Relaxed);
            m.magic.store(MAGIC, Ordering::Release);
        } else {
            crate::setup::wait_until(
                deadline,
                || format!("the creator of {} to fill its header", path.display()),
                || Ok(m.magic.load(Ordering::Acquire) == MAGIC),
            )?;
            let got = (m.version.load(Ordering::Relaxed), m.writer_rank.load(Ordering::Relaxed), m.reader_rank.load(Ordering::Relaxed));
            if got != (VERSION, writer, reader) || m.ring_bytes.load(Ordering::Relaxed) != ring_bytes as u64 {
                return Err(setup_err(path, format!("header (version, writer, reader) = {got:?} does not match this job")));
            }
        }
        Ok(seg)
    }

    pub(crate) fn header(&self) -> &Header {
        // SAFETY: base maps at least HEADER_BYTES, page-aligned; Header is
        // all atomics, valid for any bit pattern (zero-filled at creation).
        unsafe { &*(self.base as *const Header) }
    }

    /// The ring in this segment.
    pub(crate) fn ring(&self) -> RingMem {
        let h = self.header();
        // SAFETY: the data area follows the header page inside the mapping,
        // which lives as long as this Segment; callers keep the Segment
        // beside every Producer/Consumer made from it.
        unsafe { RingMem::new(&h.head.value, &h.tail.value, self.base.add(HEADER_BYTES), self.ring_bytes) }
    }

    /// Removes the file; the mapping stays.
    pub(crate) fn unlink(&mut self) {
        if std::mem::take(&mut self.linked) {
            let _ = std::fs::remove_file(&self.path);
        }
    }

    /// Raw bytes of the ring's data area, for tests that play a hostile peer.
    #[cfg(test)]
    pub(crate) fn data_ptr(&self) -> *mut u8 {
        // SAFETY: within the mapping.
        unsafe { self.base.add(HEADER_BYTES) }
    }
}

impl Drop for Segment {
    fn drop(&mut self) {
        self.unlink();
        if !self.base.is_null() {
            // SAFETY: base/len are the mapping made in `open`, not used after this.
            unsafe { libc::munmap(self.base as *mut libc::c_void, self.len) };
        }
    }
}

/// Sizes the file and allocates its pages now, so a full tmpfs is an error
/// here rather than a SIGBUS on first write into the ring.
fn reserve(f: &File, len: usize) -> io::Result<()> {
    // SAFETY: plain syscall on an fd we own.
    let r = unsafe { libc::posix_fallocate(f.as_raw_fd(), 0, len as libc::off_t) };
    match r {
        0 => Ok(()),
        // Filesystems without fallocate: size it sparse.
        libc::EOPNOTSUPP | libc::EINVAL => f.set_len(len as u64),
        e => Err(io::Error::from_raw_os_error(e)),
    }
}

fn map(f: &File, len: usize) -> io::Result<*mut u8> {
    // SAFETY: a fresh shared mapping of a file we own, `len` bytes long.
    let p = unsafe { libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, f.as_raw_fd(), 0) };
    if p == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    Ok(p as *mut u8)
}
