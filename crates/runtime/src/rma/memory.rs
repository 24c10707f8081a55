//! A window's memory at its target (MPI-4.0 §12.2): the program's own
//! (MPI_Win_create), ours (MPI_Win_allocate), a mapping shared by the
//! ranks of one host (MPI_Win_allocate_shared) or regions attached one by
//! one (MPI_Win_create_dynamic). Every access a peer asks for is checked
//! against it here before a byte is touched.

use wanmpi_engine::{ErrorClass, MpiError, MpiResult};

use super::wire::Place;

/// Memory we allocated for MPI_Win_allocate: zeroed, 64-byte aligned, freed
/// with the window.
pub struct Owned {
    ptr: *mut u8,
    layout: std::alloc::Layout,
}

// The block is only reached through the window, under the runtime lock (or
// by the program, which MPI's rules synchronise).
unsafe impl Send for Owned {}

impl Owned {
    pub fn new(size: usize) -> MpiResult<Owned> {
        let layout = std::alloc::Layout::from_size_align(size.max(1), 64)
            .map_err(|_| MpiError::new(ErrorClass::Size, format!("cannot allocate a window of {size} bytes")))?;
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        if ptr.is_null() {
            return Err(MpiError::new(ErrorClass::NoMem, format!("cannot allocate a window of {size} bytes")));
        }
        Ok(Owned { ptr, layout })
    }
    pub fn addr(&self) -> usize {
        self.ptr as usize
    }
}

impl Drop for Owned {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { std::alloc::dealloc(self.ptr, self.layout) };
    }
}

/// A mapping of a shared segment (MPI_Win_allocate_shared), unmapped with
/// the window.
pub struct Mapping {
    pub ptr: *mut u8,
    pub len: usize,
}

unsafe impl Send for Mapping {}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: mapped by `shared::map` with this length.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}

pub enum Memory {
    /// Memory the program gave (MPI_Win_create) or that we own: `base`,
    /// `size` bytes.
    Fixed { base: usize, size: usize, _owned: Option<Owned>, _mapping: Option<Mapping> },
    /// MPI_Win_create_dynamic: attached (address, size) regions; a target
    /// displacement is an absolute address.
    Dynamic { regions: Vec<(usize, usize)> },
}

impl Memory {
    pub fn base(&self) -> usize {
        match self {
            Memory::Fixed { base, .. } => *base,
            Memory::Dynamic { .. } => 0,
        }
    }
    pub fn size(&self) -> usize {
        match self {
            Memory::Fixed { size, .. } => *size,
            Memory::Dynamic { .. } => 0,
        }
    }

    /// The address where `place` starts, once every block of it is known
    /// to lie inside the window (or one attached region of it).
    pub fn resolve(&self, place: &Place, disp_unit: usize) -> MpiResult<usize> {
        let range = |msg: String| MpiError::new(ErrorClass::RmaRange, msg);
        let (mut lo, mut hi) = (0i128, 0i128);
        for (i, &(off, len)) in place.blocks.iter().enumerate() {
            let (a, b) = (off as i128, off as i128 + len as i128);
            if i == 0 {
                (lo, hi) = (a, b);
            } else {
                (lo, hi) = (lo.min(a), hi.max(b));
            }
        }
        match self {
            Memory::Fixed { base, size, .. } => {
                let start = place.disp as i128 * disp_unit as i128;
                if place.blocks.is_empty() {
                    return Ok(base.wrapping_add(start as usize));
                }
                if start + lo < 0 || start + hi > *size as i128 {
                    return Err(range(format!(
                        "bytes {}..{} are outside the window of {size} bytes (displacement {} x unit {disp_unit})",
                        start + lo,
                        start + hi,
                        place.disp
                    )));
                }
                Ok(base + start as usize)
            }
            Memory::Dynamic { regions } => {
                let at = place.disp as i128;
                if place.blocks.is_empty() {
                    return Ok(at as usize);
                }
                let inside = covered(regions, at + lo, at + hi);
                if !inside {
                    return Err(range(format!("address {:#x}..{:#x} is not in memory attached to this dynamic window", at + lo, at + hi)));
                }
                Ok(at as usize)
            }
        }
    }

    /// MPI_Win_attach.
    pub fn attach(&mut self, addr: usize, size: usize) -> MpiResult<()> {
        let Memory::Dynamic { regions } = self else {
            return Err(MpiError::new(ErrorClass::RmaFlavor, "MPI_Win_attach needs a window made by MPI_Win_create_dynamic"));
        };
        if regions.iter().any(|&(r, n)| addr < r + n && r < addr + size) {
            return Err(MpiError::new(ErrorClass::RmaAttach, format!("memory at {addr:#x} ({size} bytes) overlaps memory already attached")));
        }
        regions.push((addr, size));
        Ok(())
    }

