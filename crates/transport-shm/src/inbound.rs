//! A rank's inbound memory: one memfd holding a slot (header and ring) for
//! every local sender, laid out as `slot.rs` says; and a sender's view of
//! its own slot in a peer's inbound memory.
//!
//! A memfd has no name anyone can open or create first: a peer reaches it
//! only through `/proc/<pid>/fd/<n>` (`proc_fd.rs`). It is not fallocated:
//! a page costs memory only once touched, so rings that are never written
//! (most pairs of a large job) cost nothing but their header's share of a
//! page, and a ring written only with short messages a page or two (the
//! writer starts again at offset 0 when it finds the ring empty, `ring.rs`).
//! Its size is sealed (`F_SEAL_SHRINK | F_SEAL_GROW`), so no process can
//! truncate it under our mappings (a later access would be SIGBUS, not an
//! error we could report).

use crate::slot::{Header, Layout, Mapping, Slot, PAGE};
use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::os::unix::io::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::Arc;
use wanmpi_transport::TransportError;

const SEALS: libc::c_int = libc::F_SEAL_SHRINK | libc::F_SEAL_GROW;

/// The memory other local ranks write to this rank.
pub(crate) struct Inbound {
    fd: OwnedFd,
    map: Arc<Mapping>,
    layout: Layout,
}

fn setup_err(what: impl std::fmt::Display) -> TransportError {
    TransportError::Setup(format!("shm inbound memory: {what}"))
}

impl Inbound {
    /// Creates the memory of rank `me` on a host of ranks `hosts` (sorted,
    /// `me` among them), rings of `ring` bytes, and fills the header of
    /// every sender's slot with `token`.
    pub(crate) fn create(me: u32, hosts: &[u32], ring: usize, token: [u64; 2]) -> Result<Inbound, TransportError> {
        let layout = Layout { ranks: hosts.len(), ring };
        // SAFETY: a constant C string; a non-negative result is a new fd we own.
        let raw = unsafe { libc::memfd_create(c"wanmpi-shm".as_ptr(), libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING) };
        if raw < 0 {
            return Err(setup_err(format!("memfd_create: {}", std::io::Error::last_os_error())));
        }
        // SAFETY: raw is a fresh fd of ours.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let file = File::from(fd);
        // A memfd starts as mode 0777; nobody else can reach it without
        // ptrace rights over us anyway, but say so in the inode too.
        use std::os::unix::fs::PermissionsExt;
        file.set_permissions(std::fs::Permissions::from_mode(0o600)).map_err(|e| setup_err(format!("fchmod: {e}")))?;
        file.set_len(layout.total() as u64).map_err(|e| setup_err(format!("cannot size it to {} bytes: {e}", layout.total())))?;
        // SAFETY: plain fcntl on an fd we own.
        if unsafe { libc::fcntl(file.as_raw_fd(), libc::F_ADD_SEALS, SEALS | libc::F_SEAL_SEAL) } != 0 {
            return Err(setup_err(format!("sealing its size: {}", std::io::Error::last_os_error())));
        }
        let map = Arc::new(Mapping::new(file.as_raw_fd(), 0, layout.total()).map_err(|e| setup_err(format!("mmap: {e}")))?);
        let inbound = Inbound { fd: OwnedFd::from(file), map, layout };
        for (i, &w) in hosts.iter().enumerate().filter(|&(_, &w)| w != me) {
            inbound.slot(i).init(w, me, ring, token);
        }
        Ok(inbound)
    }

    pub(crate) fn fd(&self) -> i32 {
        self.fd.as_raw_fd()
    }

    /// The slot of the `i`-th local rank.
    pub(crate) fn slot(&self, i: usize) -> Slot {
        let base = self.map.base();
        // SAFETY: header_at(i) and ring_at(i)..+ring lie inside the mapping
        // of layout.total() bytes for i < ranks; headers are 512-aligned.
        unsafe {
            let header = base.add(self.layout.header_at(i)) as *const Header;
            Slot::new(header, base.add(self.layout.ring_at(i)), self.layout.ring, vec![self.map.clone()])
        }
    }
}

/// Maps slot `i` of a peer's inbound memory `file` (opened through
/// /proc), after checking that the file is what a peer of ours made: a
/// memfd of our user, private, of the expected size, size sealed. The
/// header is checked by the caller (`Slot::mismatch`).
pub(crate) fn attach(file: &File, layout: Layout, i: usize) -> Result<Slot, String> {
    let meta = file.metadata().map_err(|e| format!("fstat: {e}"))?;
    crate::proc_fd::ours(&meta, "a regular file (memfd)", meta.file_type().is_file())?;
    if meta.size() != layout.total() as u64 {
        return Err(format!(
            "it is {} bytes, expected {} ({} ranks on this host, rings of {} bytes): do all ranks use the same WANMPI_SHM_RING?",
            meta.size(),
            layout.total(),
            layout.ranks,
            layout.ring
        ));
    }
    // SAFETY: plain fcntl on an fd we hold.
    let seals = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GET_SEALS) };
    if seals < 0 || seals & SEALS != SEALS {
        return Err("its size is not sealed (not a wanmpi memfd)".into());
    }
    let at = layout.header_at(i);
    let page = at & !(PAGE - 1);
    let head = Mapping::new(file.as_raw_fd(), page, PAGE).map_err(|e| format!("mmap of its header page: {e}"))?;
    let ring = Mapping::new(file.as_raw_fd(), layout.ring_at(i), layout.ring).map_err(|e| format!("mmap of its ring: {e}"))?;
    // SAFETY: the header lies within the mapped page (headers never cross
    // pages), the ring mapping is exactly the ring; both kept by the Slot.
    Ok(unsafe {
        let header = head.base().add(at - page) as *const Header;
        let data = ring.base();
        Slot::new(header, data, layout.ring, vec![Arc::new(head), Arc::new(ring)])
    })
}
