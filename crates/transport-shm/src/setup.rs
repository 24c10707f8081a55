//! Joining the ranks of one host, with nothing named anywhere:
//!
//! 1. Make our inbound memory (`inbound.rs`: one memfd, a slot per local
//!    sender, headers filled with a fresh random token) and our doorbell
//!    (`wake.rs`: a pipe).
//! 2. Publish pid, fd numbers, pipe inode and token (`endpoint.rs`) through
//!    the job's key/value service, and wait at its fence: ranks may start in
//!    any order, the wait is the service's (bounded; its timeout names the
//!    ranks that did not come).
//! 3. For each local peer: watch its process (a pidfd), open its memfd and
//!    doorbell by `/proc/<pid>/fd/<n>` (`proc_fd.rs`: our user only), check
//!    what was opened (owner, kind, size, seals, pipe inode, the token and
//!    ranks in our slot's header), and map our slot of its memory only.
//!
//! Every rank keeps its own fds open for the life of the job (they are
//! close-on-exec), so a peer that opens them late still finds them; nothing
//! is ever unlinked because nothing was ever linked: a killed job leaves
//! nothing behind. The fds a peer opened are closed once mapped, but for
//! the doorbells.

use crate::endpoint::{self, Endpoint};
use crate::inbound::{self, Inbound};
use crate::liveness::Watch;
use crate::options::ShmOptions;
use crate::slot::Layout;
use crate::transport::{Link, ShmTransport};
use crate::wake::{Bell, Doorbell};
use wanmpi_bootstrap::KeyValue;
use wanmpi_transport::TransportError;

fn boot(step: &str, e: impl std::fmt::Display) -> TransportError {
    TransportError::Setup(format!("shm setup, {step}: {e}"))
}

/// Connects the rank of `kv` to the other ranks of `local` (the world ranks
/// on this host) through shared memory. Every rank of `local` calls it with
/// the same list; a rank of the job with no local peer calls
/// [`setup_elsewhere`] instead when some host uses shared memory, since
/// both take part in one fence of the whole job. Ranks outside `local` are
/// not served: `try_send` to them is `Err(NoSuchPeer)`.
pub fn setup(kv: &mut dyn KeyValue, local: &[u32], opts: &ShmOptions) -> Result<ShmTransport, TransportError> {
    opts.validate()?;
    let (rank, size) = (kv.rank(), kv.size());
    if rank >= size {
        return Err(TransportError::Setup(format!("shm: rank {rank} out of range for {size} ranks")));
    }
    if let Some(p) = local.iter().find(|&&p| p >= size) {
        return Err(TransportError::Setup(format!("shm: local rank {p} out of range for {size} ranks")));
    }
    let mut hosts: Vec<u32> = local.iter().copied().chain([rank]).collect();
    hosts.sort_unstable();
    hosts.dedup();
    let layout = Layout { ranks: hosts.len(), ring: opts.ring_for(hosts.len()) };
    let max_frame = opts.max_frame_for(hosts.len());
    let doorbell = Doorbell::create()?;
    if hosts.len() == 1 {
        // Nobody to meet: sends to ourselves need no shared memory or fence.
        return Ok(ShmTransport::new(rank, size, opts.clone(), max_frame, doorbell, None, vec![]));
    }
    let token = crate::proc_fd::random_token().map_err(|e| boot("random token", e))?;
    let inbound = Inbound::create(rank, &hosts, layout.ring, token)?;
    let me = Endpoint { pid: std::process::id(), mem_fd: inbound.fd(), bell_fd: doorbell.fd(), bell_ino: doorbell.ino()?, token };
    kv.put(&endpoint::key(rank), &me.to_string()).map_err(|e| boot("publishing our endpoint", e))?;
    kv.fence().map_err(|e| boot("waiting for the ranks of the job to publish theirs", e))?;
    let peers: Vec<(usize, u32)> = hosts.iter().copied().enumerate().filter(|&(_, p)| p != rank).collect();
    let keys: Vec<String> = peers.iter().map(|&(_, p)| endpoint::key(p)).collect();
    let values = kv.get_many(&keys).map_err(|e| boot("reading the local ranks' endpoints", e))?;
    let my_slot = hosts.iter().position(|&p| p == rank).expect("rank is in hosts");
    let mut links = Vec::with_capacity(peers.len());
    for (&(i, p), v) in peers.iter().zip(&values) {
        let ep = Endpoint::parse(v).ok_or_else(|| TransportError::Setup(format!("shm setup: rank {p} published a bad endpoint {v:?}")))?;
        let refuse = |what: &str, why: String| TransportError::Setup(format!("shm setup: refusing the {what} of rank {p} (pid {}): {why}", ep.pid));
        // Watch first: the fds opened next then belong to the process watched.
        let watch = Watch::new(ep.pid);
        let file = crate::proc_fd::open(ep.pid, ep.mem_fd).map_err(|e| refuse("shared memory", e))?;
        let out = inbound::attach(&file, layout, my_slot).map_err(|e| refuse("shared memory", e))?;
        if let Some(why) = out.mismatch(rank, p, layout.ring, ep.token) {
            return Err(refuse("shared memory", why));
        }
        drop(file);
        let bell = Bell::open(ep.pid, ep.bell_fd, ep.bell_ino).map_err(|e| refuse("doorbell", e))?;
        if watch.exited() {
            return Err(refuse("shared memory", "the process exited during set-up".into()));
        }
        links.push(Link::new(p, out, inbound.slot(i), bell, watch, max_frame, opts));
    }
    Ok(ShmTransport::new(rank, size, opts.clone(), max_frame, doorbell, Some(inbound), links))
}

/// The part of shared-memory setup for a rank with no other rank on its
/// host, in a job where some host has several: the one fence of the job
/// that `setup` waits at.
pub fn setup_elsewhere(kv: &mut dyn KeyValue) -> Result<(), TransportError> {
    kv.fence().map_err(|e| boot("waiting for the ranks of the job to publish their endpoints", e))
}
