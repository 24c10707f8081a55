//! Helpers shared by the integration tests: a connected pair of transports
//! in one process, a key/value service for ranks that are processes, and a
//! look at what of ours is in /dev/shm and in memory.

#![allow(dead_code)]

pub mod job;

use std::time::Duration;
use wanmpi_bootstrap::{local_kv_world, BootstrapAddr, Client, KeyValue, Server, ServerConfig};
use wanmpi_transport_shm::{setup, Incoming, ShmOptions, ShmTransport};

pub const SECRET: [u8; 32] = [0x33; 32];

/// Every rank of a job of `n` on this host, set up concurrently as threads
/// would be processes.
pub fn world(n: u32, opts: &ShmOptions) -> Vec<ShmTransport> {
    let local: Vec<u32> = (0..n).collect();
    let hs: Vec<_> = local_kv_world(n)
        .into_iter()
        .map(|mut kv| {
            let (o, l) = (opts.clone(), local.clone());
            std::thread::spawn(move || setup(&mut kv, &l, &o).expect("setup"))
        })
        .collect();
    hs.into_iter().map(|h| h.join().expect("setup thread")).collect()
}

/// Ranks 0 and 1 of a two-rank job.
pub fn pair(opts: &ShmOptions) -> (ShmTransport, ShmTransport) {
    let mut w = world(2, opts);
    let b = w.pop().expect("rank 1");
    (w.pop().expect("rank 0"), b)
}

/// A key/value service for a job of `size` ranks that are processes
/// (`client` connects one), fences bounded by `fence_timeout`.
pub fn kv_service(size: u32, fence_timeout: Duration) -> Server {
    let mut cfg = ServerConfig::new(size, SECRET);
    cfg.fence_timeout = fence_timeout;
    Server::start(&BootstrapAddr::Tcp("127.0.0.1".into(), 0), cfg, Box::new(|_| {})).expect("key/value service")
}

pub fn client(address: &str, rank: u32, size: u32) -> Client {
    let c = Client::connect_to(address, rank, size, &SECRET, Duration::from_secs(10)).expect("key/value client");
    assert_eq!(c.rank(), rank);
    c
}

/// Names in /dev/shm that look like wanmpi's and carry `pid` (the job keys
/// of the transport before issue 23 began with mpirun's pid, or with the
/// test process's): there should be none, ever. Only those of one process,
/// so that other jobs on the host (an older build's) cannot fail a test.
pub fn shm_names_of(pid: u32) -> Vec<String> {
    let (pid, test_key) = (pid.to_string(), format!("t{pid}"));
    std::fs::read_dir("/dev/shm")
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().into_string().ok())
                .filter(|n| n.contains("wanmpi") && n.split(['-', '.']).any(|w| w == pid || w == test_key))
                .collect()
        })
        .unwrap_or_default()
}

/// `shm_names_of` this test process.
pub fn shm_names() -> Vec<String> {
    shm_names_of(std::process::id())
}

/// Bytes of memory held by the inbound memfds open in this process (all
/// ranks of a job of threads): what the rings really cost.
pub fn memfd_bytes() -> u64 {
    use std::os::unix::fs::MetadataExt;
    let mut total = 0;
    for e in std::fs::read_dir("/proc/self/fd").expect("/proc/self/fd").flatten() {
        let is_ours = std::fs::read_link(e.path()).is_ok_and(|l| l.to_string_lossy().starts_with("/memfd:wanmpi-shm"));
        if is_ours {
            total += std::fs::metadata(e.path()).map_or(0, |m| m.blocks() * 512);
        }
    }
    total
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
