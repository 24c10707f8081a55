//! Bad arguments return the right MPI error class (with MPI_ERRORS_RETURN)
//! and leave the job working.

use wanmpi::prelude::*;
use wanmpi::{ErrHandler, ErrorClass};
use wanmpi_conformance::{check, pass};

fn expect<T: std::fmt::Debug>(rank: i32, what: &str, r: wanmpi::Result<T>, class: ErrorClass) {
    match r {
        Err(e) => check!(rank, e.class == class, "{what}: class {:?}, expected {class:?} ({e})", e.class),
        Ok(v) => wanmpi_conformance::fail(rank, &format!("{what}: no error (got {v:?})")),
    }
}

fn main() -> wanmpi::Result<()> {
    let u = initialize()?;
    let world = u.world();
    world.set_errhandler(ErrHandler::Return)?;
    let (rank, size) = (world.rank(), world.size());
    expect(rank, "send to rank = size", world.send(&[1u8], size, 0), ErrorClass::Rank);
    expect(rank, "send to rank -5", world.send(&[1u8], -5, 0), ErrorClass::Rank);
    expect(rank, "receive from rank = size", world.receive_into(&mut [0u8], size, 0), ErrorClass::Rank);
    expect(rank, "send with tag -3", world.send(&[1u8], 0, -3), ErrorClass::Tag);
    expect(rank, "receive with tag -7", world.receive_into(&mut [0u8], 0, -7), ErrorClass::Tag);
    expect(rank, "bcast from root = size", world.broadcast_into(&mut [0u8], size), ErrorClass::Root);
    let mut small = [0i32; 1];
    expect(rank, "allreduce into a short buffer", world.all_reduce_into(&[1i32, 2], &mut small, &wanmpi_conformance::sum()), ErrorClass::Count);
    // An operation not defined on the type: bitwise AND on f64.
    expect(rank, "MPI_BAND on doubles", world.all_reduce_into(&[1.0f64], &mut [0.0f64], &Op::Predef(PredefOp::Band)), ErrorClass::Op);
    let c = world.duplicate()?;
    c.set_errhandler(ErrHandler::Return)?;
    let stale = c.clone();
    c.free()?;
    expect(rank, "send on a freed communicator", stale.send(&[1u8], 0, 0), ErrorClass::Comm);
    // The job still works.
    let mut s = [0i32];
    world.all_reduce_into(&[1], &mut s, &wanmpi_conformance::sum())?;
    check!(rank, s[0] == size, "allreduce after errors");
    pass(&world, "errors");
    Ok(())
}
