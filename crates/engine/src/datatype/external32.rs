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
/// the same sign, exponent and bias; the fraction loses the explicit
/// integer bit and gains 49 zero bits, so every value converts exactly.
fn extended_to_quad(native: &[u8]) -> [u8; 16] {
    let mantissa = u64::from_le_bytes(native[0..8].try_into().expect("8 bytes"));
    let sign_exp = u16::from_le_bytes(native[8..10].try_into().expect("2 bytes")) as u128;
    let fraction = (mantissa & (u64::MAX >> 1)) as u128;
    ((sign_exp << 112) | (fraction << 49)).to_be_bytes()
}

/// binary128 (big-endian) to x87 80-bit extended: the 112-bit fraction
/// rounded to 63 bits, to nearest, ties to even (a carry moves into the
/// exponent, up to infinity); a NaN stays a NaN.
fn quad_to_extended(ext: &[u8]) -> [u8; 16] {
    const DROPPED: u32 = 112 - 63;
    let q = u128::from_be_bytes(ext[0..16].try_into().expect("16 bytes"));
    let mut sign_exp = (q >> 112) as u16;
    let full = q & ((1u128 << 112) - 1);
    let mut fraction = (full >> DROPPED) as u64;
    let rest = full & ((1u128 << DROPPED) - 1);
    let half = 1u128 << (DROPPED - 1);
    if sign_exp & 0x7fff == 0x7fff {
        // Infinity or NaN: a NaN whose payload lay in the dropped bits stays quiet NaN.
        if full != 0 && fraction == 0 {
            fraction = 1 << 62;
        }
    } else if rest > half || (rest == half && fraction & 1 == 1) {
        fraction += 1;
        if fraction == 1 << 63 {
            fraction = 0;
            sign_exp += 1;
        }
    }
    // The integer bit is explicit in x87: set for every non-zero exponent.
    let integer = if sign_exp & 0x7fff != 0 { 1u64 << 63 } else { 0 };
    let mut out = [0u8; 16];
    out[0..8].copy_from_slice(&(fraction | integer).to_le_bytes());
    out[8..10].copy_from_slice(&sign_exp.to_le_bytes());
    out
}

/// One basic part, native to external32. A C `long` (8 bytes here) takes 4
/// in external32: a value beyond 32 bits cannot be stored, and is an error
/// rather than silently cut (MPI_ERR_CONVERSION in the C API).
fn encode(ty: BasicType, native: &[u8], out: &mut Vec<u8>) -> Result<(), DatatypeError> {
    use BasicType::*;
    let word = || i64::from_le_bytes(native[0..8].try_into().expect("8 bytes"));
    match ty {
        LongDouble => out.extend_from_slice(&extended_to_quad(native)),
        Long => {
            let v = i32::try_from(word()).map_err(|_| out_of_range(ty, word() as i128))?;
            out.extend_from_slice(&v.to_be_bytes());
        }
        UnsignedLong => {
            let v = u32::try_from(word() as u64).map_err(|_| out_of_range(ty, word() as u64 as i128))?;
            out.extend_from_slice(&v.to_be_bytes());
        }
        _ => out.extend(native.iter().rev()),
    }
    Ok(())
}

