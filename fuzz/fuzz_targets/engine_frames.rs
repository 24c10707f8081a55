//! A hostile peer: any sequence of frames from rank 1 fed to rank 0's
//! engine, which has receives posted, never panics and never writes outside
//! a receive buffer (buffers are exact-size Vecs checked by ASan).
#![no_main]
use libfuzzer_sys::fuzz_target;
use wanmpi_engine::request::RecvBuf;
use wanmpi_engine::{Engine, EngineConfig};
use wanmpi_transport::Caps;

fuzz_target!(|data: &[u8]| {
    let caps = Caps { name: "fuzz", channels: 4, max_frame: 4096, eager_limit_hint: 1024, reliable: true };
    let mut e = Engine::new(0, 2, caps, EngineConfig { eager_limit: 1024, recv_credits: true, ..EngineConfig::default() });
    let mut bufs: Vec<Vec<u8>> = vec![vec![0; 10], vec![0; 5000], vec![0; 0]];
    for (i, b) in bufs.iter_mut().enumerate() {
        let rb = RecvBuf { ptr: b.as_mut_ptr(), cap: b.len() };
        let tag = if i == 0 { None } else { Some(i as i32) };
        // SAFETY: the buffers outlive the engine's use of them below.
        let _ = unsafe { e.irecv(Some(1), 0, tag, rb) };
    }
    // Frames are length-prefixed by one byte in the fuzz input.
    let mut rest = data;
    while let Some((&n, tail)) = rest.split_first() {
        let n = (n as usize).min(tail.len());
        e.handle_frame(1, &tail[..n]);
        rest = &tail[n..];
    }
    let _ = e.transmit(&mut |_, _, _| Ok(wanmpi_transport::SendStatus::Sent));
    drop(e);
    drop(bufs);
});
