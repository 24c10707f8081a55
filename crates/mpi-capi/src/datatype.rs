//! Datatypes (MPI-3.1 chapter 4): constructors, commit/free, sizes and
//! extents, names, envelope/contents, pack/unpack, addresses, and the
//! status queries that depend on a datatype (Get_count, Get_elements).

use std::ffi::{c_char, c_void};
use std::os::raw::{c_int, c_long};

use wanmpi_engine::datatype::{Combiner, DatatypeError, F90Kind};
use wanmpi_runtime::{Datatype, ErrorClass, MpiError};

use crate::args::{count, cstr, datatype, datatype_handle, int, out, slice, slice_mut, to_count, write_str, Count};
use crate::error::{call, fail, R};
use crate::global::objs;
use crate::predef::{self, COMM_WORLD, DATATYPE_NULL, UNDEFINED};
use crate::status::MPI_Status;

type Aint = libc::c_long;

fn dt_err(e: DatatypeError) -> MpiError {
    let class = match e {
        DatatypeError::NegativeCount => ErrorClass::Count,
        DatatypeError::NotCommitted => ErrorClass::Type,
        DatatypeError::Overflow | DatatypeError::BadArgument(_) => ErrorClass::Arg,
        DatatypeError::OutOfRange(_) => ErrorClass::Conversion,
    };
    MpiError::new(class, e.to_string())
}

fn register(newtype: *mut c_int, r: Result<Datatype, DatatypeError>) -> R<()> {
    let out_h = out(newtype, "newtype")?;
    let d = r.map_err(dt_err)?;
    *out_h = objs().types.insert(d).ok_or_else(|| MpiError::new(ErrorClass::NoMem, "too many datatypes"))?;
    Ok(())
}

fn counts<C: Count>(p: *const C, n: usize, what: &str) -> R<Vec<usize>> {
    slice(p, n, what)?.iter().map(|&c| count(c)).collect()
}

fn displs_int<C: Count>(p: *const C, n: usize) -> R<Vec<isize>> {
    Ok(slice(p, n, "array_of_displacements")?.iter().map(|&d| d.wide() as isize).collect())
}

