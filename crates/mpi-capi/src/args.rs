//! Argument checks and handle decoding shared by every chapter: each
//! returns the MPI error class the standard names for a bad argument.

use std::ffi::{c_char, CStr};
use std::os::raw::c_int;
use std::sync::Arc;

use wanmpi_runtime::{CommId, Datatype, ErrorClass, Group, Status};

use crate::error::{fail, R};
use crate::global::objs;
use crate::handles::{make, split, Obj, KIND_DIRECT};
use crate::predef;
use crate::status::MPI_Status;

/// A communicator handle to the runtime's id. WORLD and SELF are builtin;
/// user communicators are direct handles whose index is the runtime's id.
pub fn comm_id(h: c_int) -> R<CommId> {
    match h {
        predef::COMM_WORLD => Ok(wanmpi_runtime::COMM_WORLD),
        predef::COMM_SELF => Ok(wanmpi_runtime::COMM_SELF),
        predef::COMM_NULL => fail(ErrorClass::Comm, "MPI_COMM_NULL is not a valid communicator here"),
        _ => match split(h) {
            (KIND_DIRECT, o, idx) if o == Obj::Comm as u32 => Ok(CommId(idx)),
            _ => fail(ErrorClass::Comm, format!("{h:#x} is not a communicator handle")),
        },
    }
}

pub fn comm_handle(id: CommId) -> c_int {
    match id {
        wanmpi_runtime::COMM_WORLD => predef::COMM_WORLD,
        wanmpi_runtime::COMM_SELF => predef::COMM_SELF,
        CommId(i) => make(KIND_DIRECT, Obj::Comm, i),
    }
}

pub fn datatype(h: c_int) -> R<Datatype> {
    if let Some(d) = predef::datatype(h) {
        return Ok(d.clone());
    }
    if h == predef::DATATYPE_NULL {
        return fail(ErrorClass::Type, "MPI_DATATYPE_NULL is not a valid datatype here");
    }
    objs()
        .types
        .get(h)
        .cloned()
        .ok_or_else(|| wanmpi_runtime::MpiError::new(ErrorClass::Type, format!("{h:#x} is not a valid datatype handle (freed, or not supported)")))
}

/// A datatype argument borrowed when predefined: a small message's call
/// then takes no reference (two atomic operations on its critical path).
pub enum DatatypeArg {
    Predefined(&'static Datatype),
    User(Datatype),
}

impl std::ops::Deref for DatatypeArg {
    type Target = Datatype;
    fn deref(&self) -> &Datatype {
        match self {
            DatatypeArg::Predefined(d) => d,
            DatatypeArg::User(d) => d,
        }
    }
}

/// `datatype`, borrowing predefined types.
pub fn datatype_arg(h: c_int) -> R<DatatypeArg> {
    match predef::datatype(h) {
        Some(d) => Ok(DatatypeArg::Predefined(d)),
        None => datatype(h).map(DatatypeArg::User),
    }
}

/// The handle MPI_Type_get_contents returns for a datatype value: the
/// predefined handle, or a new handle to the same type (MPI-4.0 §5.1.13: a
/// derived type comes back as a new reference the caller frees, so freeing
/// it leaves the caller's own handle valid).
pub fn datatype_handle(d: &Datatype) -> R<c_int> {
    if d.combiner() == wanmpi_engine::datatype::Combiner::Named {
        if let Some(h) = predef::handle_of(d).or_else(|| d.basic_kind().and_then(predef::datatype_handle)) {
            return Ok(h);
        }
    }
    objs().types.insert(d.clone()).ok_or_else(|| wanmpi_runtime::MpiError::new(ErrorClass::NoMem, "too many datatypes"))
}

pub fn group(h: c_int) -> R<Arc<Group>> {
    if h == predef::GROUP_EMPTY {
        return Ok(Arc::new(Group::empty()));
    }
    objs().groups.get(h).cloned().ok_or_else(|| wanmpi_runtime::MpiError::new(ErrorClass::Group, format!("{h:#x} is not a valid group handle")))
}

pub fn new_group(g: Group) -> R<c_int> {
    if g.size() == 0 {
        return Ok(predef::GROUP_EMPTY);
    }
    objs().groups.insert(Arc::new(g)).ok_or_else(|| wanmpi_runtime::MpiError::new(ErrorClass::NoMem, "too many groups"))
}

/// A count, displacement or size argument as C passes it: `int` in the
/// MPI-3 calls, `MPI_Count`/`MPI_Aint` (64-bit) in MPI-4's large-count `_c`
/// calls (MPI-4.0 §2.5.8). Each call's body is written once, generic over
/// this, and its two C entry points differ only in the type they pass.
pub trait Count: Copy + std::fmt::Display + 'static {
    /// The value, widened.
    fn wide(self) -> i64;
    /// A value to hand back; None when it does not fit this type.
    fn narrow(v: i64) -> Option<Self>;
    /// An int value (MPI_UNDEFINED, a small constant), which always fits.
    fn from_int(v: c_int) -> Self;
}

