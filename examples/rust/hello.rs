//! Every rank says hello, passes a token around, and they sum their ranks:
//! the demo that shows point-to-point and a collective working.

use wanmpi::prelude::*;

fn main() -> wanmpi::Result<()> {
    let universe = initialize()?;
    let world = universe.world();
    let (rank, size) = (world.rank(), world.size());
    let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "localhost".into());
    println!("hello from rank {rank} of {size} on {host}");

    // Rank 0 greets everyone; each answers with its rank squared.
    if rank == 0 {
        for r in 1..size {
            world.send(&[r * 100], r, 1)?;
        }
        let mut answers = vec![];
        for _ in 1..size {
            let mut a = [0i32; 1];
            let st = world.receive_into(&mut a, ANY_SOURCE, 2)?;
            answers.push((st.source, a[0]));
        }
        answers.sort();
        println!("rank 0 received answers {answers:?}");
    } else {
        let mut q = [0i32; 1];
        world.receive_into(&mut q, 0, 1)?;
        world.send(&[q[0] / 100 * rank], 0, 2)?;
    }

    let mut total = [0i64];
    world.all_reduce_into(&[rank as i64], &mut total, &Op::Predef(PredefOp::Sum))?;
    if rank == 0 {
        println!("allreduce: sum of ranks = {} (expected {})", total[0], (size as i64) * (size as i64 - 1) / 2);
    }
    world.barrier()?;
    Ok(())
}
