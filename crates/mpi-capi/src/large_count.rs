//! The large-count (`_c`) datatype queries whose answer has a different
//! shape from the int call's (MPI-4.0 §5.1.13): a type made with a count
//! beyond an int reports its integers as large counts.
//!
//! Every other `_c` call shares its int call's body, generic over
//! `args::Count` (in its chapter's file).

use std::os::raw::{c_int, c_long};

/// A datatype's constructor integers when one of them does not fit an int
/// (a type made by a `_c` constructor with a large count): MPI-4 reports
/// them as large counts then, and as integers otherwise.
fn large_counts(datatype: c_int) -> Option<Vec<i64>> {
    let d = crate::args::datatype(datatype).ok()?;
    let (ints, _, _) = d.contents();
    ints.iter().any(|&v| c_int::try_from(v).is_err()).then_some(ints)
}

/// MPI_Type_get_envelope_c: the int call's answer, its integers moved to
/// large counts when they need it (`large_counts`).
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
        let (ni, nl) = if large_counts(datatype).is_some() { (0, ni) } else { (ni, 0) };
        for (p, v) in [(num_integers, ni), (num_addresses, na), (num_large_counts, nl), (num_datatypes, nd)] {
            if let Some(o) = p.as_mut() {
                *o = c_long::from(v);
            }
        }
    }
    rc
}

/// MPI_Type_get_contents_c: the int call's arrays, the integers in the
/// large-count array when the envelope said so.
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
    // A larger maximum only says the arrays are longer than needed.
    let clamp = |v: c_long| c_int::try_from(v.max(-1)).unwrap_or(c_int::MAX);
    let Some(large) = large_counts(datatype) else {
        return crate::datatype::PMPI_Type_get_contents(
            datatype,
            clamp(max_integers),
            clamp(max_addresses),
            clamp(max_datatypes),
            array_of_integers,
            array_of_addresses,
            array_of_datatypes,
        );
    };
    if large.len() as c_long > max_large_counts || array_of_large_counts.is_null() {
        let e = wanmpi_runtime::MpiError::new(
            wanmpi_runtime::ErrorClass::Arg,
            format!("array_of_large_counts holds {max_large_counts}, {} needed", large.len()),
        );
        return crate::error::raise(crate::predef::COMM_WORLD, e);
    }
    // The addresses and datatypes as the int call gives them; its truncated integers go unused.
    let mut ints = vec![0 as c_int; large.len()];
    let rc = crate::datatype::PMPI_Type_get_contents(
        datatype,
        ints.len() as c_int,
        clamp(max_addresses),
        clamp(max_datatypes),
        ints.as_mut_ptr(),
        array_of_addresses,
        array_of_datatypes,
    );
    if rc == 0 {
        // SAFETY: the caller's array holds max_large_counts values; checked above.
        std::slice::from_raw_parts_mut(array_of_large_counts, large.len()).copy_from_slice(&large);
    }
    rc
}