impl Count for c_int {
    fn wide(self) -> i64 {
        i64::from(self)
    }
    fn narrow(v: i64) -> Option<Self> {
        c_int::try_from(v).ok()
    }
    fn from_int(v: c_int) -> Self {
        v
    }
}

impl Count for std::os::raw::c_long {
    fn wide(self) -> i64 {
        self
    }
    fn narrow(v: i64) -> Option<Self> {
        Some(v)
    }
    fn from_int(v: c_int) -> Self {
        Self::from(v)
    }
}

pub fn count<C: Count>(c: C) -> R<usize> {
    usize::try_from(c.wide()).or_else(|_| fail(ErrorClass::Count, format!("count {c} is negative")))
}

/// A count, size or position to hand back in the caller's type; an error
/// when it does not fit (an int output of a value beyond INT_MAX).
pub fn to_count<C: Count>(v: usize, what: &str) -> R<C> {
    i64::try_from(v)
        .ok()
        .and_then(C::narrow)
        .ok_or_else(|| wanmpi_runtime::MpiError::new(ErrorClass::Count, format!("{what} {v} does not fit an int: use the _c call")))
}

/// A null buffer is MPI_BOTTOM, legal with derived types (absolute
/// addresses) but not with a predefined type and a positive count.
pub fn buffer(buf: *const u8, count: usize, dt: &Datatype) -> R<()> {
    if buf.is_null() && count > 0 && dt.size() > 0 && dt.combiner() == wanmpi_engine::datatype::Combiner::Named {
        return fail(ErrorClass::Buffer, format!("null buffer for {count} x {}", dt.name()));
    }
    Ok(())
}

/// An output argument.
pub fn out<'a, T>(p: *mut T, what: &str) -> R<&'a mut T> {
    // SAFETY: the caller passes a pointer to a writable T or null.
    unsafe { p.as_mut() }.ok_or_else(|| wanmpi_runtime::MpiError::new(ErrorClass::Arg, format!("{what} is a null pointer")))
}

/// An array argument of `n` elements.
pub fn slice<'a, T>(p: *const T, n: usize, what: &str) -> R<&'a [T]> {
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return fail(ErrorClass::Arg, format!("{what} is a null pointer"));
    }
    // SAFETY: the caller passes `n` readable elements.
    Ok(unsafe { std::slice::from_raw_parts(p, n) })
}

pub fn slice_mut<'a, T>(p: *mut T, n: usize, what: &str) -> R<&'a mut [T]> {
    if n == 0 {
        return Ok(&mut []);
    }
    if p.is_null() {
        return fail(ErrorClass::Arg, format!("{what} is a null pointer"));
    }
    // SAFETY: the caller passes `n` writable elements.
    Ok(unsafe { std::slice::from_raw_parts_mut(p, n) })
}

pub fn cstr<'a>(p: *const c_char, what: &str) -> R<&'a str> {
    if p.is_null() {
        return fail(ErrorClass::Arg, format!("{what} is a null pointer"));
    }
    // SAFETY: a NUL-terminated C string from the caller.
    unsafe { CStr::from_ptr(p) }.to_str().or_else(|_| fail(ErrorClass::Arg, format!("{what} is not valid UTF-8")))
}

/// Writes `s` as a NUL-terminated string of at most `max` bytes (with the
/// NUL) and its length to `len`.
pub fn write_str(s: &str, dst: *mut c_char, max: usize, len: *mut c_int) -> R<()> {
    if dst.is_null() {
        return fail(ErrorClass::Arg, "output string is a null pointer");
    }
    let b = s.as_bytes();
    let n = b.len().min(max.saturating_sub(1));
    // SAFETY: the caller provides `max` bytes at `dst`.
    unsafe {
        std::ptr::copy_nonoverlapping(b.as_ptr(), dst as *mut u8, n);
        *dst.add(n) = 0;
    }
    if !len.is_null() {
        // SAFETY: checked non-null.
        unsafe { *len = n as c_int };
    }
    Ok(())
}

pub fn status_out(p: *mut MPI_Status, s: &Status) {
    crate::status::write(p, s);
}

pub fn int(v: usize) -> c_int {
    c_int::try_from(v).unwrap_or(c_int::MAX)
}
