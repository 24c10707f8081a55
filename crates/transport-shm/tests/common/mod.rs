//! Helpers shared by the integration tests: unique job keys, a connected
//! pair of transports in one process, and a look at /dev/shm.

#![allow(dead_code)]

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;
use wanmpi_transport_shm::{setup, Incoming, ShmOptions, ShmTransport};

/// A job key no other test (or test run) uses.
pub fn job_key(name: &str) -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    format!("t{}-{}-{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed), name)
}

/// Ranks 0 and 1 of a two-rank job, set up concurrently as two processes would.
pub fn pair(key: &str, opts: &ShmOptions) -> (ShmTransport, ShmTransport) {
    let (k, o) = (key.to_string(), opts.clone());
    let h = std::thread::spawn(move || setup(&k, 1, 2, &[0, 1], &o, Duration::from_secs(10)).expect("rank 1 setup"));
    let a = setup(key, 0, 2, &[0, 1], opts, Duration::from_secs(10)).expect("rank 0 setup");
    (a, h.join().expect("rank 1 thread"))
}

/// Files of job `key` left in the options' directory.
pub fn leftovers(key: &str, opts: &ShmOptions) -> Vec<String> {
    std::fs::read_dir(&opts.dir).expect("read shm dir").filter_map(|e| e.ok()?.file_name().into_string().ok()).filter(|n| n.contains(key)).collect()
}

/// What a test keeps of an event.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    Frame(u32, u16, Vec<u8>),
    Lost(u32, String),
}

pub fn owned(ev: Incoming<'_>) -> Event {
    match ev {
        Incoming::Frame { peer, channel, bytes } => Event::Frame(peer, channel, bytes.to_vec()),
        Incoming::PeerLost { peer, reason } => Event::Lost(peer, reason),
    }
}
