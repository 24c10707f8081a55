//! waitany / waitsome / testall / waitall over mixed sends and receives of
//! several sizes complete every request exactly once.

use wanmpi::prelude::*;
use wanmpi::request::{some, test_all, wait_all, wait_any};
use wanmpi_conformance::{check, pass, pattern};

fn main() -> wanmpi::Result<()> {
    let u = initialize()?;
    let world = u.world();
    let (rank, size) = (world.rank(), world.size());
    let next = (rank + 1) % size;
    let prev = (rank + size - 1) % size;
    let lens = [0usize, 10, 70_000, 300_000];
    let outs: Vec<Vec<u8>> = lens.iter().enumerate().map(|(i, &l)| pattern((rank * 10) as u32 + i as u32, l)).collect();
    let mut ins: Vec<Vec<u8>> = lens.iter().map(|&l| vec![0u8; l]).collect();
    {
        let mut reqs = vec![];
        for (i, b) in ins.iter_mut().enumerate() {
            reqs.push(world.immediate_receive_into(b, prev, i as i32)?);
        }
        for (i, b) in outs.iter().enumerate() {
            reqs.push(world.immediate_send(b, next, i as i32)?);
        }
        let total = reqs.len();
        let mut done = 0;
        // Alternate waitany and waitsome until all are done.
        while !reqs.is_empty() {
            if done % 2 == 0 {
                if wait_any(&mut reqs)?.is_some() {
                    done += 1;
                }
            } else {
                done += some(&mut reqs, true)?.len();
            }
        }
        check!(rank, done == total, "completed {done} of {total}");
    }
    for (i, b) in ins.iter().enumerate() {
        check!(rank, *b == pattern((prev * 10) as u32 + i as u32, lens[i]), "message {i} from {prev} corrupted");
    }
    // testall: false while a receive is pending, true (all done) after.
    let mut x = [0i32];
    let mut reqs = vec![world.immediate_receive_into(&mut x, prev, 50)?];
    check!(rank, test_all(&mut reqs)?.is_none(), "testall reported a pending receive complete");
    world.barrier()?;
    let s = [rank];
    let sreq = world.immediate_send(&s, next, 50)?;
    wait_all(vec![sreq])?;
    let mut tries = 0;
    while test_all(&mut reqs)?.is_none() {
        tries += 1;
        check!(rank, tries < 1_000_000, "testall never completed");
    }
    drop(reqs);
    check!(rank, x[0] == prev, "testall receive got {}", x[0]);
    world.barrier()?;
    pass(&world, "waitmix");
    Ok(())
}
