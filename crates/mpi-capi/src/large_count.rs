//! The large-count (`_c`) datatype queries whose answer has a different
//! shape from the int call's (MPI-4.0 §5.1.13): a type made with a count
//! beyond an int reports its integers as large counts.
//!
//! Every other `_c` call shares its int call's body, generic over
//! `args::Count` (in its chapter's file).

use std::os::raw::{c_int, c_long};

/// MPI_Type_get_envelope_c: the int call's answer, its integers counted as
/// large counts when one does not fit an int (`needs_large_counts`).
#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_get_envelope_c(
    datatype: c_int,
    num_integers: *mut c_long,
    num_addresses: *mut c_long,
    num_large_counts: *mut c_long,
    num_datatypes: *mut c_long,
    combiner: *mut c_int,
) -> c_int {
    let (mut ni, mut na, mut nd) = (0, 0, 0);
    let rc = crate::datatype::PMPI_Type_get_envelope(datatype, &mut ni, &mut na, &mut nd, combiner);
    if rc == 0 {
        let large = crate::args::datatype(datatype).is_ok_and(|d| crate::datatype::needs_large_counts(&d));
        let (ni, nl) = if large { (0, ni) } else { (ni, 0) };
        for (p, v) in [(num_integers, ni), (num_addresses, na), (num_large_counts, nl), (num_datatypes, nd)] {
            if let Some(o) = p.as_mut() {
                *o = c_long::from(v);
            }
        }
    }
    rc
}

/// MPI_Type_get_contents_c: the int call's body, with a large-count array.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_get_contents_c(
    datatype: c_int,
    max_integers: c_long,
    max_addresses: c_long,
    max_large_counts: c_long,
    max_datatypes: c_long,
    array_of_integers: *mut c_int,
    array_of_addresses: *mut c_long,
    array_of_large_counts: *mut c_long,
    array_of_datatypes: *mut c_int,
) -> c_int {
    crate::error::call(crate::predef::COMM_WORLD, || {
        crate::datatype::type_get_contents(
            datatype,
            max_integers,
            max_addresses,
            Some((max_large_counts, array_of_large_counts)),
            max_datatypes,
            array_of_integers,
            array_of_addresses,
            array_of_datatypes,
        )
    })
}
