//! What a short message costs in software alone: two runtimes over shared
//! memory in one process, driven by one thread, so no cache line crosses
//! cores and nothing waits: rank 0 sends, rank 1 receives (the frame is
//! already in the ring), rank 1 answers, rank 0 receives. The time per
//! round is four calls' work on one core; a ping-pong between two cores
//! adds the cache-line transfers on top. Used to find and cut cycles on
//! the one-host path (docs/benchmarks.md "One host"; the runs it was used
//! in: that page's section 29 at commit 52d70dc).
//!
//! `cargo run --release -p wanmpi-runtime --example one_core_cost [ROUNDS] [BYTES]`

use std::sync::Arc;
use std::time::Instant;

use wanmpi_runtime::{BasicType, Datatype, Runtime, RuntimeOptions, SendMode, COMM_WORLD};
use wanmpi_transport_shm::ShmOptions;

fn main() {
    let mut args = std::env::args().skip(1);
    let rounds: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(2_000_000);
    let bytes: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(1);
    let opts = ShmOptions::from_env().expect("shm options");
    // Bring-up is collective (a barrier): one thread per rank.
    let rts: Vec<Arc<Runtime>> = std::thread::scope(|s| {
        let hs: Vec<_> = wanmpi_bootstrap::local_kv_world(2)
            .into_iter()
            .map(|mut kv| {
                let opts = opts.clone();
                s.spawn(move || {
                    let t = wanmpi_transport_shm::setup(&mut kv, &[0, 1], &opts).expect("shm setup");
                    Runtime::over(Box::new(t), RuntimeOptions::default()).expect("runtime")
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().expect("rank thread")).collect()
    });
    let dt = Datatype::basic(BasicType::Byte);
    let mut a = vec![1u8; bytes.max(1)];
    let mut b = vec![0u8; bytes.max(1)];
    let round = |a: &mut [u8], b: &mut [u8]| {
        // SAFETY: both buffers outlive each blocking call.
        unsafe {
            rts[0].send(a.as_ptr(), bytes, &dt, 1, 7, COMM_WORLD, SendMode::Standard).expect("send 0->1");
            rts[1].recv(b.as_mut_ptr(), bytes, &dt, 0, 7, COMM_WORLD).expect("recv at 1");
            rts[1].send(b.as_ptr(), bytes, &dt, 0, 7, COMM_WORLD, SendMode::Standard).expect("send 1->0");
            rts[0].recv(a.as_mut_ptr(), bytes, &dt, 1, 7, COMM_WORLD).expect("recv at 0");
        }
    };
    for _ in 0..rounds / 10 {
        round(&mut a, &mut b);
    }
    let t0 = Instant::now();
    for _ in 0..rounds {
        round(&mut a, &mut b);
    }
    let ns = t0.elapsed().as_nanos() as f64 / rounds as f64;
    println!("{bytes} B: {ns:.1} ns per round (2 sends + 2 receives), {:.1} ns per send+receive", ns / 2.0);
    // Finalize is collective too.
    std::thread::scope(|s| {
        for rt in &rts {
            s.spawn(move || rt.finalize().expect("finalize"));
        }
    });
}
