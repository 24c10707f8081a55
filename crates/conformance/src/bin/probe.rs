//! probe / iprobe / mprobe / improbe report source, tag and size, and a
//! matched probe takes the message out of matching (MPI-3.1 §3.8).

use wanmpi::prelude::*;
use wanmpi_conformance::{check, pass};

fn main() -> wanmpi::Result<()> {
    let u = initialize()?;
    let world = u.world();
    let (rank, size) = (world.rank(), world.size());
    check!(rank, world.immediate_probe(ANY_SOURCE, ANY_TAG)?.is_none(), "iprobe saw a message before any was sent");
    world.barrier()?;
    if rank != 0 {
        world.send(&vec![rank as u16; rank as usize * 3], 0, 10 + rank)?;
    } else {
        for _ in 1..size {
            let st = world.probe(ANY_SOURCE, ANY_TAG)?;
            check!(rank, st.tag == 10 + st.source, "probe tag {} from {}", st.tag, st.source);
            check!(rank, st.count::<u16>() == Some(st.source as usize * 3), "probe count {:?}", st.count::<u16>());
            let m = world.matched_probe(st.source, st.tag)?;
            check!(rank, world.immediate_probe(st.source, st.tag)?.is_none(), "message still visible after mprobe");
            let mut buf = vec![0u16; st.source as usize * 3];
            let got = world.matched_receive_into(m, &mut buf)?;
            check!(rank, got.source == st.source && buf.iter().all(|&x| x == st.source as u16), "mrecv payload wrong");
        }
    }
    world.barrier()?;
    if rank == 1 {
        world.send(&[5i64], 0, 77)?;
    }
    if rank == 0 && size > 1 {
        let m = loop {
            if let Some(m) = world.immediate_matched_probe(1, 77)? {
                break m;
            }
        };
        check!(rank, m.status.bytes == 8, "improbe size {}", m.status.bytes);
        let (v, _) = (world.matched_receive_into(m, &mut [0i64; 1]), ());
        v?;
    }
    world.barrier()?;
    pass(&world, "probe");
    Ok(())
}
