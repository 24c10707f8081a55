//! Joining the ranks of one host: doorbells, segments, attachment, unlink.
//!
//! 1. Create our doorbell FIFO (`wanmpi-shm-<key>-<rank>.bell`).
//! 2. For each local peer `p`: create or open the segments `<rank>-<p>` and
//!    `<p>-<rank>`, open p's doorbell, then store our pid in both (our pid in
//!    a segment says "mapped, and p's doorbell is open").
//! 3. For each peer: wait for its pids, then unlink both segments; once every
//!    peer has attached, unlink our doorbell (all writers have it open).
//!
//! No step waits on something the peer does after its own waits, so ranks
//! may start in any order; every wait shares one deadline and a timeout
//! names the peer and the step it did not reach.

use crate::options::ShmOptions;
use crate::segment::Segment;
use crate::transport::{Link, ShmTransport};
use crate::wake::{Bell, Doorbell};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use wanmpi_transport::TransportError;

/// Connects `rank` to the other ranks of `local` (the world ranks on this
/// host, `rank` included) through shared memory, waiting at most `timeout`
/// for all of them.
///
/// `job_key` must be unique to the job and made of `[A-Za-z0-9_-]` (it names
/// files). Ranks outside `local` are not served: `try_send` to them is
/// `Err(NoSuchPeer)`.
pub fn setup(job_key: &str, rank: u32, size: u32, local: &[u32], opts: &ShmOptions, timeout: Duration) -> Result<ShmTransport, TransportError> {
    opts.validate()?;
    if job_key.is_empty() || job_key.len() > 64 || !job_key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-') {
        return Err(TransportError::Setup(format!("shm: job key {job_key:?} must be 1 to 64 characters of [A-Za-z0-9_-]")));
    }
    if rank >= size {
        return Err(TransportError::Setup(format!("shm: rank {rank} out of range for {size} ranks")));
    }
    if let Some(p) = local.iter().find(|&&p| p >= size) {
        return Err(TransportError::Setup(format!("shm: local rank {p} out of range for {size} ranks")));
    }
    let mut peers: Vec<u32> = local.iter().copied().filter(|&p| p != rank).collect();
    peers.sort_unstable();
    peers.dedup();

    let deadline = Instant::now() + timeout;
    let file = |what: String| opts.dir.join(format!("wanmpi-shm-{job_key}-{what}"));
    let mut doorbell = Doorbell::create(&file(format!("{rank}.bell")))?;
    let pid = std::process::id();
    let mut attached = Vec::with_capacity(peers.len());
    for &p in &peers {
        let out = Segment::open(&file(format!("{rank}-{p}")), rank, p, opts.ring_bytes, deadline)?;
        let inn = Segment::open(&file(format!("{p}-{rank}")), p, rank, opts.ring_bytes, deadline)?;
        let bell = Bell::open(&file(format!("{p}.bell")), p, deadline)?;
        out.header().meta.writer_pid.store(pid, Ordering::Release);
        inn.header().meta.reader_pid.store(pid, Ordering::Release);
        attached.push((p, out, inn, bell));
    }
    let mut links = Vec::with_capacity(attached.len());
    for (p, mut out, mut inn, bell) in attached {
        let (o, i) = (&out.header().meta, &inn.header().meta);
        wait_until(
            deadline,
            || format!("rank {p} to attach (is it running on this host?)"),
            || Ok(o.reader_pid.load(Ordering::Acquire) != 0 && i.writer_pid.load(Ordering::Acquire) != 0),
        )?;
        let (a, b) = (o.reader_pid.load(Ordering::Acquire), i.writer_pid.load(Ordering::Acquire));
        if a != b {
            return Err(TransportError::Setup(format!("shm: rank {p} attached from two processes ({a} and {b})")));
        }
        // Both sides have mapped both segments: the names are no longer needed.
        out.unlink();
        inn.unlink();
        links.push(Link::new(p, out, inn, bell, a, opts));
    }
    doorbell.unlink();
    Ok(ShmTransport::new(rank, size, opts.clone(), doorbell, links))
}

/// Polls `cond` until it holds or `deadline` passes. Setup waits on other
/// processes that offer nothing to block on (a file to appear, a field to be
/// set), so it naps with a short backoff; it happens once per job.
pub(crate) fn wait_until(
    deadline: Instant,
    what: impl Fn() -> String,
    mut cond: impl FnMut() -> Result<bool, TransportError>,
) -> Result<(), TransportError> {
    let mut nap = Duration::from_micros(50);
    loop {
        if cond()? {
            return Ok(());
        }
        let now = Instant::now();
        if now >= deadline {
            return Err(TransportError::Setup(format!("shm setup timed out waiting for {}", what())));
        }
        std::thread::sleep(nap.min(deadline - now));
        nap = (nap * 2).min(Duration::from_millis(5));
    }
}
