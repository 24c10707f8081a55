//! Element access on unaligned native-endian byte buffers, and the
//! element-wise loop every typed reduction uses.

/// A fixed-size value read from and written to raw bytes.
pub(super) trait Elem: Copy {
    const SIZE: usize;
    /// Reads from the first `SIZE` bytes of `b` (callers pass exact chunks).
    fn load(b: &[u8]) -> Self;
    /// Writes to the first `SIZE` bytes of `b`.
    fn store(self, b: &mut [u8]);
}

macro_rules! impl_elem {
    ($($t:ty),*) => {$(
        impl Elem for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            fn load(b: &[u8]) -> Self {
                let mut raw = [0u8; std::mem::size_of::<$t>()];
                raw.copy_from_slice(&b[..Self::SIZE]);
                <$t>::from_ne_bytes(raw)
            }
            fn store(self, b: &mut [u8]) {
                b[..Self::SIZE].copy_from_slice(&self.to_ne_bytes());
            }
        }
    )*};
}

impl_elem!(i8, u8, i16, u16, i32, u32, i64, u64, f32, f64);

/// `inout[i] = f(in[i], inout[i])` over arrays of `T` packed back to back.
/// Buffers have equal lengths, a multiple of `T::SIZE`.
pub(super) fn zip<T: Elem>(input: &[u8], inout: &mut [u8], f: impl Fn(T, T) -> T) {
    for (a, b) in input.chunks_exact(T::SIZE).zip(inout.chunks_exact_mut(T::SIZE)) {
        f(T::load(a), T::load(b)).store(b);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn load_store_unaligned_round_trip() {
        let mut buf = [0u8; 9];
        0x1122_3344_5566_7788u64.store(&mut buf[1..]);
        assert_eq!(u64::load(&buf[1..]), 0x1122_3344_5566_7788);
        assert_eq!(buf[0], 0);
    }

    #[test]
    fn zip_visits_every_element_with_in_first() {
        let input: Vec<u8> = [10i16, 20, 30].iter().flat_map(|v| v.to_ne_bytes()).collect();
        let mut inout: Vec<u8> = [1i16, 2, 3].iter().flat_map(|v| v.to_ne_bytes()).collect();
        zip::<i16>(&input, &mut inout, |a, b| a - b);
        let out: Vec<i16> = inout.chunks_exact(2).map(i16::load).collect();
        assert_eq!(out, [9, 18, 27]);
    }
}