fn displs_aint(p: *const Aint, n: usize) -> R<Vec<isize>> {
    Ok(slice(p, n, "array_of_displacements")?.iter().map(|&d| d as isize).collect())
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_contiguous(c: c_int, old: c_int, newtype: *mut c_int) -> c_int {
    type_contiguous(c, old, newtype)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_contiguous_c(c: c_long, old: c_int, newtype: *mut c_int) -> c_int {
    type_contiguous(c, old, newtype)
}

// MPI_Type_contiguous and MPI_Type_contiguous_c.
fn type_contiguous<C: Count>(c: C, old: c_int, newtype: *mut c_int) -> c_int {
    call(COMM_WORLD, || register(newtype, Datatype::contiguous(count(c)?, &datatype(old)?)))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_vector(c: c_int, blocklen: c_int, stride: c_int, old: c_int, newtype: *mut c_int) -> c_int {
    type_vector(c, blocklen, stride, old, newtype)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_vector_c(c: c_long, blocklen: c_long, stride: c_long, old: c_int, newtype: *mut c_int) -> c_int {
    type_vector(c, blocklen, stride, old, newtype)
}

// MPI_Type_vector and MPI_Type_vector_c.
unsafe fn type_vector<C: Count>(c: C, blocklen: C, stride: C, old: c_int, newtype: *mut c_int) -> c_int {
    call(COMM_WORLD, || register(newtype, Datatype::vector(count(c)?, count(blocklen)?, stride.wide() as isize, &datatype(old)?)))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_create_hvector(c: c_int, blocklen: c_int, stride: Aint, old: c_int, newtype: *mut c_int) -> c_int {
    type_create_hvector(c, blocklen, stride, old, newtype)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_create_hvector_c(c: c_long, blocklen: c_long, stride: Aint, old: c_int, newtype: *mut c_int) -> c_int {
    type_create_hvector(c, blocklen, stride, old, newtype)
}

// MPI_Type_create_hvector and MPI_Type_create_hvector_c.
unsafe fn type_create_hvector<C: Count>(c: C, blocklen: C, stride: Aint, old: c_int, newtype: *mut c_int) -> c_int {
    call(COMM_WORLD, || register(newtype, Datatype::hvector(count(c)?, count(blocklen)?, stride as isize, &datatype(old)?)))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_hvector(c: c_int, blocklen: c_int, stride: Aint, old: c_int, newtype: *mut c_int) -> c_int {
    PMPI_Type_create_hvector(c, blocklen, stride, old, newtype)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_indexed(c: c_int, blocklens: *const c_int, displs: *const c_int, old: c_int, newtype: *mut c_int) -> c_int {
    type_indexed(c, blocklens, displs, old, newtype)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_indexed_c(c: c_long, blocklens: *const c_long, displs: *const c_long, old: c_int, newtype: *mut c_int) -> c_int {
    type_indexed(c, blocklens, displs, old, newtype)
}

// MPI_Type_indexed and MPI_Type_indexed_c.
unsafe fn type_indexed<C: Count>(c: C, blocklens: *const C, displs: *const C, old: c_int, newtype: *mut c_int) -> c_int {
    call(COMM_WORLD, || {
        let n = count(c)?;
        register(newtype, Datatype::indexed(&counts(blocklens, n, "array_of_blocklengths")?, &displs_int(displs, n)?, &datatype(old)?))
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_create_hindexed(c: c_int, blocklens: *const c_int, displs: *const Aint, old: c_int, newtype: *mut c_int) -> c_int {
    type_create_hindexed(c, blocklens, displs, old, newtype)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_create_hindexed_c(
    c: c_long,
    blocklens: *const c_long,
    displs: *const Aint,
    old: c_int,
    newtype: *mut c_int,
) -> c_int {
    type_create_hindexed(c, blocklens, displs, old, newtype)
}

// MPI_Type_create_hindexed and MPI_Type_create_hindexed_c.
unsafe fn type_create_hindexed<C: Count>(c: C, blocklens: *const C, displs: *const Aint, old: c_int, newtype: *mut c_int) -> c_int {
    call(COMM_WORLD, || {
        let n = count(c)?;
        register(newtype, Datatype::hindexed(&counts(blocklens, n, "array_of_blocklengths")?, &displs_aint(displs, n)?, &datatype(old)?))
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_hindexed(c: c_int, blocklens: *const c_int, displs: *const Aint, old: c_int, newtype: *mut c_int) -> c_int {
    PMPI_Type_create_hindexed(c, blocklens, displs, old, newtype)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_create_indexed_block(c: c_int, blocklen: c_int, displs: *const c_int, old: c_int, newtype: *mut c_int) -> c_int {
    type_create_indexed_block(c, blocklen, displs, old, newtype)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_create_indexed_block_c(
    c: c_long,
    blocklen: c_long,
    displs: *const c_long,
    old: c_int,
    newtype: *mut c_int,
) -> c_int {
    type_create_indexed_block(c, blocklen, displs, old, newtype)
}

// MPI_Type_create_indexed_block and MPI_Type_create_indexed_block_c.
unsafe fn type_create_indexed_block<C: Count>(c: C, blocklen: C, displs: *const C, old: c_int, newtype: *mut c_int) -> c_int {
    call(COMM_WORLD, || {
        let n = count(c)?;
        register(newtype, Datatype::indexed_block(count(blocklen)?, &displs_int(displs, n)?, &datatype(old)?))
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_create_hindexed_block(c: c_int, blocklen: c_int, displs: *const Aint, old: c_int, newtype: *mut c_int) -> c_int {
    type_create_hindexed_block(c, blocklen, displs, old, newtype)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_create_hindexed_block_c(
    c: c_long,
    blocklen: c_long,
    displs: *const Aint,
    old: c_int,
    newtype: *mut c_int,
) -> c_int {
    type_create_hindexed_block(c, blocklen, displs, old, newtype)
}

// MPI_Type_create_hindexed_block and MPI_Type_create_hindexed_block_c.
unsafe fn type_create_hindexed_block<C: Count>(c: C, blocklen: C, displs: *const Aint, old: c_int, newtype: *mut c_int) -> c_int {
    call(COMM_WORLD, || {
        let n = count(c)?;
        register(newtype, Datatype::hindexed_block(count(blocklen)?, &displs_aint(displs, n)?, &datatype(old)?))
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_create_struct(
    c: c_int,
    blocklens: *const c_int,
    displs: *const Aint,
    types: *const c_int,
    newtype: *mut c_int,
) -> c_int {
    type_create_struct(c, blocklens, displs, types, newtype)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_create_struct_c(
    c: c_long,
    blocklens: *const c_long,
    displs: *const Aint,
    types: *const c_int,
    newtype: *mut c_int,
) -> c_int {
    type_create_struct(c, blocklens, displs, types, newtype)
}

// MPI_Type_create_struct and MPI_Type_create_struct_c.
unsafe fn type_create_struct<C: Count>(c: C, blocklens: *const C, displs: *const Aint, types: *const c_int, newtype: *mut c_int) -> c_int {
    call(COMM_WORLD, || {
        let n = count(c)?;
        let hs = slice(types, n, "array_of_types")?;
        let ts: Vec<Datatype> = hs.iter().map(|&t| datatype(t)).collect::<R<_>>()?;
        let bl = counts(blocklens, n, "array_of_blocklengths")?;
        let ds = displs_aint(displs, n)?;
        if !hs.iter().any(|&h| h == predef::LB || h == predef::UB) {
            return register(newtype, Datatype::create_struct(&bl, &ds, &ts));
        }
        register(newtype, struct_with_markers(hs, &bl, &ds, &ts))
    })
}

/// A struct with MPI-1's MPI_LB/MPI_UB markers (MPI-1.1 §3.12.3): the
/// markers set the lower and upper bounds (the lowest MPI_LB and highest
/// MPI_UB displacement), the other blocks the data. Built as the struct of
/// the data blocks resized to those bounds, which later constructors keep,
/// as MPI-1 says the markers are.
fn struct_with_markers(hs: &[c_int], bl: &[usize], ds: &[isize], ts: &[Datatype]) -> Result<Datatype, DatatypeError> {
    let data: Vec<usize> = (0..hs.len()).filter(|&i| hs[i] != predef::LB && hs[i] != predef::UB).collect();
    let inner = Datatype::create_struct(
        &data.iter().map(|&i| bl[i]).collect::<Vec<_>>(),
        &data.iter().map(|&i| ds[i]).collect::<Vec<_>>(),
        &data.iter().map(|&i| ts[i].clone()).collect::<Vec<_>>(),
    )?;
    let at = |m: c_int| (0..hs.len()).filter(move |&i| hs[i] == m).map(|i| ds[i]);
    let lb = at(predef::LB).min().unwrap_or_else(|| inner.lb());
    let ub = at(predef::UB).max().unwrap_or_else(|| inner.lb() + inner.extent());
    Datatype::resized(&inner, lb, ub - lb)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_struct(c: c_int, blocklens: *const c_int, displs: *const Aint, types: *const c_int, newtype: *mut c_int) -> c_int {
    PMPI_Type_create_struct(c, blocklens, displs, types, newtype)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_create_resized(old: c_int, lb: Aint, extent: Aint, newtype: *mut c_int) -> c_int {
    type_create_resized(old, lb, extent, newtype)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_create_resized_c(old: c_int, lb: Aint, extent: Aint, newtype: *mut c_int) -> c_int {
    type_create_resized(old, lb, extent, newtype)
}

// MPI_Type_create_resized and MPI_Type_create_resized_c.
unsafe fn type_create_resized(old: c_int, lb: Aint, extent: Aint, newtype: *mut c_int) -> c_int {
    call(COMM_WORLD, || register(newtype, Datatype::resized(&datatype(old)?, lb as isize, extent as isize)))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_dup(old: c_int, newtype: *mut c_int) -> c_int {
    call(COMM_WORLD, || {
        register(newtype, Ok(datatype(old)?.dup()))?;
        if let Err(e) = crate::type_attr::copy_all(old, *newtype) {
            // A copy callback failed: no new type (MPI_DATATYPE_NULL).
            let _ = crate::type_attr::delete_all(*newtype);
            objs().types.remove(*newtype);
            *newtype = DATATYPE_NULL;
            return Err(e);
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_commit(dt: *mut c_int) -> c_int {
    call(COMM_WORLD, || {
        datatype(*out(dt, "datatype")?)?.commit();
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_free(dt: *mut c_int) -> c_int {
    call(COMM_WORLD, || {
        let h = out(dt, "datatype")?;
        if predef::datatype(*h).is_some() {
            return fail(ErrorClass::Type, "predefined datatypes cannot be freed");
        }
        crate::args::datatype(*h)?;
        crate::type_attr::delete_all(*h)?;
        // Operations in progress hold their own reference to the type.
        objs().types.remove(*h).ok_or_else(|| MpiError::new(ErrorClass::Type, format!("{:#x} is not a valid datatype handle", *h)))?;
        *h = DATATYPE_NULL;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_size(dt: c_int, size: *mut c_int) -> c_int {
    type_size(dt, size)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_size_c(dt: c_int, size: *mut c_long) -> c_int {
    type_size(dt, size)
}

// MPI_Type_size and MPI_Type_size_c: MPI_UNDEFINED when the size does not
// fit the caller's type (MPI-4.0 §5.1.5).
fn type_size<C: Count>(dt: c_int, size: *mut C) -> c_int {
    call(COMM_WORLD, || {
        let d = datatype(dt)?;
        *out(size, "size")? = i64::try_from(d.size()).ok().and_then(C::narrow).unwrap_or(C::from_int(UNDEFINED));
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_size_x(dt: c_int, size: *mut libc::c_long) -> c_int {
    call(COMM_WORLD, || {
        *out(size, "size")? = datatype(dt)?.size() as libc::c_long;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_get_extent(dt: c_int, lb: *mut Aint, extent: *mut Aint) -> c_int {
    type_get_extent(dt, lb, extent)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_get_extent_c(dt: c_int, lb: *mut Aint, extent: *mut Aint) -> c_int {
    type_get_extent(dt, lb, extent)
}

// MPI_Type_get_extent and MPI_Type_get_extent_c.
unsafe fn type_get_extent(dt: c_int, lb: *mut Aint, extent: *mut Aint) -> c_int {
    call(COMM_WORLD, || {
        let d = datatype(dt)?;
        *out(lb, "lb")? = d.lb() as Aint;
        *out(extent, "extent")? = d.extent() as Aint;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_get_extent_x(dt: c_int, lb: *mut libc::c_long, extent: *mut libc::c_long) -> c_int {
    PMPI_Type_get_extent(dt, lb, extent)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_get_true_extent(dt: c_int, lb: *mut Aint, extent: *mut Aint) -> c_int {
    type_get_true_extent(dt, lb, extent)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_get_true_extent_c(dt: c_int, lb: *mut Aint, extent: *mut Aint) -> c_int {
    type_get_true_extent(dt, lb, extent)
}

// MPI_Type_get_true_extent and MPI_Type_get_true_extent_c.
unsafe fn type_get_true_extent(dt: c_int, lb: *mut Aint, extent: *mut Aint) -> c_int {
    call(COMM_WORLD, || {
        let d = datatype(dt)?;
        *out(lb, "true_lb")? = d.true_lb() as Aint;
        *out(extent, "true_extent")? = d.true_extent() as Aint;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_get_true_extent_x(dt: c_int, lb: *mut libc::c_long, extent: *mut libc::c_long) -> c_int {
    PMPI_Type_get_true_extent(dt, lb, extent)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_extent(dt: c_int, extent: *mut Aint) -> c_int {
    call(COMM_WORLD, || {
        *out(extent, "extent")? = datatype(dt)?.extent() as Aint;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_lb(dt: c_int, lb: *mut Aint) -> c_int {
    call(COMM_WORLD, || {
        *out(lb, "displacement")? = datatype(dt)?.lb() as Aint;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_ub(dt: c_int, ub: *mut Aint) -> c_int {
    call(COMM_WORLD, || {
        let d = datatype(dt)?;
        *out(ub, "displacement")? = (d.lb() + d.extent()) as Aint;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_get_name(dt: c_int, name: *mut c_char, len: *mut c_int) -> c_int {
    call(COMM_WORLD, || {
        out(len, "resultlen")?;
        write_str(&datatype(dt)?.name(), name, predef::MAX_OBJECT_NAME, len)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_set_name(dt: c_int, name: *const c_char) -> c_int {
    call(COMM_WORLD, || {
        let s = cstr(name, "type_name")?;
        datatype(dt)?.set_name(&s[..s.len().min(predef::MAX_OBJECT_NAME - 1)]);
        Ok(())
    })
}

fn combiner_code(c: Combiner) -> c_int {
    match c {
        Combiner::Named => 1,
        Combiner::Dup => 2,
        Combiner::Contiguous => 3,
        Combiner::Vector => 4,
        Combiner::Hvector => 6,
        Combiner::Indexed => 7,
        Combiner::Hindexed => 9,
        Combiner::IndexedBlock => 10,
        Combiner::Struct => 12,
        Combiner::Subarray => 13,
        Combiner::Darray => 14,
        Combiner::F90Real => 15,
        Combiner::F90Complex => 16,
        Combiner::F90Integer => 17,
        Combiner::Resized => 18,
        Combiner::HindexedBlock => 19,
    }
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_get_envelope(dt: c_int, ni: *mut c_int, na: *mut c_int, nd: *mut c_int, combiner: *mut c_int) -> c_int {
    call(COMM_WORLD, || {
        let (i, a, d, c) = if predef::marker(dt).is_some() { (0, 0, 0, Combiner::Named) } else { datatype(dt)?.envelope() };
        *out(ni, "num_integers")? = int(i);
        *out(na, "num_addresses")? = int(a);
        *out(nd, "num_datatypes")? = int(d);
        *out(combiner, "combiner")? = combiner_code(c);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_get_contents(
    dt: c_int,
    maxi: c_int,
    maxa: c_int,
    maxd: c_int,
    ints: *mut c_int,
    addrs: *mut Aint,
    types: *mut c_int,
) -> c_int {
    call(COMM_WORLD, || type_get_contents(dt, maxi.into(), maxa.into(), None, maxd.into(), ints, addrs, types))
}

/// The integers of a type's constructor as MPI-4 hands them out: in the
/// large-count array when one does not fit an int (a `_c` constructor with
/// a count beyond an int), else in the int array (MPI-4.0 §5.1.13).
pub(crate) fn needs_large_counts(d: &Datatype) -> bool {
    d.contents().0.iter().any(|&v| c_int::try_from(v).is_err())
}

/// MPI_Type_get_contents and (with `large`: its maximum and array) the
/// integer arrays of MPI_Type_get_contents_c. Without a large-count array,
/// integers beyond an int are MPI_ERR_TYPE: the int call cannot give them.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn type_get_contents(
    dt: c_int,
    maxi: i64,
    maxa: i64,
    large: Option<(i64, *mut libc::c_long)>,
    maxd: i64,
    ints: *mut c_int,
    addrs: *mut Aint,
    types: *mut c_int,
) -> R<()> {
    let d = datatype(dt)?;
    if d.combiner() == Combiner::Named || predef::marker(dt).is_some() {
        return fail(ErrorClass::Type, "MPI_Type_get_contents on a predefined datatype");
    }
    let (i, a, t) = d.contents();
    let as_large = needs_large_counts(&d);
    let room = |max: i64, n: usize| usize::try_from(max).is_ok_and(|m| m >= n);
    if as_large && large.is_none() {
        return fail(ErrorClass::Type, format!("{}'s constructor took counts beyond an int: use MPI_Type_get_contents_c", d.name()));
    }
    let (ni, nl) = if as_large { (0, i.len()) } else { (i.len(), 0) };
    if !room(maxi, ni) || !room(maxa, a.len()) || !room(maxd, t.len()) || !room(large.map_or(0, |l| l.0), nl) {
        return fail(ErrorClass::Arg, "the output arrays are smaller than MPI_Type_get_envelope says");
    }
    if let (true, Some((_, out))) = (as_large, large) {
        slice_mut(out, i.len(), "array_of_large_counts")?.copy_from_slice(&i);
    } else {
        for (o, v) in slice_mut(ints, i.len(), "array_of_integers")?.iter_mut().zip(&i) {
            *o = *v as c_int;
        }
    }
    for (o, v) in slice_mut(addrs, a.len(), "array_of_addresses")?.iter_mut().zip(&a) {
        *o = *v as Aint;
    }
    for (o, v) in slice_mut(types, t.len(), "array_of_datatypes")?.iter_mut().zip(&t) {
        *o = datatype_handle(v)?;
    }
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Pack(
    inbuf: *const c_void,
    incount: c_int,
    dt: c_int,
    outbuf: *mut c_void,
    outsize: c_int,
    position: *mut c_int,
    _comm: c_int,
) -> c_int {
    pack(inbuf, incount, dt, outbuf, outsize, position, _comm)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Pack_c(
    inbuf: *const c_void,
    incount: c_long,
    dt: c_int,
    outbuf: *mut c_void,
    outsize: c_long,
    position: *mut c_long,
    _comm: c_int,
) -> c_int {
    pack(inbuf, incount, dt, outbuf, outsize, position, _comm)
}

// MPI_Pack and MPI_Pack_c.
unsafe fn pack<C: Count>(inbuf: *const c_void, incount: C, dt: c_int, outbuf: *mut c_void, outsize: C, position: *mut C, _comm: c_int) -> c_int {
    call(COMM_WORLD, || {
        let n = count(incount)?;
        let d = datatype(dt)?;
        d.check_committed().map_err(dt_err)?;
        let pos = out(position, "position")?;
        let start = count(*pos)?;
        let cap = count(outsize)?;
        let need = d.packed_size(n);
        if start + need > cap {
            return fail(ErrorClass::Truncate, format!("packing {need} bytes at position {start} overflows an output of {cap} bytes"));
        }
        let mut v = Vec::with_capacity(need);
        d.pack(inbuf as *const u8, n, &mut v);
        let dst = slice_mut(outbuf as *mut u8, cap, "outbuf")?;
        dst[start..start + v.len()].copy_from_slice(&v);
        *pos = to_count(start + v.len(), "position")?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Unpack(
    inbuf: *const c_void,
    insize: c_int,
    position: *mut c_int,
    outbuf: *mut c_void,
    outcount: c_int,
    dt: c_int,
    _comm: c_int,
) -> c_int {
    unpack(inbuf, insize, position, outbuf, outcount, dt, _comm)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Unpack_c(
    inbuf: *const c_void,
    insize: c_long,
    position: *mut c_long,
    outbuf: *mut c_void,
    outcount: c_long,
    dt: c_int,
    _comm: c_int,
) -> c_int {
    unpack(inbuf, insize, position, outbuf, outcount, dt, _comm)
}

// MPI_Unpack and MPI_Unpack_c.
unsafe fn unpack<C: Count>(inbuf: *const c_void, insize: C, position: *mut C, outbuf: *mut c_void, outcount: C, dt: c_int, _comm: c_int) -> c_int {
    call(COMM_WORLD, || {
        let n = count(outcount)?;
        let d = datatype(dt)?;
        d.check_committed().map_err(dt_err)?;
        let pos = out(position, "position")?;
        let start = count(*pos)?;
        let size = count(insize)?;
        let need = d.packed_size(n);
        if start + need > size {
            return fail(ErrorClass::Truncate, format!("unpacking {need} bytes at position {start} overruns an input of {size} bytes"));
        }
        let src = slice(inbuf as *const u8, size, "inbuf")?;
        let used = d.unpack(&src[start..start + need], outbuf as *mut u8, n);
        *pos = to_count(start + used, "position")?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Pack_size(incount: c_int, dt: c_int, _comm: c_int, size: *mut c_int) -> c_int {
    pack_size(incount, dt, _comm, size)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Pack_size_c(incount: c_long, dt: c_int, _comm: c_int, size: *mut c_long) -> c_int {
    pack_size(incount, dt, _comm, size)
}

// MPI_Pack_size and MPI_Pack_size_c.
unsafe fn pack_size<C: Count>(incount: C, dt: c_int, _comm: c_int, size: *mut C) -> c_int {
    call(COMM_WORLD, || {
        let n = count(incount)?;
        *out(size, "size")? = to_count(datatype(dt)?.packed_size(n), "size")?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Get_address(location: *const c_void, address: *mut Aint) -> c_int {
    call(COMM_WORLD, || {
        *out(address, "address")? = location as Aint;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Address(location: *const c_void, address: *mut Aint) -> c_int {
    PMPI_Get_address(location, address)
}

fn status_in<'a>(st: *const MPI_Status) -> R<&'a MPI_Status> {
    if crate::status::ignored(st) {
        return fail(ErrorClass::Arg, "status is null or MPI_STATUS_IGNORE");
    }
    // SAFETY: a real status from the caller.
    Ok(unsafe { &*st })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Get_count(st: *const MPI_Status, dt: c_int, c: *mut c_int) -> c_int {
    get_count(st, dt, c)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Get_count_c(st: *const MPI_Status, dt: c_int, c: *mut c_long) -> c_int {
    get_count(st, dt, c)
}

// MPI_Get_count and MPI_Get_count_c.
unsafe fn get_count<C: Count>(st: *const MPI_Status, dt: c_int, c: *mut C) -> c_int {
    call(COMM_WORLD, || {
        let s = status_in(st)?;
        let n = datatype(dt)?.count_in(s.bytes() as usize);
        // MPI_UNDEFINED when the count is not whole, or does not fit an int.
        *out(c, "count")? = n.and_then(|n| C::narrow(n as i64)).unwrap_or(C::from_int(UNDEFINED));
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Get_elements(st: *const MPI_Status, dt: c_int, c: *mut c_int) -> c_int {
    get_elements(st, dt, c)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Get_elements_c(st: *const MPI_Status, dt: c_int, c: *mut c_long) -> c_int {
    get_elements(st, dt, c)
}

// MPI_Get_elements and MPI_Get_elements_c.
unsafe fn get_elements<C: Count>(st: *const MPI_Status, dt: c_int, c: *mut C) -> c_int {
    call(COMM_WORLD, || {
        let s = status_in(st)?;
        let n = datatype(dt)?.elements_in(s.bytes() as usize);
        // MPI_UNDEFINED when the count is not whole, or does not fit an int.
        *out(c, "count")? = n.and_then(|n| C::narrow(n as i64)).unwrap_or(C::from_int(UNDEFINED));
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Get_elements_x(st: *const MPI_Status, dt: c_int, c: *mut libc::c_long) -> c_int {
    call(COMM_WORLD, || {
        let s = status_in(st)?;
        let n = datatype(dt)?.elements_in(s.bytes() as usize);
        *out(c, "count")? = n.map_or(UNDEFINED as libc::c_long, |n| n as libc::c_long);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Status_set_elements_x(st: *mut MPI_Status, dt: c_int, c: libc::c_long) -> c_int {
    call(COMM_WORLD, || {
        let s = out(st, "status")?;
        let n = u64::try_from(c).or_else(|_| fail(ErrorClass::Count, format!("count {c} is negative")))?;
        s.set_bytes(n * datatype(dt)?.size() as u64);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Status_set_elements(st: *mut MPI_Status, dt: c_int, c: c_int) -> c_int {
    PMPI_Status_set_elements_x(st, dt, c as libc::c_long)
}

/// MPI-4's large-count name of `MPI_Status_set_elements_x` (§5.1.14).
#[no_mangle]
pub unsafe extern "C" fn PMPI_Status_set_elements_c(st: *mut MPI_Status, dt: c_int, c: libc::c_long) -> c_int {
    PMPI_Status_set_elements_x(st, dt, c)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Status_set_cancelled(st: *mut MPI_Status, flag: c_int) -> c_int {
    call(COMM_WORLD, || {
        out(st, "status")?.set_cancelled(flag != 0);
        Ok(())
    })
}

/// MPI_Aint_add (MPI-4.0 §5.1.11): address arithmetic as the C library
/// does it (wrapping, like unsigned pointer arithmetic).
#[no_mangle]
pub extern "C" fn PMPI_Aint_add(base: Aint, disp: Aint) -> Aint {
    base.wrapping_add(disp)
}

/// MPI_Aint_diff (MPI-4.0 §5.1.11).
#[no_mangle]
pub extern "C" fn PMPI_Aint_diff(addr1: Aint, addr2: Aint) -> Aint {
    addr1.wrapping_sub(addr2)
}

const TYPECLASS_REAL: c_int = 1;
const TYPECLASS_INTEGER: c_int = 2;
const TYPECLASS_COMPLEX: c_int = 3;

/// MPI_Type_match_size (MPI-4.0 §19.1.9): the predefined C type of a class
/// (MPI_TYPECLASS_REAL, _INTEGER, _COMPLEX) with `size` bytes.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_match_size(typeclass: c_int, size: c_int, dt: *mut c_int) -> c_int {
    use wanmpi_runtime::BasicType as B;
    call(COMM_WORLD, || {
        let o = out(dt, "datatype")?;
        let candidates: &[B] = match typeclass {
            TYPECLASS_REAL => &[B::Float, B::Double, B::LongDouble],
            TYPECLASS_INTEGER => &[B::SignedChar, B::Short, B::Int, B::Long, B::LongLong],
            TYPECLASS_COMPLEX => &[B::CFloatComplex, B::CDoubleComplex, B::CLongDoubleComplex],
            _ => return fail(ErrorClass::Arg, format!("typeclass {typeclass} is not MPI_TYPECLASS_REAL, _INTEGER or _COMPLEX")),
        };
        let b = candidates
            .iter()
            .find(|b| c_int::try_from(b.size()) == Ok(size))
            .ok_or_else(|| MpiError::new(ErrorClass::Arg, format!("no predefined type of class {typeclass} has {size} bytes")))?;
        *o = predef::datatype_handle(*b).ok_or_else(|| MpiError::new(ErrorClass::Intern, "a basic type without a handle"))?;
        Ok(())
    })
}

const ORDER_C: c_int = 56;
const ORDER_FORTRAN: c_int = 57;

/// The dimensions of an array constructor, fastest-varying last.
fn dims_in_c_order<T: Clone>(v: &[T], order: c_int) -> R<Vec<T>> {
    match order {
        ORDER_C => Ok(v.to_vec()),
        ORDER_FORTRAN => Ok(v.iter().rev().cloned().collect()),
        _ => fail(ErrorClass::Arg, format!("order {order} is neither MPI_ORDER_C nor MPI_ORDER_FORTRAN")),
    }
}

/// MPI_Type_create_subarray (MPI-4.0 §5.1.3), built from the constructors
/// the engine has: one hvector per dimension over the fastest one's
/// contiguous run, moved to the subarray's start and resized to the whole
/// array (lb of `old`, extent `prod(sizes) * extent(old)`), so that
/// consecutive elements of the new type are consecutive whole arrays. Its
/// envelope says MPI_COMBINER_RESIZED, not _SUBARRAY: the engine has no
/// subarray combiner.
pub fn subarray(sizes: &[usize], subsizes: &[usize], starts: &[usize], order: c_int, old: &Datatype) -> R<Datatype> {
    if sizes.is_empty() {
        return fail(ErrorClass::Arg, "a subarray needs at least one dimension");
    }
    for i in 0..sizes.len() {
        if sizes[i] == 0 || subsizes[i] == 0 || subsizes[i] > sizes[i] || starts[i] > sizes[i] - subsizes[i] {
            return fail(
                ErrorClass::Arg,
                format!("dimension {i}: size {}, subsize {}, start {} do not describe a subarray", sizes[i], subsizes[i], starts[i]),
            );
        }
    }
    let (sizes, subsizes, starts) = (dims_in_c_order(sizes, order)?, dims_in_c_order(subsizes, order)?, dims_in_c_order(starts, order)?);
    let n = sizes.len();
    let extent = old.extent();
    // stride[i]: bytes between consecutive indices of dimension i.
    let mut stride = vec![extent; n];
    for i in (0..n - 1).rev() {
        stride[i] = stride[i + 1].checked_mul(sizes[i + 1] as isize).ok_or_else(|| MpiError::new(ErrorClass::Arg, "the array is too large"))?;
    }
    let mut t = Datatype::contiguous(subsizes[n - 1], old).map_err(dt_err)?;
    for i in (0..n - 1).rev() {
        t = Datatype::hvector(subsizes[i], 1, stride[i], &t).map_err(dt_err)?;
    }
    let disp: isize = (0..n).map(|i| starts[i] as isize * stride[i]).sum();
    let placed = Datatype::hindexed_block(1, &[disp], &t).map_err(dt_err)?;
    let whole = stride[0].checked_mul(sizes[0] as isize).ok_or_else(|| MpiError::new(ErrorClass::Arg, "the array is too large"))?;
    Datatype::resized(&placed, old.lb(), whole).map_err(dt_err)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_create_subarray(
    ndims: c_int,
    sizes: *const c_int,
    subsizes: *const c_int,
    starts: *const c_int,
    order: c_int,
    old: c_int,
    newtype: *mut c_int,
) -> c_int {
    type_create_subarray(ndims, sizes, subsizes, starts, order, old, newtype)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_create_subarray_c(
    ndims: c_int,
    sizes: *const c_long,
    subsizes: *const c_long,
    starts: *const c_long,
    order: c_int,
    old: c_int,
    newtype: *mut c_int,
) -> c_int {
    type_create_subarray(ndims, sizes, subsizes, starts, order, old, newtype)
}

// MPI_Type_create_subarray and MPI_Type_create_subarray_c.
unsafe fn type_create_subarray<C: Count>(
    ndims: c_int,
    sizes: *const C,
    subsizes: *const C,
    starts: *const C,
    order: c_int,
    old: c_int,
    newtype: *mut c_int,
) -> c_int {
    call(COMM_WORLD, || {
        let n = count(ndims)?;
        let sizes = counts(sizes, n, "array_of_sizes")?;
        let subsizes = counts(subsizes, n, "array_of_subsizes")?;
        let starts = counts(starts, n, "array_of_starts")?;
        let old = datatype(old)?;
        // Recorded as given, for MPI_Type_get_envelope/contents.
        let mut ints = vec![n as i64];
        ints.extend(sizes.iter().chain(&subsizes).chain(&starts).map(|&v| v as i64));
        ints.push(order.into());
        register(newtype, Ok(subarray(&sizes, &subsizes, &starts, order, &old)?.as_subarray(ints, &old)))
    })
}

const DISTRIBUTE_BLOCK: c_int = 121;
const DISTRIBUTE_CYCLIC: c_int = 122;
const DISTRIBUTE_NONE: c_int = 123;
const DISTRIBUTE_DFLT_DARG: c_int = -49767;

/// The runs (first index, length) of one dimension of `g` elements that
/// process coordinate `c` of `p` owns (MPI-4.0 §5.1.4).
fn darray_runs(g: usize, distrib: c_int, darg: c_int, p: usize, c: usize) -> R<Vec<(usize, usize)>> {
    match distrib {
        DISTRIBUTE_NONE => {
            if p != 1 {
                return fail(ErrorClass::Arg, "MPI_DISTRIBUTE_NONE over more than one process");
            }
            Ok(vec![(0, g)])
        }
        DISTRIBUTE_BLOCK => {
            let b = if darg == DISTRIBUTE_DFLT_DARG { g.div_ceil(p) } else { count(darg)? };
            if b == 0 && g > 0 || b * p < g {
                return fail(ErrorClass::Arg, format!("blocks of {b} over {p} processes do not cover {g} elements"));
            }
            let first = (b * c).min(g);
            Ok(vec![(first, (b * (c + 1)).min(g) - first)])
        }
        DISTRIBUTE_CYCLIC => {
            let b = if darg == DISTRIBUTE_DFLT_DARG { 1 } else { count(darg)? };
            if b == 0 {
                return fail(ErrorClass::Arg, "a cyclic distribution with blocks of 0");
            }
            Ok((0..).map(|k| (k * p + c) * b).take_while(|&s| s < g).map(|s| (s, b.min(g - s))).collect())
        }
        _ => fail(ErrorClass::Arg, format!("distribution {distrib} is not MPI_DISTRIBUTE_BLOCK, _CYCLIC or _NONE")),
    }
}

/// MPI_Type_create_darray (MPI-4.0 §5.1.4). Process `rank` of `psizes`
/// (row-major, whatever `order` says) owns, per dimension, the runs of
/// `darray_runs`; the type is built from the fastest dimension out: the
/// owned runs of one dimension as an hindexed type over the next inner
/// "row", each level resized to the whole row, so that the result has lb 0
/// and the extent of the whole global array. Its envelope says
/// MPI_COMBINER_RESIZED, not _DARRAY: the engine has no darray combiner.
#[allow(clippy::too_many_arguments)]
pub fn darray(
    size: usize,
    rank: usize,
    gsizes: &[usize],
    distribs: &[c_int],
    dargs: &[c_int],
    psizes: &[usize],
    order: c_int,
    old: &Datatype,
) -> R<Datatype> {
    let n = gsizes.len();
    if n == 0 || psizes.iter().product::<usize>() != size || rank >= size {
        return fail(ErrorClass::Arg, format!("a process grid {psizes:?} for rank {rank} of {size}"));
    }
    // Row-major coordinates of `rank` in the process grid.
    let mut coords = vec![0; n];
    let mut rest = rank;
    for i in (0..n).rev() {
        coords[i] = rest % psizes[i];
        rest /= psizes[i];
    }
    let runs: Vec<Vec<(usize, usize)>> = (0..n).map(|i| darray_runs(gsizes[i], distribs[i], dargs[i], psizes[i], coords[i])).collect::<R<_>>()?;
    let (gsizes, runs) = (dims_in_c_order(gsizes, order)?, dims_in_c_order(&runs, order)?);
    let mut row = old.clone();
    let mut row_bytes = old.extent();
    for i in (0..n).rev() {
        let lens: Vec<usize> = runs[i].iter().map(|r| r.1).collect();
        let displs: Vec<isize> = runs[i].iter().map(|r| r.0 as isize * row_bytes).collect();
        let t = Datatype::hindexed(&lens, &displs, &row).map_err(dt_err)?;
        row_bytes = row_bytes.checked_mul(gsizes[i] as isize).ok_or_else(|| MpiError::new(ErrorClass::Arg, "the array is too large"))?;
        row = Datatype::resized(&t, 0, row_bytes).map_err(dt_err)?;
    }
    Ok(row)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_create_darray(
    size: c_int,
    rank: c_int,
    ndims: c_int,
    gsizes: *const c_int,
    distribs: *const c_int,
    dargs: *const c_int,
    psizes: *const c_int,
    order: c_int,
    old: c_int,
    newtype: *mut c_int,
) -> c_int {
    type_create_darray(size, rank, ndims, gsizes, distribs, dargs, psizes, order, old, newtype)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_create_darray_c(
    size: c_int,
    rank: c_int,
    ndims: c_int,
    gsizes: *const c_long,
    distribs: *const c_int,
    dargs: *const c_int,
    psizes: *const c_int,
    order: c_int,
    old: c_int,
    newtype: *mut c_int,
) -> c_int {
    type_create_darray(size, rank, ndims, gsizes, distribs, dargs, psizes, order, old, newtype)
}

// MPI_Type_create_darray and MPI_Type_create_darray_c.
#[allow(clippy::too_many_arguments)]
unsafe fn type_create_darray<C: Count>(
    size: c_int,
    rank: c_int,
    ndims: c_int,
    gsizes: *const C,
    distribs: *const c_int,
    dargs: *const c_int,
    psizes: *const c_int,
    order: c_int,
    old: c_int,
    newtype: *mut c_int,
) -> c_int {
    call(COMM_WORLD, || {
        let n = count(ndims)?;
        let g = counts(gsizes, n, "array_of_gsizes")?;
        let p = counts(psizes, n, "array_of_psizes")?;
        let d = slice(distribs, n, "array_of_distribs")?;
        let a = slice(dargs, n, "array_of_dargs")?;
        let old = datatype(old)?;
        let t = darray(count(size)?, count(rank)?, &g, d, a, &p, order, &old)?;
        let mut ints = vec![size.into(), rank.into(), n as i64];
        ints.extend(g.iter().map(|&v| v as i64));
        ints.extend(d.iter().chain(a).map(|&v| i64::from(v)));
        ints.extend(p.iter().map(|&v| v as i64));
        ints.push(order.into());
        register(newtype, Ok(t.as_darray(ints, &old)))
    })
}

/// MPI_Type_create_f90_integer (MPI-4.0 §19.1.9): the predefined integer
/// type with at least `r` decimal digits of range.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_create_f90_integer(r: c_int, dt: *mut c_int) -> c_int {
    use wanmpi_runtime::BasicType as B;
    call(COMM_WORLD, || {
        let o = out(dt, "newtype")?;
        let b = match r {
            ..=2 => B::Int8,
            3..=4 => B::Int16,
            5..=9 => B::Int32,
            10..=18 => B::Int64,
            _ => return fail(ErrorClass::Arg, format!("no integer type has a range of 10^{r}")),
        };
        *o = f90(b, F90Kind::Integer, vec![r.into()])?;
        Ok(())
    })
}

/// A handle for the basic type `b` as MPI_Type_create_f90_* made it: its
/// envelope says F90_* with the parameters asked for (MPI-4.0 §19.1.9).
fn f90(b: wanmpi_runtime::BasicType, kind: F90Kind, params: Vec<i64>) -> R<c_int> {
    let mut h = 0;
    register(&mut h, Ok(Datatype::basic(b).as_f90(kind, params)))?;
    Ok(h)
}

/// The real type with precision `p` and range `r` (MPI_UNDEFINED: any).
fn f90_real(p: c_int, r: c_int) -> R<wanmpi_runtime::BasicType> {
    use wanmpi_runtime::BasicType as B;
    let fits = |mp: c_int, mr: c_int| (p == UNDEFINED || p <= mp) && (r == UNDEFINED || r <= mr);
    if p == UNDEFINED && r == UNDEFINED {
        return fail(ErrorClass::Arg, "precision and range are both MPI_UNDEFINED");
    }
    if fits(6, 37) {
        Ok(B::Float)
    } else if fits(15, 307) {
        Ok(B::Double)
    } else if fits(18, 4931) {
        Ok(B::LongDouble)
    } else {
        fail(ErrorClass::Arg, format!("no real type has precision {p} and range 10^{r}"))
    }
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_create_f90_real(p: c_int, r: c_int, dt: *mut c_int) -> c_int {
    call(COMM_WORLD, || {
        let o = out(dt, "newtype")?;
        *o = f90(f90_real(p, r)?, F90Kind::Real, vec![p.into(), r.into()])?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Type_create_f90_complex(p: c_int, r: c_int, dt: *mut c_int) -> c_int {
    use wanmpi_runtime::BasicType as B;
    call(COMM_WORLD, || {
        let o = out(dt, "newtype")?;
        let b = match f90_real(p, r)? {
            B::Float => B::CFloatComplex,
            B::Double => B::CDoubleComplex,
            _ => B::CLongDoubleComplex,
        };
        *o = f90(b, F90Kind::Complex, vec![p.into(), r.into()])?;
        Ok(())
    })
}