fn out_of_range(ty: BasicType, v: i128) -> DatatypeError {
    DatatypeError::OutOfRange(format!("{ty:?} value {v} does not fit the {} bytes of external32", ty.external32_size()))
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

    /// Calls `f` on `items` predefined elements (items) of this type's
    /// signature, repeated element after element, from item `first`.
    fn each_item<E>(&self, first: u64, items: u64, f: &mut dyn FnMut(BasicType) -> Result<(), E>) -> Result<(), E> {
        let mut runs: Vec<(BasicType, u64)> = Vec::new();
        self.inner().sig.for_each_run(&mut |ty, n| runs.push((ty, n as u64)));
        let per: u64 = runs.iter().map(|r| r.1).sum();
        if per == 0 {
            return Ok(());
        }
        let (mut skip, mut left) = (first % per, items);
        while left > 0 {
            for &(ty, n) in &runs {
                let skipped = skip.min(n);
                skip -= skipped;
                let k = (n - skipped).min(left);
                for _ in 0..k {
                    f(ty)?;
                }
                left -= k;
                if left == 0 {
                    break;
                }
            }
        }
        Ok(())
    }

    /// Converts `items` items of this type, from item `first` on, packed
    /// natively in `native`, to external32 appended to `out` (the form
    /// MPI-IO's "external32" representation stores).
    pub fn items_to_external32(&self, native: &[u8], first: u64, items: u64, out: &mut Vec<u8>) -> Result<(), DatatypeError> {
        let mut at = 0;
        self.each_item(first, items, &mut |ty| {
            for part in parts(ty) {
                let Some(bytes) = native.get(at..at + part.size()) else { return Err(DatatypeError::Overflow) };
                encode(part, bytes, out)?;
                at += part.size();
            }
            Ok(())
        })
    }

    /// Converts `items` items of external32 in `ext`, from item `first` on,
    /// to native packed bytes appended to `native`; returns the bytes of
    /// `ext` read (Overflow when `ext` is too short).
    pub fn items_from_external32(&self, ext: &[u8], first: u64, items: u64, native: &mut Vec<u8>) -> Result<usize, DatatypeError> {
        let mut at = 0;
        self.each_item(first, items, &mut |ty| {
            for part in parts(ty) {
                let len = part.external32_size();
                let Some(bytes) = ext.get(at..at + len) else { return Err(DatatypeError::Overflow) };
                decode(part, bytes, native);
                at += len;
            }
            Ok(())
        })?;
        Ok(at)
    }

    /// Items (predefined elements) in one element of this type.
    pub fn items_per_element(&self) -> u64 {
        let mut per = 0u64;
        self.inner().sig.for_each_run(&mut |_, n| per += n as u64);
        per
    }

    /// Appends `count` elements at `base` to `out` in external32; fails
    /// (OutOfRange) when a value does not fit its external32 size.
    ///
    /// # Safety
    /// `base` must hold `count` elements of this type.
    pub unsafe fn pack_external32(&self, base: *const u8, count: usize, out: &mut Vec<u8>) -> Result<(), DatatypeError> {
        let mut native = Vec::with_capacity(self.packed_size(count));
        self.pack(base, count, &mut native);
        self.items_to_external32(&native, 0, self.items_per_element() * count as u64, out)
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
        self.items_from_external32(ext, 0, self.items_per_element() * count as u64, &mut native)?;
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
        unsafe { t.pack_external32(v.as_ptr() as *const u8, 2, &mut out) }.unwrap();
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
        unsafe { t.pack_external32(v.as_ptr() as *const u8, 2, &mut out) }.unwrap();
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

    #[test]
    fn a_long_beyond_32_bits_is_refused() {
        let t = Datatype::basic(BasicType::Long);
        let mut out = Vec::new();
        let big: [i64; 1] = [1 << 40];
        assert!(matches!(unsafe { t.pack_external32(big.as_ptr() as *const u8, 1, &mut out) }, Err(DatatypeError::OutOfRange(_))));
        let u = Datatype::basic(BasicType::UnsignedLong);
        let max: [u64; 1] = [u32::MAX as u64];
        out.clear();
        unsafe { u.pack_external32(max.as_ptr() as *const u8, 1, &mut out) }.unwrap();
        assert_eq!(out, [0xff; 4]);
        let over: [u64; 1] = [u32::MAX as u64 + 1];
        assert!(unsafe { u.pack_external32(over.as_ptr() as *const u8, 1, &mut out) }.is_err());
    }

    #[test]
    fn quad_rounds_to_nearest_even_into_extended() {
        // 1 + 2^-63 + 2^-64 in binary128: exactly half way is not it, more than half: rounds up.
        let one = 16383u128 << 112;
        let q = one | (1u128 << 49) | (1u128 << 48) | 1;
        let x = quad_to_extended(&q.to_be_bytes());
        assert_eq!(u64::from_le_bytes(x[0..8].try_into().unwrap()), (1 << 63) | 2);
        // A tie goes to the even fraction.
        let tie = one | (1u128 << 48);
        let x = quad_to_extended(&tie.to_be_bytes());
        assert_eq!(u64::from_le_bytes(x[0..8].try_into().unwrap()), 1 << 63);
        // The largest fraction rounds up into the next exponent.
        let all = one | ((1u128 << 112) - 1);
        let x = quad_to_extended(&all.to_be_bytes());
        assert_eq!(u16::from_le_bytes(x[8..10].try_into().unwrap()), 16384);
        assert_eq!(u64::from_le_bytes(x[0..8].try_into().unwrap()), 1 << 63);
        // A NaN with its payload low stays a NaN.
        let nan = (0x7fffu128 << 112) | 1;
        let x = quad_to_extended(&nan.to_be_bytes());
        assert_ne!(u64::from_le_bytes(x[0..8].try_into().unwrap()) & (u64::MAX >> 1), 0);
    }

    #[test]
    fn items_convert_from_any_place_in_an_element() {
        // struct { long; double; long } as items 1..4: double, long, long (of the next element).
        let t = Datatype::create_struct(
            &[1, 1, 1],
            &[0, 8, 16],
            &[Datatype::basic(BasicType::Long), Datatype::basic(BasicType::Double), Datatype::basic(BasicType::Long)],
        )
        .unwrap();
        let mut native = Vec::new();
        native.extend_from_slice(&2.5f64.to_le_bytes());
        native.extend_from_slice(&7i64.to_le_bytes());
        native.extend_from_slice(&(-1i64).to_le_bytes());
        let mut ext = Vec::new();
        t.items_to_external32(&native, 1, 3, &mut ext).unwrap();
        assert_eq!(ext.len(), 8 + 4 + 4);
        assert_eq!(&ext[0..8], &2.5f64.to_be_bytes());
        assert_eq!(&ext[8..12], &7i32.to_be_bytes());
        assert_eq!(&ext[12..16], &(-1i32).to_be_bytes());
        let mut back = Vec::new();
        assert_eq!(t.items_from_external32(&ext, 4, 3, &mut back), Ok(16));
        assert_eq!(back, native);
    }
}
