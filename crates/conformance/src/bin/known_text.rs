//! Known plaintext on the wire: rank 0 sends every other rank a text given
//! on the command line, repeated into a short (eager) and a long
//! (rendezvous or windowed) message; each rank checks both and sends them
//! back, and rank 0 checks the echoes. A packet capture taken meanwhile
//! shows whether the text crossed the network readable
//! (crates/launcher/tests/capture.rs).
//!
//! Usage: known_text TEXT

use wanmpi::prelude::*;
use wanmpi_conformance::{check, pass};

const SIZES: [usize; 2] = [100, 200_000];

fn repeated(text: &[u8], len: usize) -> Vec<u8> {
    text.iter().copied().cycle().take(len).collect()
}

fn main() -> wanmpi::Result<()> {
    let text = std::env::args().nth(1).unwrap_or_else(|| "wanmpi known plaintext".into());
    let u = initialize()?;
    let world = u.world();
    let (rank, size) = (world.rank(), world.size());
    for (tag, len) in SIZES.into_iter().enumerate() {
        let want = repeated(text.as_bytes(), len);
        let mut buf = vec![0u8; len];
        if rank == 0 {
            for r in 1..size {
                world.send(&want[..], r, tag as i32)?;
            }
            for r in 1..size {
                let st = world.receive_into(&mut buf[..], r, tag as i32)?;
                check!(rank, st.bytes == len && buf == want, "echo of {len} bytes from rank {r} differs");
            }
        } else {
            let st = world.receive_into(&mut buf[..], 0, tag as i32)?;
            check!(rank, st.bytes == len && buf == want, "{len} bytes from rank 0 differ");
            world.send(&buf[..], 0, tag as i32)?;
        }
    }
    world.barrier()?;
    pass(&world, "known_text");
    Ok(())
}
