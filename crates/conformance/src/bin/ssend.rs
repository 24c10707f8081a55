//! A synchronous send does not complete before the receiver matched it
//! (MPI-3.1 §3.4), for eager and rendezvous sizes; a standard send of a
//! small message completes without a receive.

use std::time::{Duration, Instant};
use wanmpi::prelude::*;
use wanmpi_conformance::{check, pass};

fn main() -> wanmpi::Result<()> {
    let u = initialize()?;
    let world = u.world();
    let rank = world.rank();
    for len in [8usize, 200_000] {
        let data = vec![7u8; len];
        if rank == 0 {
            let mut req = world.immediate_synchronous_send(&data, 1, 1)?;
            let until = Instant::now() + Duration::from_millis(300);
            while Instant::now() < until {
                match req.test()? {
                    Ok(_) => wanmpi_conformance::fail(rank, &format!("ssend of {len} bytes completed before the receive was posted")),
                    Err(r) => req = r,
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            world.send(&[1u8], 1, 2)?; // tells rank 1 to post its receive
            req.wait()?;
        } else if rank == 1 {
            let mut go = [0u8];
            world.receive_into(&mut go, 0, 2)?;
            let mut buf = vec![0u8; len];
            let st = world.receive_into(&mut buf, 0, 1)?;
            check!(rank, st.bytes == len && buf == data, "ssend payload of {len} bytes wrong");
        }
        world.barrier()?;
    }
    // A small standard send is buffered eagerly: it completes with no receive.
    if rank == 0 {
        let t = Instant::now();
        world.send(&[42i32], 1, 3)?;
        check!(rank, t.elapsed() < Duration::from_secs(5), "eager standard send blocked");
        world.send(&[0u8], 1, 4)?;
    } else if rank == 1 {
        let mut go = [0u8];
        world.receive_into(&mut go, 0, 4)?; // tag 4 first: tag 3 sits unexpected
        let mut v = [0i32];
        world.receive_into(&mut v, 0, 3)?;
        check!(rank, v[0] == 42, "eager message lost");
    }
    world.barrier()?;
    pass(&world, "ssend");
    Ok(())
}
