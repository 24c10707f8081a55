//! Nonblocking collectives through the Rust API: several outstanding on
//! one communicator, completed in a different order on odd and even
//! ranks, with point-to-point traffic between start and completion; the
//! results equal the blocking calls', and a nonblocking sum of doubles has
//! the blocking one's bits (one combining order, whatever the sites).

use wanmpi::prelude::*;
use wanmpi_conformance::{check, pass};

fn main() -> wanmpi::Result<()> {
    let u = initialize()?;
    let world = u.world();
    let (rank, size) = (world.rank(), world.size());
    let n = size as usize;
    let sum = Op::Predef(PredefOp::Sum);

    let mine: Vec<i64> = (0..4).map(|j| (rank as i64 + 1) * 100 + j).collect();
    let mut reduced = vec![0i64; 4];
    let mut at_root = vec![0i64; 4];
    let mut gathered = vec![0i64; 4 * n];
    let outgoing: Vec<i32> = (0..size).map(|j| rank * 1000 + j).collect();
    let mut incoming = vec![0i32; n];
    let mut bcast: Vec<u8> = if rank == 0 { b"wide area".to_vec() } else { vec![0; 9] };
    {
        let mut reqs = vec![
            world.immediate_all_reduce_into(&mine, &mut reduced, &sum)?,
            world.immediate_reduce_into(&mine, &mut at_root, &sum, size - 1)?,
            world.immediate_all_gather_into(&mine, &mut gathered)?,
            world.immediate_all_to_all_into(&outgoing, &mut incoming)?,
            world.immediate_broadcast_into(&mut bcast, 0)?,
            world.immediate_barrier()?,
        ];
        // Point-to-point traffic while they run.
        let (right, left) = ((rank + 1) % size, (rank + size - 1) % size);
        let mut token = [0i32];
        let r = world.immediate_receive_into(&mut token, left, 7)?;
        world.send(&[rank], right, 7)?;
        r.wait()?;
        check!(rank, token[0] == left, "ring token {token:?}");
        if rank % 2 == 1 {
            reqs.reverse();
        }
        for r in reqs {
            r.wait()?;
        }
    }
    let want: Vec<i64> = (0..4).map(|j| (0..size as i64).map(|r| (r + 1) * 100 + j).sum()).collect();
    check!(rank, reduced == want, "iallreduce {reduced:?} != {want:?}");
    if rank == size - 1 {
        check!(rank, at_root == want, "ireduce {at_root:?}");
    }
    let all: Vec<i64> = (0..size as i64).flat_map(|r| (0..4).map(move |j| (r + 1) * 100 + j)).collect();
    check!(rank, gathered == all, "iallgather {gathered:?}");
    check!(rank, incoming == (0..size).map(|j| j * 1000 + rank).collect::<Vec<_>>(), "ialltoall {incoming:?}");
    check!(rank, bcast == b"wide area", "ibcast {bcast:?}");

    // Doubles whose sum depends on the order of adding.
    let x: Vec<f64> = (0..8)
        .map(|j| {
            let k = rank + j;
            let sign = if k % 2 == 0 { 1.0 } else { -1.0 };
            sign * 10f64.powi((k % 4) * 5) + 0.37 * rank as f64 + 0.011 * j as f64
        })
        .collect();
    let (mut blocking, mut nonblocking) = (vec![0f64; 8], vec![0f64; 8]);
    world.all_reduce_into(&x, &mut blocking, &sum)?;
    world.immediate_all_reduce_into(&x, &mut nonblocking, &sum)?.wait()?;
    let bits = |v: &[f64]| v.iter().map(|d| d.to_bits()).collect::<Vec<_>>();
    check!(rank, bits(&blocking) == bits(&nonblocking), "iallreduce of doubles {nonblocking:?} != allreduce's {blocking:?}");
    pass(&world, "nbcoll");
    Ok(())
}
