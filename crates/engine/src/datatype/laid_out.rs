//! Packed elements put back in the memory layout of their datatype, in a
//! buffer of their own: a user-defined reduction (MPI-4.0 §6.9.5) is a C
//! function that reads and writes `count` elements of the datatype as they
//! lie in memory, while the collectives carry them packed.

use super::Datatype;

/// `count` elements of a datatype laid out in an owned buffer, element 0's
/// origin aligned to 16 bytes as a C program's buffer would be (the C
/// function may read them as doubles or long doubles).
pub struct LaidOut {
    words: Vec<u128>,
    /// Where element 0's origin (its displacement 0) is, relative to the
    /// buffer start: negative when the typemap starts after 0.
    origin: isize,
}

impl LaidOut {
    /// Unpacks `packed` (the data of `count` elements) into a fresh buffer
    /// spanning every element's true extent.
    pub fn from_packed(dt: &Datatype, packed: &[u8], count: usize) -> LaidOut {
        let (lb, ext, tx) = (dt.true_lb(), dt.extent(), dt.true_extent().max(0));
        let last = (count.saturating_sub(1) as isize).saturating_mul(ext);
        // Rounded down to 16, so the origin keeps the buffer's alignment.
        let lo = lb.saturating_add(last.min(0)).div_euclid(16) * 16;
        let hi = lb.saturating_add(last.max(0)).saturating_add(tx);
        let len = (hi - lo).max(0) as usize;
        let mut out = LaidOut { words: vec![0u128; len.div_ceil(16)], origin: -lo };
        let base = out.base();
        // SAFETY: every data byte of the `count` elements lies in
        // [lo, hi) of the origin, which is the buffer.
        unsafe { dt.unpack(packed, base, count) };
        out
    }

    /// Element 0's address (what a C function is given).
    pub fn base(&mut self) -> *mut u8 {
        self.words.as_mut_ptr().cast::<u8>().wrapping_offset(self.origin)
    }

    /// The data of the `count` elements, packed again.
    pub fn packed(&mut self, dt: &Datatype, count: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(dt.packed_size(count));
        // SAFETY: as in `from_packed`: the elements lie in the buffer.
        unsafe { dt.pack(self.base(), count, &mut out) };
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datatype::BasicType;

    fn i32s(b: &[u8]) -> Vec<i32> {
        b.chunks_exact(4).map(|c| i32::from_ne_bytes(c.try_into().unwrap())).collect()
    }

    #[test]
    fn a_strided_type_is_spread_out_and_packs_back_unchanged() {
        // 2 blocks of 1 int, stride 3 ints: data at ints 0 and 3 of each element.
        let int = Datatype::basic(BasicType::Int32);
        let v = Datatype::vector(2, 1, 3, &int).unwrap();
        let packed: Vec<u8> = [1i32, 2, 3, 4].iter().flat_map(|x| x.to_ne_bytes()).collect();
        let mut l = LaidOut::from_packed(&v, &packed, 2);
        // Element extent is 4 ints; element 1 starts at int 4.
        // SAFETY: the buffer holds at least the two elements' 8 ints.
        let mem = i32s(unsafe { std::slice::from_raw_parts(l.base(), 32) });
        assert_eq!((mem[0], mem[3], mem[4], mem[7]), (1, 2, 3, 4), "{mem:?}");
        assert_eq!(l.packed(&v, 2), packed);
    }

    #[test]
    fn a_type_whose_data_starts_after_its_origin_fits_its_buffer() {
        let int = Datatype::basic(BasicType::Int32);
        // One int at displacement 8, resized to extent 12.
        let h = Datatype::hindexed(&[1], &[8], &int).unwrap();
        let r = Datatype::resized(&h, 0, 12).unwrap();
        let packed: Vec<u8> = [7i32, 9].iter().flat_map(|x| x.to_ne_bytes()).collect();
        let mut l = LaidOut::from_packed(&r, &packed, 2);
        assert_eq!(l.words.len(), 2, "from the origin (8 rounded down to 0) to the end of the second int");
        assert_eq!(l.base() as usize % 16, 0);
        // SAFETY: element 1's int is at origin + 12 + 8, inside the buffer.
        let second = unsafe { *(l.base().add(20) as *const i32) };
        assert_eq!(second, 9);
        assert_eq!(l.packed(&r, 2), packed);
    }
}
