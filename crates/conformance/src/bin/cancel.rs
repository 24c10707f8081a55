//! MPI_Cancel of a pending receive: the status says cancelled and a later
//! message goes to the next receive, not the cancelled one.

use wanmpi::prelude::*;
use wanmpi_conformance::{check, pass};

fn main() -> wanmpi::Result<()> {
    let u = initialize()?;
    let world = u.world();
    let rank = world.rank();
    if rank == 1 {
        let mut a = [0i32];
        let st = world.immediate_receive_into(&mut a, 0, 3)?.cancel()?;
        check!(rank, st.cancelled, "pending receive was not cancelled");
        let mut big = vec![0u8; 200_000];
        let st = world.immediate_receive_into(&mut big, 0, 4)?.cancel()?;
        check!(rank, st.cancelled, "pending large receive was not cancelled");
        world.send(&[0u8], 0, 9)?; // now rank 0 may send
        let mut b = [0i32];
        world.receive_into(&mut b, 0, 3)?;
        check!(rank, b[0] == 33, "message after cancel: {}", b[0]);
        let st = world.receive_into(&mut big, 0, 4)?;
        check!(rank, st.bytes == 200_000 && big.iter().all(|&x| x == 4), "large message after cancel wrong");
    } else if rank == 0 {
        let mut go = [0u8];
        world.receive_into(&mut go, 1, 9)?;
        world.send(&[33i32], 1, 3)?;
        world.send(&vec![4u8; 200_000], 1, 4)?;
    }
    world.barrier()?;
    pass(&world, "cancel");
    Ok(())
}
