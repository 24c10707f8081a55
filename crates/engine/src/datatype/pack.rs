//! Packing and unpacking (MPI-3.1 §4.2): copying the data bytes of `count`
//! elements between a user buffer and a contiguous byte stream, in typemap
//! order. The `_range` forms work on any window of the packed stream, so a
//! long message can be sent and received fragment by fragment.

use std::ptr;

use super::layout::walk_repeat;
use super::Datatype;

impl Datatype {
    /// Bytes that `count` elements pack to (exactly `count * size`,
    /// saturating: no buffer that large can exist).
    pub fn packed_size(&self, count: usize) -> usize {
        count.saturating_mul(self.size())
    }

    /// Calls `f(addr, len)` for the runs of packed bytes `[lo, hi)` of
    /// `count` elements, `addr` relative to the buffer start. Public for
    /// MPI-IO, whose file views place a filetype's data bytes in a file.
    pub fn walk_elements<F: FnMut(isize, usize)>(&self, count: usize, lo: usize, hi: usize, f: &mut F) {
        let hi = hi.min(self.packed_size(count));
        if lo >= hi {
            return;
        }
        let inner = self.inner();
        match inner.layout.single_block() {
            // Elements follow each other with no gap: one copy for the lot.
            Some((off, len)) if isize::try_from(len) == Ok(inner.extent) => f(off.wrapping_add(lo as isize), hi - lo),
            _ => walk_repeat(0, inner.extent, &inner.layout, lo, hi, f),
        }
    }

    /// Calls `f(offset, len)` for every run of data bytes of `count`
    /// elements, in typemap order, offsets relative to the buffer start:
    /// what one-sided communication sends so a target can place data
    /// without knowing the origin's datatype.
    pub fn for_each_block<F: FnMut(isize, usize)>(&self, count: usize, mut f: F) {
        self.walk_elements(count, 0, usize::MAX, &mut f);
    }

    /// Appends the data of `count` elements laid out at `base` to `out`, in
    /// typemap order.
    ///
    /// # Safety
    /// Every data byte of the `count` elements (`base + i * extent + d` for
    /// each displacement `d` of the typemap) must be readable.
    pub unsafe fn pack(&self, base: *const u8, count: usize, out: &mut Vec<u8>) {
        self.pack_range(base, count, 0, usize::MAX, out);
    }

    /// Appends packed bytes `[offset, offset + max)` of `count` elements
    /// (clipped to the packed size) to `out`; returns how many it appended.
    ///
    /// # Safety
    /// As for [`Datatype::pack`], for the bytes in the window.
    pub unsafe fn pack_range(&self, base: *const u8, count: usize, offset: usize, max: usize, out: &mut Vec<u8>) -> usize {
        let total = self.packed_size(count);
        let hi = offset.saturating_add(max).min(total);
        if offset >= hi {
            return 0;
        }
        let n = hi - offset;
        out.reserve(n);
        let spare = &mut out.spare_capacity_mut()[..n];
        let dst = spare.as_mut_ptr().cast::<u8>();
        let mut at = 0usize;
        self.walk_elements(count, offset, hi, &mut |addr, len| {
            if at + len > n {
                debug_assert!(false, "walk overran the window");
                return;
            }
            // SAFETY: the caller guarantees the source bytes are readable;
            // `dst[at..at + len]` is reserved capacity, checked just above.
            unsafe { copy_bytes(base.wrapping_offset(addr), dst.add(at), len) };
            at += len;
        });
        // SAFETY: the walk initialised exactly `at` bytes of the spare capacity.
        unsafe { out.set_len(out.len() + at) };
        at
    }

    /// Scatters `src` (packed bytes) into `count` elements at `base`; stops at
    /// the end of `src` or after `count` elements; returns bytes consumed.
    ///
    /// # Safety
    /// Every data byte of the `count` elements must be writable, and must not
    /// overlap `src`.
    pub unsafe fn unpack(&self, src: &[u8], base: *mut u8, count: usize) -> usize {
        self.unpack_range(src, base, count, 0)
    }

    /// Scatters `src` as packed bytes `[offset, offset + src.len())` of
    /// `count` elements (clipped to the packed size); returns bytes consumed.
    /// Fragments of a long message may so be unpacked in any order.
    ///
    /// # Safety
    /// As for [`Datatype::unpack`], for the bytes in the window.
    pub unsafe fn unpack_range(&self, src: &[u8], base: *mut u8, count: usize, offset: usize) -> usize {
        let total = self.packed_size(count);
        let hi = offset.saturating_add(src.len()).min(total);
        if offset >= hi {
            return 0;
        }
        let mut at = 0usize;
        self.walk_elements(count, offset, hi, &mut |addr, len| {
            // The walk yields exactly `hi - offset <= src.len()` bytes; the
            // check keeps a layout bug from reading past `src`.
            let Some(chunk) = src.get(at..at + len) else {
                debug_assert!(false, "walk overran the source");
                return;
            };
            // SAFETY: the caller guarantees the destination is writable.
            unsafe { copy_bytes(chunk.as_ptr(), base.wrapping_offset(addr), len) };
            at += len;
        });
        at
    }
}

/// `memcpy` with the common element sizes inlined: strided types of small
/// elements copy millions of tiny blocks, where a call per block dominates.
///
/// # Safety
/// As `ptr::copy_nonoverlapping(src, dst, len)`.
#[inline(always)]
unsafe fn copy_bytes(src: *const u8, dst: *mut u8, len: usize) {
    match len {
        1 => ptr::copy_nonoverlapping(src, dst, 1),
        2 => ptr::copy_nonoverlapping(src, dst, 2),
        4 => ptr::copy_nonoverlapping(src, dst, 4),
        8 => ptr::copy_nonoverlapping(src, dst, 8),
        16 => ptr::copy_nonoverlapping(src, dst, 16),
        _ => ptr::copy_nonoverlapping(src, dst, len),
    }
}
