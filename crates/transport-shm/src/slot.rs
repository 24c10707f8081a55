//! Where one ring lives (writer -> reader): a header of a few cache lines
//! and the ring's data, both inside the reader's inbound memory
//! (`inbound.rs`), and how that memory is laid out.
//!
//! Layout of a rank's inbound memory on a host of `n` ranks: first the
//! headers, one `SLOT_HEADER` (512 bytes) per local rank in rank order
//! (so eight share a page), padded to a page; then one ring of `ring`
//! bytes per local rank, page-aligned. Slot `i` belongs to the `i`-th local
//! rank; the reader's own slot is never written. Headers are packed rather
//! than a page each because the reader touches every header at set-up and
//! when it arms: a page each would cost n² pages on the host.
//!
//! The header keeps what each side writes on its own cache line, so the
//! writer's `tail` and the reader's `head` do not bounce one line between
//! cores. The two counters, stored on every record, also have a line each,
//! apart from the doorbell counts and flags that the other side reads on
//! every poll or send: a counter store then never takes a line the other
//! side is about to read on the fast path.

use crate::ring::RingMem;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

pub(crate) const MAGIC: u64 = u64::from_le_bytes(*b"wanmpiSH");
pub(crate) const VERSION: u32 = 5;
/// Bytes of one slot's header in the header area.
pub(crate) const SLOT_HEADER: usize = 512;
pub(crate) const PAGE: usize = 4096;

/// Written once by the reader at creation, then only the closed flags.
#[repr(C, align(64))]
pub(crate) struct Meta {
    pub magic: AtomicU64,
    pub version: AtomicU32,
    pub writer_rank: AtomicU32,
    pub reader_rank: AtomicU32,
    _reserved: AtomicU32,
    pub ring_bytes: AtomicU64,
    /// The reader's random token (also in its published endpoint): the
    /// writer checks it, so it knows it opened the memory it was told of.
    pub token: [AtomicU64; 2],
    /// Set by `shutdown`: the side left on purpose.
    pub writer_closed: AtomicU32,
    pub reader_closed: AtomicU32,
}

/// A ring counter alone on its line (stored per record; read by the other
/// side only for space estimates, and by the reader until the ring's first
/// record, see `ring::Consumer`).
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

const _: () = assert!(std::mem::size_of::<Header>() <= SLOT_HEADER && PAGE.is_multiple_of(SLOT_HEADER));

/// Offsets in the inbound memory of a host of `ranks` ranks with rings of
/// `ring` bytes (a power of two of at least a page).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Layout {
    pub ranks: usize,
    pub ring: usize,
}

impl Layout {
    fn header_area(&self) -> usize {
        (self.ranks * SLOT_HEADER).div_ceil(PAGE) * PAGE
    }
    pub fn header_at(&self, slot: usize) -> usize {
        slot * SLOT_HEADER
    }
    pub fn ring_at(&self, slot: usize) -> usize {
        self.header_area() + slot * self.ring
    }
    pub fn total(&self) -> usize {
        self.ring_at(self.ranks)
    }
}

/// One shared mapping, unmapped on drop.
pub(crate) struct Mapping {
    base: *mut u8,
    len: usize,
}

// SAFETY: the mapping is plain shared memory, accessed through atomics and
// the ring protocol; nothing in it is tied to a thread.
unsafe impl Send for Mapping {}
unsafe impl Sync for Mapping {}

impl Mapping {
    /// Maps `len` bytes of `fd` from `offset` (a multiple of the page size),
    /// shared, read-write.
    pub(crate) fn new(fd: i32, offset: usize, len: usize) -> std::io::Result<Mapping> {
        // SAFETY: a fresh shared mapping; the kernel checks fd, offset and length.
        let p = unsafe { libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, fd, offset as libc::off_t) };
        if p == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Mapping { base: p as *mut u8, len })
    }

    pub(crate) fn base(&self) -> *mut u8 {
        self.base
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: base/len are the mapping made in `new`, not used after this.
        unsafe { libc::munmap(self.base as *mut libc::c_void, self.len) };
    }
}

