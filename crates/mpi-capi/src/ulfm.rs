//! ULFM: the fault-tolerance calls of MPICH 4.0 (`MPIX_Comm_revoke`,
//! `_shrink`, `_agree`, `_failure_ack`, `_failure_get_acked`) and the later
//! ones of Open MPI 5 and mpi4py (`MPIX_Comm_get_failed`, `_ack_failed`,
//! `_iagree`, `_ishrink`, `_is_revoked`). Each is exported under its
//! `MPIX_` name and a `PMPIX_` one (MPICH's profiling names). The work is
//! the runtime's (`crates/runtime/src/ulfm/`); docs/failures.md says what
//! they do here and their limits.

use std::os::raw::c_int;

use wanmpi_runtime::{ErrorClass, MpiError};

use crate::args::{comm_id, new_group, out};
use crate::comm::adopt;
use crate::error::{call, R};
use crate::global::rt;

fn revoke(comm: c_int) -> c_int {
    call(comm, || rt()?.comm_revoke(comm_id(comm)?))
}

unsafe fn shrink(comm: c_int, newcomm: *mut c_int) -> c_int {
    call(comm, || {
        let o = out(newcomm, "newcomm")?;
        *o = crate::predef::COMM_NULL;
        let c = rt()?.comm_shrink(comm_id(comm)?)?;
        *o = adopt(comm, c, false)?;
        Ok(())
    })
}

/// The agreement: `flag` written either way; MPIX_ERR_PROC_FAILED when a
/// failure was not acknowledged.
fn agree_body(comm: c_int, flag: &mut c_int) -> R<()> {
    let a = rt()?.comm_agree(comm_id(comm)?, *flag)?;
    *flag = a.flag;
    if a.unacknowledged {
        return Err(MpiError::new(ErrorClass::ProcFailed, "a member of the communicator failed and not every participant had acknowledged it"));
    }
    Ok(())
}

unsafe fn agree(comm: c_int, flag: *mut c_int) -> c_int {
    call(comm, || agree_body(comm, out(flag, "flag")?))
}

/// The agreement goes to mpirun now; the request completes when its
/// outcome comes back (the runtime's `ulfm/nonblocking.rs`).
unsafe fn iagree(comm: c_int, flag: *mut c_int, request: *mut c_int) -> c_int {
    call(comm, || {
        let (f, q) = (out(flag, "flag")?, out(request, "request")?);
        // SAFETY: MPI's contract: the flag stays valid until completion.
        let r = unsafe { rt()?.comm_iagree(comm_id(comm)?, f as *mut c_int) }?;
        *q = crate::request::new_request(r, comm, false)?;
        Ok(())
    })
}

unsafe fn ishrink(comm: c_int, newcomm: *mut c_int, request: *mut c_int) -> c_int {
    call(comm, || {
        let (o, q) = (out(newcomm, "newcomm")?, out(request, "request")?);
        *o = crate::predef::COMM_NULL;
        let (c, r) = rt()?.comm_ishrink(comm_id(comm)?)?;
        *o = adopt(comm, c, false)?;
        *q = crate::request::new_request(r, comm, false)?;
        Ok(())
    })
}

fn failure_ack(comm: c_int) -> c_int {
    call(comm, || rt()?.comm_failure_ack(comm_id(comm)?))
}

unsafe fn failure_get_acked(comm: c_int, group: *mut c_int) -> c_int {
    call(comm, || {
        let o = out(group, "failedgrp")?;
        *o = new_group(rt()?.comm_failure_get_acked(comm_id(comm)?)?)?;
        Ok(())
    })
}

unsafe fn get_failed(comm: c_int, group: *mut c_int) -> c_int {
    call(comm, || {
        let o = out(group, "failedgrp")?;
        *o = new_group(rt()?.comm_get_failed(comm_id(comm)?)?)?;
        Ok(())
    })
}

unsafe fn ack_failed(comm: c_int, num_to_ack: c_int, num_acked: *mut c_int) -> c_int {
    call(comm, || {
        let o = out(num_acked, "num_acked")?;
        let n = usize::try_from(num_to_ack).map_err(|_| MpiError::new(ErrorClass::Arg, format!("num_to_ack {num_to_ack} is negative")))?;
        *o = c_int::try_from(rt()?.comm_ack_failed(comm_id(comm)?, n)?).unwrap_or(c_int::MAX);
        Ok(())
    })
}

unsafe fn is_revoked(comm: c_int, flag: *mut c_int) -> c_int {
    call(comm, || {
        let o = out(flag, "flag")?;
        *o = c_int::from(rt()?.comm_is_revoked(comm_id(comm)?)?);
        Ok(())
    })
}

/// Both names of each function: `MPIX_X` and `PMPIX_X`.
macro_rules! both {
    ($( $name:ident / $pname:ident ( $($a:ident : $t:ty),* ) => $body:ident; )*) => {
        $(
            #[no_mangle]
            pub unsafe extern "C" fn $name($($a: $t),*) -> c_int {
                $body($($a),*)
            }
            #[no_mangle]
            pub unsafe extern "C" fn $pname($($a: $t),*) -> c_int {
                $body($($a),*)
            }
        )*
    };
}

both! {
    MPIX_Comm_revoke / PMPIX_Comm_revoke (comm: c_int) => revoke;
    MPIX_Comm_shrink / PMPIX_Comm_shrink (comm: c_int, newcomm: *mut c_int) => shrink;
    MPIX_Comm_agree / PMPIX_Comm_agree (comm: c_int, flag: *mut c_int) => agree;
    MPIX_Comm_iagree / PMPIX_Comm_iagree (comm: c_int, flag: *mut c_int, request: *mut c_int) => iagree;
    MPIX_Comm_ishrink / PMPIX_Comm_ishrink (comm: c_int, newcomm: *mut c_int, request: *mut c_int) => ishrink;
    MPIX_Comm_failure_ack / PMPIX_Comm_failure_ack (comm: c_int) => failure_ack;
    MPIX_Comm_failure_get_acked / PMPIX_Comm_failure_get_acked (comm: c_int, failedgrp: *mut c_int) => failure_get_acked;
    MPIX_Comm_get_failed / PMPIX_Comm_get_failed (comm: c_int, failedgrp: *mut c_int) => get_failed;
    MPIX_Comm_ack_failed / PMPIX_Comm_ack_failed (comm: c_int, num_to_ack: c_int, num_acked: *mut c_int) => ack_failed;
    MPIX_Comm_is_revoked / PMPIX_Comm_is_revoked (comm: c_int, flag: *mut c_int) => is_revoked;
}
