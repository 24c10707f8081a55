//! MPI_Pack_external, MPI_Unpack_external, MPI_Pack_external_size
//! (MPI-4.0 §5.2.3): the portable "external32" representation, converted
//! by the engine (`datatype/external32.rs`).

use std::ffi::{c_char, c_void};
use std::os::raw::{c_int, c_long};

use wanmpi_runtime::{Datatype, ErrorClass};

use crate::args::{buffer, count, cstr, datatype, out, Count};
use crate::error::{call, fail, R};
use crate::predef::COMM_WORLD;

/// The one data representation MPI defines for these calls.
fn external32(datarep: *const c_char) -> R<()> {
    match cstr(datarep, "datarep")? {
        "external32" => Ok(()),
        other => fail(ErrorClass::Arg, format!("data representation {other:?}: only \"external32\" is defined")),
    }
}

fn args<C: Count>(datarep: *const c_char, buf: *const c_void, n: C, dt: c_int) -> R<(usize, Datatype)> {
    external32(datarep)?;
    let (n, d) = (count(n)?, datatype(dt)?);
    buffer(buf as *const u8, n, &d)?;
    Ok((n, d))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Pack_external_size(datarep: *const c_char, n: c_int, dt: c_int, size: *mut c_long) -> c_int {
    pack_external_size(datarep, n, dt, size)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Pack_external_size_c(datarep: *const c_char, n: c_long, dt: c_int, size: *mut c_long) -> c_int {
    pack_external_size(datarep, n, dt, size)
}

// MPI_Pack_external_size and MPI_Pack_external_size_c.
unsafe fn pack_external_size<C: Count>(datarep: *const c_char, n: C, dt: c_int, size: *mut c_long) -> c_int {
    call(COMM_WORLD, || {
        external32(datarep)?;
        let o = out(size, "size")?;
        *o = datatype(dt)?.external32_size(count(n)?) as c_long;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Pack_external(
    datarep: *const c_char,
    inbuf: *const c_void,
    n: c_int,
    dt: c_int,
    outbuf: *mut c_void,
    outsize: c_long,
    position: *mut c_long,
) -> c_int {
    pack_external(datarep, inbuf, n, dt, outbuf, outsize, position)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Pack_external_c(
    datarep: *const c_char,
    inbuf: *const c_void,
    n: c_long,
    dt: c_int,
    outbuf: *mut c_void,
    outsize: c_long,
    position: *mut c_long,
) -> c_int {
    pack_external(datarep, inbuf, n, dt, outbuf, outsize, position)
}

// MPI_Pack_external and MPI_Pack_external_c.
unsafe fn pack_external<C: Count>(
    datarep: *const c_char,
    inbuf: *const c_void,
    n: C,
    dt: c_int,
    outbuf: *mut c_void,
    outsize: c_long,
    position: *mut c_long,
) -> c_int {
    call(COMM_WORLD, || {
        let (n, d) = args(datarep, inbuf, n, dt)?;
        let pos = out(position, "position")?;
        let at = usize::try_from(*pos).or_else(|_| fail(ErrorClass::Arg, format!("position {} is negative", *pos)))?;
        let room = usize::try_from(outsize).unwrap_or(0);
        let need = d.external32_size(n);
        if at.checked_add(need).is_none_or(|end| end > room) {
            return fail(ErrorClass::Truncate, format!("{need} bytes of external32 at position {at} do not fit in {room}"));
        }
        let mut bytes = Vec::with_capacity(need);
        // A C long beyond 32 bits has no external32 form: MPI_ERR_CONVERSION.
        d.pack_external32(inbuf as *const u8, n, &mut bytes).or_else(|e| fail(ErrorClass::Conversion, e.to_string()))?;
        // SAFETY: the caller's output buffer has `outsize` bytes; checked above.
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), (outbuf as *mut u8).add(at), bytes.len());
        *pos += bytes.len() as c_long;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Unpack_external(
    datarep: *const c_char,
    inbuf: *const c_void,
    insize: c_long,
    position: *mut c_long,
    outbuf: *mut c_void,
    n: c_int,
    dt: c_int,
) -> c_int {
    unpack_external(datarep, inbuf, insize, position, outbuf, n, dt)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Unpack_external_c(
    datarep: *const c_char,
    inbuf: *const c_void,
    insize: c_long,
    position: *mut c_long,
    outbuf: *mut c_void,
    n: c_long,
    dt: c_int,
) -> c_int {
    unpack_external(datarep, inbuf, insize, position, outbuf, n, dt)
}

// MPI_Unpack_external and MPI_Unpack_external_c.
unsafe fn unpack_external<C: Count>(
    datarep: *const c_char,
    inbuf: *const c_void,
    insize: c_long,
    position: *mut c_long,
    outbuf: *mut c_void,
    n: C,
    dt: c_int,
) -> c_int {
    call(COMM_WORLD, || {
        let (n, d) = args(datarep, outbuf, n, dt)?;
        let pos = out(position, "position")?;
        let at = usize::try_from(*pos).or_else(|_| fail(ErrorClass::Arg, format!("position {} is negative", *pos)))?;
        let size = usize::try_from(insize).unwrap_or(0);
        if at > size {
            return fail(ErrorClass::Arg, format!("position {at} beyond the {size} bytes of the input"));
        }
        // SAFETY: the caller's input buffer has `insize` bytes.
        let input = std::slice::from_raw_parts((inbuf as *const u8).add(at), size - at);
        let used = d
            .unpack_external32(input, outbuf as *mut u8, n)
            .or_else(|_| fail(ErrorClass::Truncate, format!("{} bytes of external32 needed, {} left", d.external32_size(n), size - at)))?;
        *pos += used as c_long;
        Ok(())
    })
}
