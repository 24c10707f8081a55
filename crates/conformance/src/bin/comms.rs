//! Communicators: split and dup isolate traffic (a message on one never
//! matches a receive on another), create from a group, compare, names,
//! and inter-communicator send/receive and merge (MPI-3.1 chapter 6).

use wanmpi::prelude::*;
use wanmpi::Comparison;
use wanmpi_conformance::{check, pass};

fn main() -> wanmpi::Result<()> {
    let u = initialize()?;
    let world = u.world();
    let (rank, size) = (world.rank(), world.size());

    // dup isolation: the same (source, tag) on two communicators.
    let dup = world.duplicate()?;
    check!(rank, world.compare(&dup)? == Comparison::Congruent, "dup not congruent");
    check!(rank, world.compare(&world)? == Comparison::Ident, "world not ident to itself");
    if size > 1 {
        if rank == 0 {
            world.send(&[1i32], 1, 7)?;
            dup.send(&[2i32], 1, 7)?;
        } else if rank == 1 {
            let mut x = [0i32];
            dup.receive_into(&mut x, ANY_SOURCE, ANY_TAG)?;
            check!(rank, x[0] == 2, "dup received the world's message");
            world.receive_into(&mut x, 0, 7)?;
            check!(rank, x[0] == 1, "world received the dup's message");
        }
    }
    dup.set_name("my dup")?;
    check!(rank, dup.name()? == "my dup", "comm name not kept");
    check!(rank, world.name()? == "MPI_COMM_WORLD", "world name {:?}", world.name()?);

    // split: evens and odds, ordered by descending key.
    let half = world.split(rank % 2, -rank)?.expect("every rank has a color");
    let members = (size + 1 - rank % 2) / 2;
    check!(rank, half.size() == members, "split size {} != {members}", half.size());
    check!(rank, half.rank() == members - 1 - rank / 2, "split rank {} for world rank {rank}", half.rank());
    let mut sum = [0i32];
    half.all_reduce_into(&[rank], &mut sum, &wanmpi_conformance::sum())?;
    let want: i32 = (0..size).filter(|r| r % 2 == rank % 2).sum();
    check!(rank, sum[0] == want, "split allreduce {} != {want}", sum[0]);
    let none = world.split(if rank == 0 { wanmpi::UNDEFINED } else { 0 }, 0)?;
    check!(rank, none.is_none() == (rank == 0), "MPI_UNDEFINED color");

    // create from a group of the first half.
    let g = world.group()?.incl(&(0..(size + 1) / 2).collect::<Vec<_>>())?;
    let first = world.create(&g)?;
    check!(rank, first.is_some() == (rank < (size + 1) / 2), "comm_create membership");
    if let Some(c) = &first {
        c.barrier()?;
        check!(rank, c.rank() == rank, "comm_create rank");
        c.clone().free()?;
    }

    // inter-communicator between evens and odds, leaders world 0 and 1.
    if size >= 2 {
        // Each half's leader (its rank 0) is its highest world rank (the
        // split ordered by descending key); the remote leader is named by
        // its rank in the peer communicator, the world.
        let top = |parity: i32| (0..size).filter(|r| r % 2 == parity).max().unwrap_or(0);
        let inter = half.intercomm_create(0, &world, top(1 - rank % 2), 99)?;
        check!(rank, inter.is_inter()?, "intercomm not inter");
        let remote = inter.remote_size()?;
        check!(rank, remote == size - members, "remote size {remote}");
        // Rank i of each side sends to rank i of the other, where it exists.
        let me = inter.rank();
        if me < remote {
            let mut x = [0i32];
            let r = inter.immediate_receive_into(&mut x, me, 5)?;
            inter.send(&[rank], me, 5)?;
            let st = r.wait()?;
            check!(rank, st.source == me && x[0] % 2 != rank % 2, "intercomm message from {} says {}", st.source, x[0]);
        }
        let merged = inter.merge(rank % 2 == 1)?;
        check!(rank, merged.size() == size, "merged size");
        let evens = (size + 1) / 2;
        let odds = size - evens;
        // Evens (high = false) come first, each half in its own order.
        let want = if rank % 2 == 0 { evens - 1 - rank / 2 } else { evens + odds - 1 - rank / 2 };
        check!(rank, merged.rank() == want, "merged rank {} != {want}", merged.rank());
        merged.barrier()?;
    }
    dup.free()?;
    world.barrier()?;
    pass(&world, "comms");
    Ok(())
}
