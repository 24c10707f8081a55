//! The event interface of MPI-4.0 (§15.3.8): wanmpi has no event sources
//! and no event types, which the standard allows (`MPI_T_source_get_num`
//! and `MPI_T_event_get_num` answer zero). Every index is then out of range
//! and no registration or instance handle can exist, so the other calls
//! answer MPI_T_ERR_INVALID_INDEX or MPI_T_ERR_INVALID_HANDLE.

use std::ffi::{c_char, c_void};
use std::os::raw::c_int;

use super::strings::in_str;
use super::{code, entry, out};

#[no_mangle]
pub extern "C" fn PMPI_T_source_get_num(num_sources: *mut c_int) -> c_int {
    entry(|_| {
        *out(num_sources)? = 0;
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn PMPI_T_source_get_info(
    _source_index: c_int,
    _name: *mut c_char,
    _name_len: *mut c_int,
    _desc: *mut c_char,
    _desc_len: *mut c_int,
    _ordering: *mut c_int,
    _ticks_per_second: *mut i64,
    _max_ticks: *mut i64,
    _info: *mut c_int,
) -> c_int {
    entry(|_| Err(code::INVALID_INDEX))
}

#[no_mangle]
pub extern "C" fn PMPI_T_source_get_timestamp(_source_index: c_int, _timestamp: *mut i64) -> c_int {
    entry(|_| Err(code::INVALID_INDEX))
}

#[no_mangle]
pub extern "C" fn PMPI_T_event_get_num(num_events: *mut c_int) -> c_int {
    entry(|_| {
        *out(num_events)? = 0;
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn PMPI_T_event_get_info(
    _event_index: c_int,
    _name: *mut c_char,
    _name_len: *mut c_int,
    _verbosity: *mut c_int,
    _array_of_datatypes: *mut c_int,
    _array_of_displacements: *mut isize,
    _num_elements: *mut c_int,
    _enumtype: *mut *mut c_void,
    _info: *mut c_int,
    _desc: *mut c_char,
    _desc_len: *mut c_int,
    _bind: *mut c_int,
) -> c_int {
    entry(|_| Err(code::INVALID_INDEX))
}

#[no_mangle]
pub extern "C" fn PMPI_T_event_get_index(name: *const c_char, _event_index: *mut c_int) -> c_int {
    entry(|_| {
        in_str(name)?;
        Err(code::INVALID_NAME)
    })
}

#[no_mangle]
pub extern "C" fn PMPI_T_event_handle_alloc(_event_index: c_int, _obj_handle: *mut c_void, _info: c_int, _registration: *mut *mut c_void) -> c_int {
    entry(|_| Err(code::INVALID_INDEX))
}

/// The calls on a registration or an event instance: none can exist.
fn no_handle() -> c_int {
    entry(|_| Err(code::INVALID_HANDLE))
}

#[no_mangle]
pub extern "C" fn PMPI_T_event_handle_set_info(_registration: *mut c_void, _info: c_int) -> c_int {
    no_handle()
}

#[no_mangle]
pub extern "C" fn PMPI_T_event_handle_get_info(_registration: *mut c_void, _info_used: *mut c_int) -> c_int {
    no_handle()
}

#[no_mangle]
pub extern "C" fn PMPI_T_event_register_callback(
    _registration: *mut c_void,
    _cb_safety: c_int,
    _info: c_int,
    _user_data: *mut c_void,
    _event_cb_function: *mut c_void,
) -> c_int {
    no_handle()
}

#[no_mangle]
pub extern "C" fn PMPI_T_event_callback_set_info(_registration: *mut c_void, _cb_safety: c_int, _info: c_int) -> c_int {
    no_handle()
}

#[no_mangle]
pub extern "C" fn PMPI_T_event_callback_get_info(_registration: *mut c_void, _cb_safety: c_int, _info_used: *mut c_int) -> c_int {
    no_handle()
}

#[no_mangle]
pub extern "C" fn PMPI_T_event_handle_free(_registration: *mut c_void, _user_data: *mut c_void, _free_cb_function: *mut c_void) -> c_int {
    no_handle()
}

#[no_mangle]
pub extern "C" fn PMPI_T_event_set_dropped_handler(_registration: *mut c_void, _dropped_cb_function: *mut c_void) -> c_int {
    no_handle()
}

#[no_mangle]
pub extern "C" fn PMPI_T_event_read(_instance: *mut c_void, _element_index: c_int, _buffer: *mut c_void) -> c_int {
    no_handle()
}

#[no_mangle]
pub extern "C" fn PMPI_T_event_copy(_instance: *mut c_void, _buffer: *mut c_void) -> c_int {
    no_handle()
}

#[no_mangle]
pub extern "C" fn PMPI_T_event_get_timestamp(_instance: *mut c_void, _event_timestamp: *mut i64) -> c_int {
    no_handle()
}

#[no_mangle]
pub extern "C" fn PMPI_T_event_get_source(_instance: *mut c_void, _source_index: *mut c_int) -> c_int {
    no_handle()
}
