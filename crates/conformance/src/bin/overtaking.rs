//! The relaxed mode (`mpi_assert_allow_overtaking=true`, MPI-4 §7.4.4): all
//! messages still arrive exactly once and per-tag order holds, on a
//! communicator duplicated with the info key and on one set later.

use wanmpi::prelude::*;
use wanmpi::{Info, ALLOW_OVERTAKING};
use wanmpi_conformance::{check, pass};

fn main() -> wanmpi::Result<()> {
    let u = initialize()?;
    let world = u.world();
    let mut info = Info::default();
    info.set(ALLOW_OVERTAKING, "true")?;
    let relaxed = world.duplicate_with_info(&info)?;
    check!(world.rank(), relaxed.info()?.get(ALLOW_OVERTAKING) == Some("true"), "info key not kept");
    let later = world.duplicate()?;
    later.set_info(&info)?;
    let (rank, size) = (world.rank(), world.size());
    for c in [&relaxed, &later] {
        if rank != 0 {
            for i in 0..300 {
                c.send(&[rank, i], 0, i % 10)?;
            }
        } else {
            let mut next = vec![vec![0i32; 10]; size as usize];
            let mut count = 0;
            let mut v = [0i32; 2];
            while count < 300 * (size - 1) {
                let st = c.receive_into(&mut v, ANY_SOURCE, ANY_TAG)?;
                let (src, i) = (v[0], v[1]);
                let slot = &mut next[src as usize][st.tag as usize];
                check!(rank, i % 10 == st.tag && i / 10 == *slot, "from {src} tag {}: got {i} out of per-tag order", st.tag);
                *slot += 1;
                count += 1;
            }
        }
        c.barrier()?;
    }
    pass(&world, "overtaking");
    Ok(())
}
