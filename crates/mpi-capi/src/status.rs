//! MPI_Status in MPICH's layout (20 bytes): the byte count split over two
//! ints, the cancelled flag in bit 0 of the high word.

use std::os::raw::c_int;

use wanmpi_runtime::Status;

#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[allow(non_snake_case)]
pub struct MPI_Status {
    pub count_lo: c_int,
    pub count_hi_and_cancelled: c_int,
    pub MPI_SOURCE: c_int,
    pub MPI_TAG: c_int,
    pub MPI_ERROR: c_int,
}

/// MPI_STATUS_IGNORE and MPI_STATUSES_IGNORE are `(MPI_Status *)1`.
pub fn ignored(p: *const MPI_Status) -> bool {
    p.is_null() || p as usize == 1
}

impl MPI_Status {
    pub fn bytes(&self) -> u64 {
        (self.count_lo as u32 as u64) | (((self.count_hi_and_cancelled as u32 >> 1) as u64) << 32)
    }
    pub fn set_bytes(&mut self, n: u64) {
        self.count_lo = n as u32 as c_int;
        let cancelled = self.count_hi_and_cancelled & 1;
        self.count_hi_and_cancelled = (((n >> 32) as u32) << 1) as c_int | cancelled;
    }
    pub fn cancelled(&self) -> bool {
        self.count_hi_and_cancelled & 1 != 0
    }
    pub fn set_cancelled(&mut self, c: bool) {
        self.count_hi_and_cancelled = (self.count_hi_and_cancelled & !1) | c_int::from(c);
    }
}

/// Fills a status unless it is ignored. MPI_ERROR is left alone except by
/// the multiple-completion calls, as the standard says.
pub fn write(p: *mut MPI_Status, s: &Status) {
    if ignored(p) {
        return;
    }
    // SAFETY: not null and not the ignore marker: the user's status.
    let st = unsafe { &mut *p };
    st.MPI_SOURCE = s.source;
    st.MPI_TAG = s.tag;
    st.set_bytes(s.bytes as u64);
    st.set_cancelled(s.cancelled);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn count_and_cancel_bits_round_trip() {
        assert_eq!(std::mem::size_of::<MPI_Status>(), 20);
        let mut s = MPI_Status::default();
        s.set_cancelled(true);
        s.set_bytes((5u64 << 32) + 7);
        assert_eq!(s.bytes(), (5u64 << 32) + 7);
        assert!(s.cancelled());
        s.set_cancelled(false);
        assert_eq!(s.bytes(), (5u64 << 32) + 7);
    }
}
