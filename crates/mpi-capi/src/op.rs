//! Reduction operations (MPI-3.1 §5.9.5-5.9.7): user C functions wrapped as
//! runtime operations, Op_free, Op_commutative, Reduce_local.
//!
//! A C user function needs the count and handle of the datatype the
//! reduction runs on, which MPI_Op_create does not know: each reduction
//! builds its `Op` for its datatype (`op_for`), and the closure turns the
//! byte length it is given back into a count of that datatype.

use std::ffi::c_void;
use std::os::raw::{c_int, c_long};
use std::sync::Arc;

use wanmpi_engine::datatype::{Combiner, LaidOut};
use wanmpi_runtime::{Datatype, ErrorClass, MpiError, Op};

use crate::args::{count, datatype, out, Count};
use crate::error::{call, fail, R};
use crate::global::objs;
use crate::predef::{self, COMM_WORLD, OP_NULL};

/// `void f(void *in, void *inout, int *len, MPI_Datatype *dt)`.
pub type CUserFn = unsafe extern "C" fn(*mut c_void, *mut c_void, *mut c_int, *mut c_int);
/// MPI-4's large-count form (`MPI_Op_create_c`): `MPI_Count *len`.
pub type CUserFnC = unsafe extern "C" fn(*mut c_void, *mut c_void, *mut c_long, *mut c_int);

/// The user's function, in the form it was created with.
#[derive(Clone, Copy)]
pub enum UserFn {
    Int(CUserFn),
    Large(CUserFnC),
}

/// What the op table holds for a user operation.
#[derive(Clone, Copy)]
pub struct UserOp {
    pub func: UserFn,
    pub commute: bool,
}

/// Bytes per element the reductions hand over for `dt`: predefined types
/// in their C array layout (extent), derived ones packed (size).
fn unit(dt: &Datatype) -> usize {
    if dt.combiner() == Combiner::Named {
        dt.extent().max(0) as usize
    } else {
        dt.size()
    }
}

/// The runtime operation for op handle `h` on datatype `dt` (handle `dth`).
pub fn op_for(h: c_int, dth: c_int, dt: &Datatype) -> R<Op> {
    if let Some(p) = predef::op(h) {
        return Ok(Op::Predef(p));
    }
    let u = user_op(h)?;
    let unit = unit(dt).max(1);
    let func = u.func;
    // A derived type with gaps arrives packed: the function gets the
    // elements laid out as the type describes them.
    let spread = (dt.combiner() != Combiner::Named && !dt.is_contiguous()).then(|| dt.clone());
    Ok(Op::User {
        func: Arc::new(move |input: &[u8], inout: &mut [u8], _n: usize| {
            let n = inout.len() / unit;
            match &spread {
                None => apply(func, input.as_ptr() as *mut c_void, inout.as_mut_ptr() as *mut c_void, n, unit, dth),
                Some(dt) => {
                    let (mut i, mut io) = (LaidOut::from_packed(dt, input, n), LaidOut::from_packed(dt, inout, n));
                    apply(func, i.base() as *mut c_void, io.base() as *mut c_void, n, dt.extent().max(0) as usize, dth);
                    inout.copy_from_slice(&io.packed(dt, n));
                }
            }
        }),
        commute: u.commute,
    })
}

/// Calls the C function on `n` elements of datatype handle `dth`, `stride`
/// bytes apart. An int function takes at most INT_MAX elements a call, so
/// a longer reduction calls it once per INT_MAX elements.
fn apply(func: UserFn, i: *mut c_void, io: *mut c_void, n: usize, stride: usize, dth: c_int) {
    let mut t = dth;
    // SAFETY: the C function reads `len` elements of `t` from each buffer;
    // both hold at least that many from the offset given. It must not write
    // `input` (MPI's contract), so casting away const is sound.
    match func {
        UserFn::Large(f) => unsafe { f(i, io, &mut (n as c_long), &mut t) },
        UserFn::Int(f) => {
            let mut done = 0;
            while done < n {
                let k = (n - done).min(c_int::MAX as usize);
                let mut len = k as c_int;
                let at = done * stride;
                unsafe { f(i.byte_add(at), io.byte_add(at), &mut len, &mut t) };
                done += k;
            }
        }
    }
}

