//! Two ranks exchange, stay idle, and exchange again: what a job that
//! computes for minutes between messages does to its network paths (a
//! NAT's UDP mapping expires after 30-120 s of silence unless the
//! transport keeps it alive, and may change meanwhile). Rank 0 sleeps
//! without MPI calls for `--idle SECS` while rank 1 waits for it in a
//! receive; then each sends the other 1 MiB, checked byte by byte, and
//! they agree on a sum. Rank 0 prints "idle: first exchange done" before its idle time and
//! "idle: ok after N s" at the end.

use wanmpi::prelude::*;

fn pattern(seed: u8, n: usize) -> Vec<u8> {
    (0..n).map(|i| (i as u32).wrapping_mul(31).wrapping_add(seed as u32) as u8).collect()
}

fn exchange(world: &Communicator, round: u8) -> wanmpi::Result<()> {
    let (rank, other) = (world.rank(), 1 - world.rank());
    let mine = pattern(round.wrapping_mul(2).wrapping_add(rank as u8), 1 << 20);
    let mut got = vec![0u8; 1 << 20];
    if rank == 0 {
        world.send(&mine, other, round as i32)?;
        world.receive_into(&mut got, other, round as i32)?;
    } else {
        world.receive_into(&mut got, other, round as i32)?;
        world.send(&mine, other, round as i32)?;
    }
    if got != pattern(round.wrapping_mul(2).wrapping_add(other as u8), 1 << 20) {
        eprintln!("idle: rank {rank}: round {round}: the 1 MiB from rank {other} arrived altered");
        std::process::exit(2);
    }
    Ok(())
}

fn main() -> wanmpi::Result<()> {
    let mut idle = 70.0f64;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        if a == "--idle" {
            idle = args.next().and_then(|v| v.parse().ok()).unwrap_or(idle);
        }
    }
    let universe = initialize()?;
    let world = universe.world();
    if world.size() != 2 {
        eprintln!("idle: needs exactly 2 ranks");
        std::process::exit(2);
    }
    exchange(&world, 1)?;
    let start = std::time::Instant::now();
    if world.rank() == 0 {
        // A test may act on this (change the NAT) while the job is idle.
        println!("idle: first exchange done, idle for {idle} s");
        // Computing, as far as the network can tell: no MPI call at all.
        std::thread::sleep(std::time::Duration::from_secs_f64(idle));
    }
    exchange(&world, 2)?;
    let mut total = [0i64];
    world.all_reduce_into(&[world.rank() as i64 + 1], &mut total, &Op::Predef(PredefOp::Sum))?;
    if world.rank() == 0 {
        println!("idle: ok after {:.1} s (allreduce {} expected 3)", start.elapsed().as_secs_f64(), total[0]);
    }
    world.barrier()?;
    Ok(())
}
