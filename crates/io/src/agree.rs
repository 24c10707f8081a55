//! What the ranks of a file agree on over its communicator: that an
//! argument is the same everywhere (MPI_ERR_NOT_SAME otherwise), that an
//! operation succeeded everywhere (so no rank keeps a file the others
//! failed to open), and values one rank decides.

use wanmpi_engine::datatype::{BasicType, Datatype};
use wanmpi_engine::op::{Op, PredefOp};
use wanmpi_engine::{ErrorClass, MpiError, MpiResult};
use wanmpi_runtime::{Buf, CommId, Runtime};

fn longs() -> Datatype {
    Datatype::basic(BasicType::Int64)
}

/// Element-wise maximum of `v` over `comm`.
pub fn max(rt: &Runtime, comm: CommId, v: &mut [i64]) -> MpiResult<()> {
    let dt = longs();
    let mine = v.to_vec();
    // SAFETY: both buffers hold v.len() i64s and outlive the call.
    unsafe { rt.allreduce(Some(mine.as_ptr() as *const u8), Buf::new(v.as_mut_ptr() as *mut u8, v.len(), &dt), &Op::Predef(PredefOp::Max), comm) }
}

/// Fails with MPI_ERR_NOT_SAME on every rank unless all passed the same `v`.
pub fn same(rt: &Runtime, comm: CommId, v: i64, what: &str) -> MpiResult<()> {
    let mut m = [v, v.wrapping_neg()];
    max(rt, comm, &mut m)?;
    if m[0] != m[1].wrapping_neg() {
        return Err(MpiError::new(ErrorClass::NotSame, format!("{what} differs between the ranks of the file's communicator")));
    }
    Ok(())
}

/// Rank `root`'s `v` on every rank.
pub fn bcast(rt: &Runtime, comm: CommId, v: i64, root: i32) -> MpiResult<i64> {
    let dt = longs();
    let mut b = [v];
    // SAFETY: one i64 that outlives the call.
    unsafe { rt.bcast(Buf::new(b.as_mut_ptr() as *mut u8, 1, &dt), root, comm)? };
    Ok(b[0])
}

/// Every rank's `v`, in rank order.
pub fn allgather(rt: &Runtime, comm: CommId, v: i64) -> MpiResult<Vec<i64>> {
    let dt = longs();
    let mine = [v];
    let mut all = vec![0i64; rt.comm_size(comm)?];
    // SAFETY: one i64 in, comm_size i64s out; both outlive the call.
    unsafe {
        rt.allgather(Some(Buf::new(mine.as_ptr() as *mut u8, 1, &dt)), Buf::new(all.as_mut_ptr() as *mut u8, 1, &dt), comm)?;
    }
    Ok(all)
}

/// Succeeds on every rank only if `local` succeeded on every rank; a rank
/// that succeeded itself reports the class another rank failed with.
pub fn all_ok<T>(rt: &Runtime, comm: CommId, local: MpiResult<T>) -> MpiResult<T> {
    let mut m = [local.as_ref().err().map_or(0, |e| e.class as i64)];
    max(rt, comm, &mut m)?;
    match local {
        Err(e) => Err(e),
        Ok(_) if m[0] != 0 => Err(MpiError::new(class_from(m[0]), "the operation failed on another rank of the file's communicator")),
        Ok(v) => Ok(v),
    }
}

/// Rank `root`'s outcome on every rank (an operation only it performs).
pub fn root_ok(rt: &Runtime, comm: CommId, root: i32, local: MpiResult<()>) -> MpiResult<()> {
    let me = rt.comm_rank(comm)? as i32;
    let class = bcast(rt, comm, local.as_ref().err().map_or(0, |e| e.class as i64), root)?;
    match local {
        Err(e) if me == root => Err(e),
        _ if class != 0 => Err(MpiError::new(class_from(class), format!("the operation failed on rank {root} of the file's communicator"))),
        _ => Ok(()),
    }
}

/// The classes a file operation can fail with, by number.
pub(crate) fn class_from(n: i64) -> ErrorClass {
    use ErrorClass::*;
    [
        Access,
        Amode,
        BadFile,
        FileExists,
        FileInUse,
        File,
        Io,
        NoSpace,
        NoSuchFile,
        Quota,
        ReadOnly,
        UnsupportedDatarep,
        NotSame,
        Arg,
        Type,
        Count,
        Comm,
        Info,
        NoMem,
        UnsupportedOperation,
        Intern,
    ]
    .into_iter()
    .find(|c| *c as i64 == n)
    .unwrap_or(Other)
}
