//! The external32 data representation (MPI-4.0 §13.5.2), for
//! MPI_Pack_external/MPI_Unpack_external: every basic element big-endian,
//! at the standard's sizes (a C `long` takes 4 bytes, a `long double` is
//! IEEE binary128). The typemap is packed natively first and then each
//! element converted, walking the type signature.

use super::{BasicType, Datatype, DatatypeError};

impl BasicType {
    /// Bytes of one element in external32.
    pub const fn external32_size(self) -> usize {
        use BasicType::*;
        match self {
            Long | UnsignedLong => 4,
            LongDouble => 16,
            CLongDoubleComplex => 32,
            FloatInt => 8,
            DoubleInt => 12,
            LongInt | TwoInt => 8,
            ShortInt => 6,
            LongDoubleInt => 20,
            other => other.size(),
        }
    }
}

/// The parts an element is made of, converted one by one.
fn parts(ty: BasicType) -> Vec<BasicType> {
    use BasicType::*;
    if let Some((value, index, _)) = ty.pair_parts() {
        return vec![value, index];
    }
    match ty {
        CFloatComplex => vec![Float, Float],
        CDoubleComplex => vec![Double, Double],
        CLongDoubleComplex => vec![LongDouble, LongDouble],
        other => vec![other],
    }
}

/// x87 80-bit extended (in 16 bytes, little-endian) to binary128, big-endian:
/// the same sign and exponent; the fraction loses the explicit integer bit.
fn extended_to_quad(native: &[u8]) -> [u8; 16] {
    let mantissa = u64::from_le_bytes(native[0..8].try_into().expect("8 bytes"));
    let sign_exp = u16::from_le_bytes(native[8..10].try_into().expect("2 bytes")) as u128;
    let fraction = (mantissa & (u64::MAX >> 1)) as u128;
    ((sign_exp << 112) | (fraction << 49)).to_be_bytes()
}

fn quad_to_extended(ext: &[u8]) -> [u8; 16] {
    let q = u128::from_be_bytes(ext[0..16].try_into().expect("16 bytes"));
    let sign_exp = (q >> 112) as u16;
    let fraction = ((q >> 49) as u64) & (u64::MAX >> 1);
    // The integer bit is explicit in x87: set for every non-zero exponent.
    let integer = if sign_exp & 0x7fff != 0 { 1u64 << 63 } else { 0 };
    let mut out = [0u8; 16];
    out[0..8].copy_from_slice(&(fraction | integer).to_le_bytes());
    out[8..10].copy_from_slice(&sign_exp.to_le_bytes());
    out
}

/// One basic part, native to external32.
fn encode(ty: BasicType, native: &[u8], out: &mut Vec<u8>) {
    use BasicType::*;
    match ty {
        LongDouble => out.extend_from_slice(&extended_to_quad(native)),
        // 8 bytes natively, 4 in external32: the low half.
        Long | UnsignedLong => out.extend(native[0..4].iter().rev()),
        _ => out.extend(native.iter().rev()),
    }
}

/// One basic part, external32 to native.
fn decode(ty: BasicType, ext: &[u8], out: &mut Vec<u8>) {
    use BasicType::*;
    match ty {
        LongDouble => out.extend_from_slice(&quad_to_extended(ext)),
        Long => out.extend_from_slice(&(i32::from_be_bytes(ext[0..4].try_into().expect("4 bytes")) as i64).to_le_bytes()),
        UnsignedLong => out.extend_from_slice(&(u32::from_be_bytes(ext[0..4].try_into().expect("4 bytes")) as u64).to_le_bytes()),
        _ => out.extend(ext.iter().rev()),
    }
}

impl Datatype {
    /// Bytes `count` elements take in external32 (MPI_Pack_external_size).
    pub fn external32_size(&self, count: usize) -> usize {
        let mut one = 0usize;
        self.inner().sig.for_each_run(&mut |ty, n| one = one.saturating_add(ty.external32_size().saturating_mul(n)));
        one.saturating_mul(count)
    }

