//! A receive buffer too small gives MPI_ERR_TRUNCATE (with
//! MPI_ERRORS_RETURN) and the connection stays usable, for eager and
//! rendezvous sizes.

use wanmpi::prelude::*;
use wanmpi::{ErrHandler, ErrorClass};
use wanmpi_conformance::{check, pass};

fn main() -> wanmpi::Result<()> {
    let u = initialize()?;
    let world = u.world();
    world.set_errhandler(ErrHandler::Return)?;
    let rank = world.rank();
    for len in [100usize, 100_000] {
        if rank == 0 {
            let data: Vec<i32> = (0..len as i32).collect();
            world.send(&data, 1, 5)?;
            world.send(&[-1i32, -2], 1, 5)?;
        } else if rank == 1 {
            let mut small = vec![0i32; 10];
            match world.receive_into(&mut small, 0, 5) {
                Err(e) => check!(rank, e.class == ErrorClass::Truncate, "wrong error class {:?}", e.class),
                Ok(st) => wanmpi_conformance::fail(rank, &format!("no truncation error: {st:?}")),
            }
            check!(rank, small == (0..10).collect::<Vec<i32>>(), "truncated prefix wrong: {small:?}");
            let mut next = [0i32; 2];
            let st = world.receive_into(&mut next, 0, 5)?;
            check!(rank, next == [-1, -2] && st.bytes == 8, "message after the truncation corrupted");
        }
        world.barrier()?;
    }
    pass(&world, "truncate");
    Ok(())
}
