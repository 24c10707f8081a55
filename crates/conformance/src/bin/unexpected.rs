//! Unexpected messages (sent before the receive is posted) and expected ones
//! (receive posted first) deliver the same bytes, for eager and rendezvous
//! sizes, including probes that see unexpected messages.

use wanmpi::prelude::*;
use wanmpi_conformance::{check, pass, pattern};

fn main() -> wanmpi::Result<()> {
    let u = initialize()?;
    let world = u.world();
    let (rank, size) = (world.rank(), world.size());
    let peer = if rank % 2 == 0 { rank + 1 } else { rank - 1 };
    // With an odd size the last rank has no partner: it only joins barriers.
    let active = peer < size;
    for (i, len) in [0usize, 100, 65_536, 65_537, 300_000].into_iter().enumerate() {
        let data = pattern(i as u32, len);
        // Unexpected at the peer: send first, the peer posts after the
        // barrier. A long standard send may wait for its match, so it must
        // not block before the barrier.
        let early = if active && rank % 2 == 0 { Some(world.immediate_send(&data, peer, i as i32)?) } else { None };
        world.barrier()?;
        if let Some(s) = early {
            s.wait()?;
        }
        if active && rank % 2 == 1 {
            let st = world.probe(peer, i as i32)?;
            check!(rank, st.bytes == len, "probe of unexpected message: {} bytes, expected {len}", st.bytes);
            let mut buf = vec![0u8; len];
            world.receive_into(&mut buf, peer, i as i32)?;
            check!(rank, buf == data, "unexpected message of {len} bytes corrupted");
        }
        // Expected: the receive is posted before the send.
        let mut buf = vec![0u8; len];
        if active && rank % 2 == 1 {
            let r = world.immediate_receive_into(&mut buf, peer, 100 + i as i32)?;
            world.barrier()?;
            r.wait()?;
            check!(rank, buf == data, "expected message of {len} bytes corrupted");
        } else {
            world.barrier()?;
            if active {
                world.send(&data, peer, 100 + i as i32)?;
            }
        }
    }
    world.barrier()?;
    pass(&world, "unexpected");
    Ok(())
}
