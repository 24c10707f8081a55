//! What the runtime's in-process tests share: ranks as threads, each with
//! its own runtime over the loopback transport (`Runtime::over`).

use std::sync::Arc;
use std::thread;

use wanmpi_runtime::{Runtime, RuntimeOptions};
use wanmpi_transport::loopback_world;

/// Runs `f` on `n` ranks, one thread and one runtime each, and finalizes
/// them (which also stops a progress thread a test started).
pub fn world<T: Send>(n: u32, f: impl Fn(&Arc<Runtime>) -> T + Sync) -> Vec<T> {
    let f = &f;
    thread::scope(|s| {
        let hs: Vec<_> = loopback_world(n, 4)
            .into_iter()
            .map(|t| {
                s.spawn(move || {
                    let rt = Runtime::over(Box::new(t), RuntimeOptions::default()).expect("runtime");
                    let out = f(&rt);
                    rt.finalize().expect("finalize");
                    out
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().expect("rank thread")).collect()
    })
}
