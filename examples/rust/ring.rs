//! A token travels the ring `laps` times; each rank adds one per visit.

use wanmpi::prelude::*;

fn main() -> wanmpi::Result<()> {
    let laps: i32 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(3);
    let universe = initialize()?;
    let world = universe.world();
    let (rank, size) = (world.rank(), world.size());
    let next = (rank + 1) % size;
    let prev = (rank + size - 1) % size;
    let mut token = [0i64];
    for lap in 0..laps {
        if rank == 0 {
            world.send(&token, next, lap)?;
            world.receive_into(&mut token, prev, lap)?;
            token[0] += 1;
        } else {
            world.receive_into(&mut token, prev, lap)?;
            token[0] += 1;
            world.send(&token, next, lap)?;
        }
    }
    if rank == 0 {
        println!("ring of {size}: token = {} after {laps} laps (expected {})", token[0], laps as i64 * size as i64);
    }
    Ok(())
}