    /// MPI_Win_detach.
    pub fn detach(&mut self, addr: usize) -> MpiResult<()> {
        let Memory::Dynamic { regions } = self else {
            return Err(MpiError::new(ErrorClass::RmaFlavor, "MPI_Win_detach needs a window made by MPI_Win_create_dynamic"));
        };
        let before = regions.len();
        regions.retain(|&(r, _)| r != addr);
        if regions.len() == before {
            return Err(MpiError::new(ErrorClass::RmaAttach, format!("no memory at {addr:#x} is attached to this window")));
        }
        Ok(())
    }
}

/// Whether the attached regions together cover `[lo, hi)` (an access may
/// span regions attached side by side; MPICH's tests do that).
fn covered(regions: &[(usize, usize)], lo: i128, hi: i128) -> bool {
    let mut rs: Vec<(i128, i128)> = regions.iter().map(|&(r, n)| (r as i128, r as i128 + n as i128)).collect();
    rs.sort_unstable();
    let mut at = lo;
    for (a, b) in rs {
        if a > at {
            break;
        }
        at = at.max(b);
        if at >= hi {
            return true;
        }
    }
    at >= hi
}

/// Copies `data` into the blocks of `place` starting at `addr`.
///
/// # Safety
/// `addr` comes from `Memory::resolve` for this `place`.
pub unsafe fn scatter(addr: usize, place: &Place, data: &[u8]) {
    let mut at = 0usize;
    for &(off, len) in &place.blocks {
        let len = len as usize;
        let Some(chunk) = data.get(at..at + len) else { return };
        std::ptr::copy(chunk.as_ptr(), (addr as *mut u8).wrapping_offset(off as isize), len);
        at += len;
    }
}

/// Reads the blocks of `place` starting at `addr`, in order.
///
/// # Safety
/// As for `scatter`.
pub unsafe fn gather(addr: usize, place: &Place) -> Vec<u8> {
    let mut out = Vec::with_capacity(place.bytes() as usize);
    for &(off, len) in &place.blocks {
        let src = (addr as *const u8).wrapping_offset(off as isize);
        out.extend_from_slice(std::slice::from_raw_parts(src, len as usize));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accesses_outside_the_window_are_refused() {
        let m = Memory::Fixed { base: 0x1000, size: 64, _owned: None, _mapping: None };
        let p = |disp, blocks: Vec<(i64, u64)>| Place { disp, blocks };
        assert_eq!(m.resolve(&p(2, vec![(0, 8)]), 8).unwrap(), 0x1010);
        assert!(m.resolve(&p(7, vec![(0, 8)]), 8).is_ok());
        assert_eq!(m.resolve(&p(8, vec![(0, 8)]), 8).unwrap_err().class, ErrorClass::RmaRange);
        assert_eq!(m.resolve(&p(0, vec![(-1, 2)]), 1).unwrap_err().class, ErrorClass::RmaRange);
        assert_eq!(m.resolve(&p(i64::MAX, vec![(0, 1)]), 8).unwrap_err().class, ErrorClass::RmaRange);
    }

    #[test]
    fn dynamic_windows_check_attached_regions() {
        let mut m = Memory::Dynamic { regions: vec![] };
        m.attach(0x1000, 16).unwrap();
        assert_eq!(m.attach(0x1008, 16).unwrap_err().class, ErrorClass::RmaAttach);
        let at = |a: i64, n: u64| Place { disp: a, blocks: vec![(0, n)] };
        assert!(m.resolve(&at(0x1000, 16), 1).is_ok());
        m.attach(0x1010, 8).unwrap();
        assert!(m.resolve(&at(0x1008, 16), 1).is_ok(), "across two regions side by side");
        assert!(m.resolve(&at(0x1008, 17), 1).is_err());
        m.detach(0x1010).unwrap();
        assert!(m.resolve(&at(0x1001, 16), 1).is_err());
        m.detach(0x1000).unwrap();
        assert!(m.resolve(&at(0x1000, 1), 1).is_err());
        assert!(m.detach(0x1000).is_err());
    }

    #[test]
    fn scatter_and_gather_follow_the_blocks() {
        let mut mem = [0u8; 8];
        let p = Place { disp: 0, blocks: vec![(6, 2), (0, 3)] };
        // SAFETY: the blocks lie within `mem`.
        unsafe { scatter(mem.as_mut_ptr() as usize, &p, &[1, 2, 3, 4, 5]) };
        assert_eq!(mem, [3, 4, 5, 0, 0, 0, 1, 2]);
        // SAFETY: as above.
        assert_eq!(unsafe { gather(mem.as_ptr() as usize, &p) }, vec![1, 2, 3, 4, 5]);
    }
}
