//! MPI_T's rule for strings returned (MPI-4.0 §15.3.3): `len` is the
//! buffer's size on input and the length written, with the NUL, on
//! output; a null buffer or a zero `len` asks only for the length needed;
//! a null `len` asks for nothing. A string longer than the buffer is cut.

use std::ffi::c_char;
use std::os::raw::c_int;

pub(super) fn put_str(s: &str, dst: *mut c_char, len: *mut c_int) {
    // SAFETY: `len` is null or an int of the caller's.
    let Some(len) = (unsafe { len.as_mut() }) else { return };
    let need = s.len() + 1;
    if dst.is_null() || *len <= 0 {
        *len = c_int::try_from(need).unwrap_or(c_int::MAX);
        return;
    }
    let n = s.len().min(*len as usize - 1);
    // SAFETY: the caller gives `*len` bytes at `dst`; n + 1 <= *len.
    unsafe {
        std::ptr::copy_nonoverlapping(s.as_ptr(), dst.cast::<u8>(), n);
        *dst.add(n) = 0;
    }
    *len = (n + 1) as c_int;
}

/// The C string at `p` (MPI_ERR_ARG when null, not UTF-8 names no variable).
pub(super) fn in_str<'a>(p: *const c_char) -> super::TResult<&'a str> {
    if p.is_null() {
        return Err(super::code::ERR_ARG);
    }
    // SAFETY: a NUL-terminated string of the caller's.
    unsafe { std::ffi::CStr::from_ptr(p) }.to_str().map_err(|_| super::code::INVALID_NAME)
}

#[cfg(test)]
mod tests {
    use super::put_str;

    #[test]
    fn strings_are_cut_to_the_buffer_and_lengths_count_the_nul() {
        let mut buf = [0x55 as std::ffi::c_char; 8];
        let mut len = 0;
        put_str("wanmpi_eager_limit", buf.as_mut_ptr(), &mut len);
        assert_eq!((len, buf[0]), (19, 0x55), "a zero length asks for the size only");
        len = 4;
        put_str("wanmpi_eager_limit", buf.as_mut_ptr(), &mut len);
        assert_eq!(len, 4);
        assert_eq!(&buf[..4], &[b'w' as _, b'a' as _, b'n' as _, 0]);
        len = 8;
        put_str("abc", std::ptr::null_mut(), &mut len);
        assert_eq!(len, 4, "a null buffer asks for the size only");
        put_str("abc", buf.as_mut_ptr(), std::ptr::null_mut());
    }
}