pub fn user_op(h: c_int) -> R<UserOp> {
    objs().ops.get(h).copied().ok_or_else(|| MpiError::new(ErrorClass::Op, format!("{h:#x} is not a valid operation handle")))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Op_create(f: Option<CUserFn>, commute: c_int, op: *mut c_int) -> c_int {
    create(f.map(UserFn::Int), commute, op)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Op_create_c(f: Option<CUserFnC>, commute: c_int, op: *mut c_int) -> c_int {
    create(f.map(UserFn::Large), commute, op)
}

unsafe fn create(f: Option<UserFn>, commute: c_int, op: *mut c_int) -> c_int {
    call(COMM_WORLD, || {
        let o = out(op, "op")?;
        let Some(func) = f else { return fail(ErrorClass::Arg, "user function is a null pointer") };
        let commute = commute != 0;
        *o = objs().ops.insert(UserOp { func, commute }).ok_or_else(|| MpiError::new(ErrorClass::NoMem, "too many operations"))?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Op_free(op: *mut c_int) -> c_int {
    call(COMM_WORLD, || {
        let o = out(op, "op")?;
        if predef::op(*o).is_some() {
            return fail(ErrorClass::Op, "predefined operations cannot be freed");
        }
        objs().ops.remove(*o).ok_or_else(|| MpiError::new(ErrorClass::Op, format!("{:#x} is not a valid operation handle", *o)))?;
        *o = OP_NULL;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Op_commutative(op: c_int, commute: *mut c_int) -> c_int {
    call(COMM_WORLD, || {
        let c = out(commute, "commute")?;
        *c = c_int::from(match predef::op(op) {
            Some(p) => Op::Predef(p).is_commutative(),
            None => user_op(op)?.commute,
        });
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Reduce_local(inbuf: *const c_void, inoutbuf: *mut c_void, c: c_int, dt: c_int, op: c_int) -> c_int {
    reduce_local(inbuf, inoutbuf, c, dt, op)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Reduce_local_c(inbuf: *const c_void, inoutbuf: *mut c_void, c: c_long, dt: c_int, op: c_int) -> c_int {
    reduce_local(inbuf, inoutbuf, c, dt, op)
}

// MPI_Reduce_local and MPI_Reduce_local_c.
unsafe fn reduce_local<C: Count>(inbuf: *const c_void, inoutbuf: *mut c_void, c: C, dt: c_int, op: c_int) -> c_int {
    call(COMM_WORLD, || {
        let n = count(c)?;
        let d = datatype(dt)?;
        if predef::op(op).is_none() {
            // A user function works on the buffers as they are, whatever the type's layout.
            if n > 0 {
                apply(user_op(op)?.func, inbuf as *mut c_void, inoutbuf, n, d.extent().max(0) as usize, dt);
            }
            return Ok(());
        }
        let o = op_for(op, dt, &d)?;
        if let Some(p) = predef::op(op).filter(|_| d.combiner() != Combiner::Named || d.basic_kind().is_none()) {
            return fail(ErrorClass::Op, format!("MPI_Reduce_local with {} needs a predefined datatype", p.mpi_name()));
        }
        let len = n * unit(&d);
        if len == 0 {
            return Ok(());
        }
        let input = crate::args::slice(inbuf as *const u8, len, "inbuf")?;
        let inout = crate::args::slice_mut(inoutbuf as *mut u8, len, "inoutbuf")?;
        let b = d.basic_kind().unwrap_or(wanmpi_runtime::BasicType::Byte);
        let count_b = if matches!(o, Op::User { .. }) { len } else { n };
        let ty = if matches!(o, Op::User { .. }) { wanmpi_runtime::BasicType::Byte } else { b };
        o.apply(ty, count_b, input, inout).map_err(|e| MpiError::new(ErrorClass::Op, e.to_string()))
    })
}
