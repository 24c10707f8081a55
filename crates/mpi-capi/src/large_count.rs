//! What the generated large-count (`_c`) forwarders of `stubs.rs` need for
//! their array arguments: MPI-4's `MPI_Count`/`MPI_Aint` arrays of counts and
//! displacements become the `int` arrays of the int version, when every value
//! fits, and the length of each array comes from the call's own arguments (a
//! count, a number of dimensions, or the communicator's group size).
//!
//! mpi4py 4 calls the `_c` functions whenever `mpi.h` declares them, so these
//! carry every v-collective and derived datatype a Python program uses.

use std::ffi::c_void;
use std::os::raw::{c_int, c_long};

use crate::comm::{PMPI_Comm_rank, PMPI_Comm_remote_size, PMPI_Comm_size, PMPI_Comm_test_inter};
use crate::predef;

/// `len` values of a large-count array as ints; None when one does not fit.
/// A null array stays empty (the forwarder passes the null pointer on).
pub unsafe fn narrow_array(p: *const c_long, len: c_int) -> Option<Vec<c_int>> {
    if p.is_null() || len <= 0 {
        return Some(Vec::new());
    }
    // SAFETY: the caller's array of `len` values, as the MPI call defines it.
    let vals = std::slice::from_raw_parts(p, len as usize);
    vals.iter().map(|&v| c_int::try_from(v).ok()).collect()
}

/// The int array to pass on: the narrowed copy, or the caller's pointer when
/// nothing was read (null, or an argument the call does not look at).
pub fn array_arg(narrowed: &[c_int], original: *const c_void) -> *const c_int {
    if narrowed.is_empty() {
        original as *const c_int
    } else {
        narrowed.as_ptr()
    }
}

fn query(f: unsafe extern "C" fn(c_int, *mut c_int) -> c_int, comm: c_int) -> c_int {
    let mut v: c_int = 0;
    // SAFETY: a valid output pointer; an invalid communicator returns an
    // error, and the int version called next reports it.
    if unsafe { f(comm, &mut v) } != 0 {
        return 0;
    }
    v
}

fn is_inter(comm: c_int) -> bool {
    query(PMPI_Comm_test_inter, comm) != 0
}

/// Entries of a collective's per-rank arrays: the group it exchanges with
/// (the remote group of an inter-communicator).
pub fn group_len(comm: c_int) -> c_int {
    if is_inter(comm) {
        query(PMPI_Comm_remote_size, comm)
    } else {
        query(PMPI_Comm_size, comm)
    }
}

/// Entries of `MPI_Reduce_scatter`'s counts: the local group.
pub fn local_len(comm: c_int) -> c_int {
    query(PMPI_Comm_size, comm)
}

/// Entries of a rooted v-collective's arrays, which only the root reads.
pub fn root_len(comm: c_int, root: c_int) -> c_int {
    if is_inter(comm) {
        return if root == predef::ROOT { query(PMPI_Comm_remote_size, comm) } else { 0 };
    }
    if query(PMPI_Comm_rank, comm) == root {
        query(PMPI_Comm_size, comm)
    } else {
        0
    }
}

/// MPI_IN_PLACE is `(void *)-1`: the send-side arrays are not read then.
pub fn in_place(p: *const c_void) -> bool {
    p as isize == -1
}

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
        return crate::unsupported::too_large("MPI_Type_get_contents_c", "array_of_large_counts (too short)");
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

/// MPI_Type_contiguous_c: counts beyond an int are real here (the engine's
/// counts are 64-bit), as mpi4py's large types need.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_contiguous_c(count: c_long, oldtype: c_int, newtype: *mut c_int) -> c_int {
    crate::error::call(predef::COMM_WORLD, || {
        let o = crate::args::out(newtype, "newtype")?;
        let n = usize::try_from(count).or_else(|_| crate::error::fail(wanmpi_runtime::ErrorClass::Count, format!("count {count} is negative")))?;
        let d = wanmpi_runtime::Datatype::contiguous(n, &crate::args::datatype(oldtype)?)
            .map_err(|e| wanmpi_runtime::MpiError::new(wanmpi_runtime::ErrorClass::Count, e.to_string()))?;
        *o = crate::global::objs()
            .types
            .insert(d)
            .ok_or_else(|| wanmpi_runtime::MpiError::new(wanmpi_runtime::ErrorClass::NoMem, "too many datatypes"))?;
        Ok(())
    })
}

/// MPI_Type_size_c: the true size, even beyond an int.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_size_c(datatype: c_int, size: *mut c_long) -> c_int {
    crate::error::call(predef::COMM_WORLD, || {
        let o = crate::args::out(size, "size")?;
        *o = crate::args::datatype(datatype)?.size() as c_long;
        Ok(())
    })
}
