//! Message order per (source, tag, context) and the non-overtaking rule for
//! wildcard receives (MPI-3.1 §3.5): every rank but 0 sends a run of
//! messages with cycling tags to rank 0 on two communicators; rank 0 takes
//! them with ANY_SOURCE/ANY_TAG and checks that each source's messages come
//! in the order they were sent, and that the contexts stay apart.

use wanmpi::prelude::*;
use wanmpi_conformance::{check, pass};

const N: i32 = 200;

fn main() -> wanmpi::Result<()> {
    let u = initialize()?;
    let world = u.world();
    let dup = world.duplicate()?;
    let (rank, size) = (world.rank(), world.size());
    if rank != 0 {
        for i in 0..N {
            // Alternate communicators and mix small and eager-limit-crossing
            // sizes so that the protocols interleave.
            let len = if i % 17 == 0 { 70_000 } else { 2 + (i as usize % 5) };
            let mut msg = vec![0i32; len];
            msg[0] = rank;
            msg[1] = i;
            let c = if i % 2 == 0 { &world } else { &dup };
            c.send(&msg, 0, i % 5)?;
        }
    } else {
        // Senders' long messages wait for their match, so take whatever
        // either communicator has, as the probes show it.
        let mut next = [vec![0i32; size as usize], vec![1i32; size as usize]];
        let mut buf = vec![0i32; 70_000];
        let mut got = 0;
        let mut spins = 0u64;
        while got < N * (size - 1) {
            for (ci, c) in [&world, &dup].into_iter().enumerate() {
                if c.immediate_probe(ANY_SOURCE, ANY_TAG)?.is_none() {
                    continue;
                }
                let st = c.receive_into(&mut buf, ANY_SOURCE, ANY_TAG)?;
                let (src, i) = (buf[0], buf[1]);
                check!(rank, st.source == src, "status source {} but payload says {}", st.source, src);
                check!(rank, st.tag == i % 5, "message {i} from {src} has tag {} (expected {})", st.tag, i % 5);
                check!(rank, i % 2 == ci as i32, "message {i} arrived on the wrong communicator");
                let want = &mut next[ci][src as usize];
                check!(rank, i == *want, "from rank {src}: got message {i}, expected {} (overtaken)", *want);
                *want += 2;
                got += 1;
            }
            spins += 1;
            check!(rank, spins < 100_000_000, "gave up waiting for messages");
        }
    }
    // Phase two must not mix with phase one's wildcard receives.
    world.barrier()?;
    // Specific tags: messages of one tag keep their order even when other
    // tags are received first.
    if rank == 1 {
        for i in 0..50 {
            world.send(&[i], 0, i % 2)?;
        }
    } else if rank == 0 && size > 1 {
        let mut v = [0i32];
        for want in (1..50).step_by(2) {
            world.receive_into(&mut v, 1, 1)?;
            check!(rank, v[0] == want, "tag 1: got {}, expected {want}", v[0]);
        }
        for want in (0..50).step_by(2) {
            world.receive_into(&mut v, 1, 0)?;
            check!(rank, v[0] == want, "tag 0: got {}, expected {want}", v[0]);
        }
    }
    world.barrier()?;
    pass(&world, "order");
    Ok(())
}
