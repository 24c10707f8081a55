//! Simultaneous long messages both ways on the same tag (the first paper's
//! long-message race, §3.2): both complete with the right bytes, repeatedly,
//! with the receive posted before or after the send.

use wanmpi::prelude::*;
use wanmpi_conformance::{check, pass, pattern};

fn main() -> wanmpi::Result<()> {
    let u = initialize()?;
    let world = u.world();
    let rank = world.rank();
    if rank < 2 {
        let peer = 1 - rank;
        for round in 0..20u32 {
            let len = 100_000 + round as usize * 50_000;
            let out = pattern(rank as u32 * 1000 + round, len);
            let mut inb = vec![0u8; len];
            if round % 2 == 0 {
                let r = world.immediate_receive_into(&mut inb, peer, 0)?;
                let s = world.immediate_send(&out, peer, 0)?;
                s.wait()?;
                r.wait()?;
            } else {
                let s = world.immediate_send(&out, peer, 0)?;
                let r = world.immediate_receive_into(&mut inb, peer, 0)?;
                r.wait()?;
                s.wait()?;
            }
            check!(rank, inb == pattern(peer as u32 * 1000 + round, len), "round {round}: long message corrupted");
        }
    }
    world.barrier()?;
    pass(&world, "race");
    Ok(())
}
