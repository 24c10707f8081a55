//! Eager/rendezvous boundary sizes (limit - 1, limit, limit + 1, 0 bytes,
//! 64 MiB) deliver exact bytes with the receive posted before and after the
//! send. The eager limit comes from WANMPI_EAGER_LIMIT (default 64 KiB).

use wanmpi::prelude::*;
use wanmpi_conformance::{check, pass, pattern};

fn main() -> wanmpi::Result<()> {
    let u = initialize()?;
    let world = u.world();
    let rank = world.rank();
    let limit: usize = std::env::var("WANMPI_EAGER_LIMIT").ok().and_then(|v| v.parse().ok()).unwrap_or(65_536);
    let big: usize = std::env::var("CONFORMANCE_BIG").ok().and_then(|v| v.parse().ok()).unwrap_or(64 << 20);
    let sizes = [0, 1, limit - 1, limit, limit + 1, 3 * limit + 7, big];
    if rank < 2 {
        let peer = 1 - rank;
        for (i, &len) in sizes.iter().enumerate() {
            let data = pattern(i as u32, len);
            let mut buf = vec![0u8; len];
            for post_first in [true, false] {
                let tag = 2 * i as i32 + post_first as i32;
                if rank == 0 {
                    // A standard send of a long message may wait for its
                    // match, so the send-first case must not block before
                    // the pair barrier.
                    if post_first {
                        world.barrier_pair(peer)?;
                        world.send(&data, peer, tag)?;
                    } else {
                        let s = world.immediate_send(&data, peer, tag)?;
                        world.barrier_pair(peer)?;
                        s.wait()?;
                    }
                } else {
                    let st = if post_first {
                        let r = world.immediate_receive_into(&mut buf, peer, tag)?;
                        world.barrier_pair(peer)?;
                        r.wait()?
                    } else {
                        world.barrier_pair(peer)?;
                        world.receive_into(&mut buf, peer, tag)?
                    };
                    check!(rank, st.bytes == len, "{len} bytes sent, status says {}", st.bytes);
                    check!(rank, buf == data, "{len}-byte message corrupted (receive posted first: {post_first})");
                }
            }
        }
    }
    world.barrier()?;
    pass(&world, "sizes");
    Ok(())
}

/// A two-rank rendezvous on tag 999 (both ranks call it).
trait PairBarrier {
    fn barrier_pair(&self, peer: i32) -> wanmpi::Result<()>;
}

impl PairBarrier for Communicator {
    fn barrier_pair(&self, peer: i32) -> wanmpi::Result<()> {
        let mut x = [0u8];
        self.send_receive_into(&[1u8], peer, 999, &mut x, peer, 999).map(|_| ())
    }
}
