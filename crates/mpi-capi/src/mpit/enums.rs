//! The enumerations control variables refer to (MPI_T_enum): the items a
//! variable of that type takes, with their names.

use std::ffi::{c_char, c_void};
use std::os::raw::c_int;

use super::handles::{self, Kind};
use super::strings::put_str;
use super::{code, entry, out};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum EnumId {
    WanPeers = 1,
    ProgressThread = 2,
}

impl EnumId {
    /// Its MPI_T_enum handle (fixed: enumerations are never freed).
    pub(super) fn handle(self) -> *mut c_void {
        handles::make(Kind::Enum, self as u64) as *mut c_void
    }

    fn from_handle(h: *const c_void) -> Option<EnumId> {
        match handles::id_of(h, Kind::Enum)? {
            1 => Some(EnumId::WanPeers),
            2 => Some(EnumId::ProgressThread),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            EnumId::WanPeers => "wanmpi_wan_peers",
            EnumId::ProgressThread => "wanmpi_progress_thread",
        }
    }

    /// (value, name) of each item.
    fn items(self) -> &'static [(c_int, &'static str)] {
        match self {
            EnumId::WanPeers => &[(0, "far"), (1, "all"), (2, "none")],
            EnumId::ProgressThread => &[(0, "off"), (1, "on"), (2, "auto")],
        }
    }
}

#[no_mangle]
pub extern "C" fn PMPI_T_enum_get_info(enumtype: *mut c_void, num: *mut c_int, name: *mut c_char, name_len: *mut c_int) -> c_int {
    entry(|_| {
        let e = EnumId::from_handle(enumtype).ok_or(code::INVALID_HANDLE)?;
        *out(num)? = e.items().len() as c_int;
        put_str(e.name(), name, name_len);
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn PMPI_T_enum_get_item(enumtype: *mut c_void, indx: c_int, value: *mut c_int, name: *mut c_char, name_len: *mut c_int) -> c_int {
    entry(|_| {
        let e = EnumId::from_handle(enumtype).ok_or(code::INVALID_HANDLE)?;
        let &(v, n) = usize::try_from(indx).ok().and_then(|i| e.items().get(i)).ok_or(code::INVALID_INDEX)?;
        *out(value)? = v;
        put_str(n, name, name_len);
        Ok(())
    })
}