    /// Appends `count` elements at `base` to `out` in external32.
    ///
    /// # Safety
    /// `base` must hold `count` elements of this type.
    pub unsafe fn pack_external32(&self, base: *const u8, count: usize, out: &mut Vec<u8>) {
        let mut native = Vec::with_capacity(self.packed_size(count));
        self.pack(base, count, &mut native);
        let mut at = 0;
        for _ in 0..count {
            self.inner().sig.for_each_run(&mut |ty, n| {
                for _ in 0..n {
                    for part in parts(ty) {
                        encode(part, &native[at..at + part.size()], out);
                        at += part.size();
                    }
                }
            });
        }
    }

    /// Reads `count` elements of external32 from `ext` into `base`;
    /// returns the bytes read.
    ///
    /// # Safety
    /// `base` must have room for `count` elements of this type.
    pub unsafe fn unpack_external32(&self, ext: &[u8], base: *mut u8, count: usize) -> Result<usize, DatatypeError> {
        let need = self.external32_size(count);
        if ext.len() < need {
            return Err(DatatypeError::Overflow);
        }
        let mut native = Vec::with_capacity(self.packed_size(count));
        let mut at = 0;
        for _ in 0..count {
            self.inner().sig.for_each_run(&mut |ty, n| {
                for _ in 0..n {
                    for part in parts(ty) {
                        let len = part.external32_size();
                        decode(part, &ext[at..at + len], &mut native);
                        at += len;
                    }
                }
            });
        }
        self.unpack(&native, base, count);
        Ok(need)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ints_go_big_endian_and_longs_take_four_bytes() {
        let v: [i64; 2] = [-2, 0x0102_0304];
        let t = Datatype::basic(BasicType::Long);
        let mut out = Vec::new();
        unsafe { t.pack_external32(v.as_ptr() as *const u8, 2, &mut out) };
        assert_eq!(out, [0xff, 0xff, 0xff, 0xfe, 1, 2, 3, 4]);
        assert_eq!(t.external32_size(2), 8);
        let mut back = [0i64; 2];
        assert_eq!(unsafe { t.unpack_external32(&out, back.as_mut_ptr() as *mut u8, 2) }, Ok(8));
        assert_eq!(back, v);
    }

    #[test]
    fn doubles_and_pairs_round_trip() {
        #[repr(C)]
        #[derive(Debug, PartialEq, Clone, Copy)]
        struct DoubleInt(f64, i32);
        let v = [DoubleInt(1.5, 7), DoubleInt(-0.25, -3)];
        let t = Datatype::basic(BasicType::DoubleInt);
        let mut out = Vec::new();
        unsafe { t.pack_external32(v.as_ptr() as *const u8, 2, &mut out) };
        assert_eq!(out.len(), 24);
        assert_eq!(&out[0..8], &1.5f64.to_be_bytes());
        assert_eq!(&out[8..12], &7i32.to_be_bytes());
        let mut back = [DoubleInt(0.0, 0); 2];
        unsafe { t.unpack_external32(&out, back.as_mut_ptr() as *mut u8, 2) }.unwrap();
        assert_eq!(back, v);
    }

    #[test]
    fn extended_precision_maps_onto_binary128() {
        // 1.0 in x87: integer bit set, exponent 16383.
        let mut one = [0u8; 16];
        one[0..8].copy_from_slice(&(1u64 << 63).to_le_bytes());
        one[8..10].copy_from_slice(&16383u16.to_le_bytes());
        let q = extended_to_quad(&one);
        assert_eq!(u128::from_be_bytes(q), 16383u128 << 112);
        assert_eq!(quad_to_extended(&q), one);
        let zero = [0u8; 16];
        assert_eq!(quad_to_extended(&extended_to_quad(&zero)), zero);
    }

    #[test]
    fn a_short_buffer_is_refused() {
        let t = Datatype::basic(BasicType::Int);
        let mut x = [0i32; 2];
        assert!(unsafe { t.unpack_external32(&[0; 7], x.as_mut_ptr() as *mut u8, 2) }.is_err());
    }
}