/// One ring's header and data, kept mapped as long as this lives.
pub(crate) struct Slot {
    header: *const Header,
    data: *mut u8,
    ring_bytes: usize,
    /// The mappings `header` and `data` point into.
    _maps: Vec<Arc<Mapping>>,
}

// SAFETY: pointers into mappings this Slot keeps alive (see Mapping).
unsafe impl Send for Slot {}

impl Slot {
    /// # Safety
    /// `header` must point to `SLOT_HEADER` bytes, 64-aligned, and `data` to
    /// `ring_bytes` page-aligned bytes, both inside `maps`.
    pub(crate) unsafe fn new(header: *const Header, data: *mut u8, ring_bytes: usize, maps: Vec<Arc<Mapping>>) -> Slot {
        Slot { header, data, ring_bytes, _maps: maps }
    }

    pub(crate) fn header(&self) -> &Header {
        // SAFETY: valid per `new`; Header is all atomics, valid for any bit
        // pattern (zero-filled by the kernel at creation).
        unsafe { &*self.header }
    }

    /// The ring in this slot.
    pub(crate) fn ring(&self) -> RingMem {
        let h = self.header();
        // SAFETY: the data area lies inside the mappings this Slot keeps;
        // callers keep the Slot beside every Producer/Consumer made from it.
        unsafe { RingMem::new(&h.head.value, &h.tail.value, self.data, self.ring_bytes) }
    }

    /// Why this header does not belong to the ring `writer -> reader` of
    /// `ring_bytes` with `token`, if it does not.
    pub(crate) fn mismatch(&self, writer: u32, reader: u32, ring_bytes: usize, token: [u64; 2]) -> Option<String> {
        let m = &self.header().meta;
        let magic = m.magic.load(Ordering::Acquire);
        if magic != MAGIC || m.version.load(Ordering::Relaxed) != VERSION {
            return Some(format!("not a wanmpi ring of this version (magic {magic:#x})"));
        }
        let got_token = [m.token[0].load(Ordering::Relaxed), m.token[1].load(Ordering::Relaxed)];
        if got_token != token {
            return Some("its token differs from the one the rank published".into());
        }
        let (w, r, b) = (m.writer_rank.load(Ordering::Relaxed), m.reader_rank.load(Ordering::Relaxed), m.ring_bytes.load(Ordering::Relaxed));
        if (w, r) != (writer, reader) {
            return Some(format!("the slot is for ranks {w} -> {r}, not {writer} -> {reader}"));
        }
        if b != ring_bytes as u64 {
            return Some(format!("its rings are {b} bytes, ours {ring_bytes}: do all ranks use the same WANMPI_SHM_RING?"));
        }
        None
    }

    /// Fills a fresh header (the reader, before publishing its memory).
    pub(crate) fn init(&self, writer: u32, reader: u32, ring_bytes: usize, token: [u64; 2]) {
        let m = &self.header().meta;
        m.version.store(VERSION, Ordering::Relaxed);
        m.writer_rank.store(writer, Ordering::Relaxed);
        m.reader_rank.store(reader, Ordering::Relaxed);
        m.ring_bytes.store(ring_bytes as u64, Ordering::Relaxed);
        m.token[0].store(token[0], Ordering::Relaxed);
        m.token[1].store(token[1], Ordering::Relaxed);
        m.magic.store(MAGIC, Ordering::Release);
    }

    /// Raw bytes of the ring's data area, for tests that play a hostile peer.
    #[cfg(test)]
    pub(crate) fn data_ptr(&self) -> *mut u8 {
        self.data
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_are_packed_and_rings_page_aligned() {
        let l = Layout { ranks: 9, ring: 64 << 10 };
        assert_eq!((l.header_at(0), l.header_at(8)), (0, 4096));
        assert_eq!(l.ring_at(0), 8192, "9 headers take two pages");
        assert_eq!(l.ring_at(2), 8192 + (128 << 10));
        assert_eq!(l.total(), 8192 + 9 * (64 << 10));
        assert_eq!(Layout { ranks: 8, ring: 64 << 10 }.ring_at(0), 4096);
    }
}
