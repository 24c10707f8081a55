//! The "external32" data representation (MPI-4.0 §14.5.2) as a built-in
//! [`Datarep`]: a view in it is laid out with external32's sizes and byte
//! alignment (`datarep::file_type`), and its items are converted by the
//! engine's external32 code, the one MPI_Pack_external uses. So types whose
//! size changes (C long: 8 bytes in memory, 4 in the file; long double:
//! x87 extended in memory, binary128 in the file) are stored as the
//! standard says, and a long beyond 32 bits is a conversion error.

use wanmpi_engine::datatype::{BasicType, Datatype, DatatypeError};
use wanmpi_engine::{ErrorClass, MpiError, MpiResult};

use crate::datarep::Datarep;

pub const NAME: &str = "external32";

pub struct External32;

fn conversion(e: DatatypeError) -> MpiError {
    MpiError::new(ErrorClass::Conversion, format!("external32: {e}"))
}

/// Memory bytes (in the packed native stream of `dt` tiled) before item `item`.
fn mem_before(dt: &Datatype, item: u64) -> usize {
    let per = dt.items_per_element();
    if per == 0 {
        return 0;
    }
    let mut bytes = (item / per) as usize * dt.size();
    let mut rem = item % per;
    dt.for_each_basic_run(&mut |b, n| {
        let k = rem.min(n as u64);
        bytes += k as usize * b.size();
        rem -= k;
    });
    bytes
}

/// The elements of `dt` that hold items up to `end`.
fn elements_to(dt: &Datatype, end: u64) -> usize {
    end.div_ceil(dt.items_per_element().max(1)) as usize
}

impl Datarep for External32 {
    fn name(&self) -> &str {
        NAME
    }

    fn file_extent(&self, basic: BasicType) -> MpiResult<usize> {
        Ok(basic.external32_size())
    }

    fn converts_reads(&self) -> bool {
        true
    }

    fn converts_writes(&self) -> bool {
        true
    }

    unsafe fn read(&self, userbuf: *mut u8, dt: &Datatype, count: usize, filebuf: &[u8], position: u64) -> MpiResult<()> {
        let mut native = Vec::new();
        dt.items_from_external32(filebuf, position, count as u64, &mut native).map_err(conversion)?;
        let end = position + count as u64;
        dt.unpack_range(&native, userbuf, elements_to(dt, end), mem_before(dt, position));
        Ok(())
    }

    unsafe fn write(&self, userbuf: *const u8, dt: &Datatype, count: usize, filebuf: &mut [u8], position: u64) -> MpiResult<()> {
        let end = position + count as u64;
        let (from, to) = (mem_before(dt, position), mem_before(dt, end));
        let mut native = Vec::with_capacity(to - from);
        dt.pack_range(userbuf, elements_to(dt, end), from, to - from, &mut native);
        let mut ext = Vec::with_capacity(filebuf.len());
        dt.items_to_external32(&native, position, count as u64, &mut ext).map_err(conversion)?;
        if ext.len() != filebuf.len() {
            return Err(MpiError::new(ErrorClass::Intern, format!("external32: {} bytes converted for a piece of {}", ext.len(), filebuf.len())));
        }
        filebuf.copy_from_slice(&ext);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn longs_and_doubles_convert_from_the_middle_of_a_buffer() {
        let t = Datatype::create_struct(&[1, 1], &[0, 8], &[Datatype::basic(BasicType::Long), Datatype::basic(BasicType::Double)]).unwrap();
        #[repr(C)]
        #[derive(Debug, Clone, Copy, PartialEq)]
        struct LD(i64, f64);
        let v = [LD(-3, 0.5), LD(9, -2.0)];
        // Items 1..4: the first double, the second long and double.
        let mut file = vec![0u8; 8 + 4 + 8];
        unsafe { External32.write(v.as_ptr() as *const u8, &t, 3, &mut file, 1) }.unwrap();
        assert_eq!(&file[0..8], &0.5f64.to_be_bytes());
        assert_eq!(&file[8..12], &9i32.to_be_bytes());
        assert_eq!(&file[12..20], &(-2.0f64).to_be_bytes());
        let mut back = [LD(0, 0.0); 2];
        unsafe { External32.read(back.as_mut_ptr() as *mut u8, &t, 3, &file, 1) }.unwrap();
        assert_eq!(back, [LD(0, 0.5), LD(9, -2.0)]);
    }

    #[test]
    fn a_long_beyond_32_bits_is_a_conversion_error() {
        let t = Datatype::basic(BasicType::Long);
        let v: [i64; 1] = [1 << 33];
        let mut file = [0u8; 4];
        let e = unsafe { External32.write(v.as_ptr() as *const u8, &t, 1, &mut file, 0) }.unwrap_err();
        assert_eq!(e.class, ErrorClass::Conversion);
    }
}
