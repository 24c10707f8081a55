//! The contract between the engine and a transport (tcp, sctp, wamp, ...).
//!
//! A transport moves whole frames between the ranks of one job. It offers each
//! peer `Caps::channels` ordered channels: frames on one channel arrive in the
//! order they were sent, frames on different channels are independent (TCP has
//! one channel per peer, SCTP one per stream). The engine chooses the channel;
//! the transport never looks inside a frame.
//!
//! Backpressure is part of the contract: `try_send` is all-or-nothing and
//! returns `SendStatus::WouldBlock` when the frame cannot be taken now; the
//! engine keeps it queued and tries again on a later progress call. Nothing
//! here spins or sleeps except `wait`, which the caller bounds.
//!
//! What this crate is not: it knows nothing of MPI matching, tags or requests.

mod caps;
mod loopback;
pub mod outage;
pub mod path_mtu;
mod tally;

pub use caps::Caps;
pub use loopback::{loopback_pair, loopback_world, Loopback};
pub use tally::{Tally, TallySink};

use std::time::Duration;
use thiserror::Error;

/// A process of the job, by its rank in MPI_COMM_WORLD.
pub type PeerId = u32;

/// What a transport measured of its path to one peer, for choosing between
/// transports (the adaptive transport) and for stats.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PathStats {
    /// Smoothed round trip.
    pub srtt: Duration,
    /// Smallest round trip seen.
    pub min_rtt: Duration,
    /// Fraction of packets (segments) lost, over what was sent so far or recently.
    pub loss: f64,
    /// Packets (segments) sent so far: how much `loss` rests on.
    pub sent: u64,
    /// Bytes per second last delivered (0 = not known).
    pub delivery_rate: f64,
}

/// Round trip from which a peer counts as far: across a WAN rather than in
/// one machine room. The adaptive transport, wamp's wish for a progress
/// thread and the runtime's WAN window all draw the line here (the grids
/// behind it: docs/benchmarks.md "Ping-pong across the emulator").
pub const FAR_RTT: Duration = Duration::from_millis(2);

impl PathStats {
    /// The round trip to judge the path by: the smallest seen, else the
    /// smoothed one; `None` before the first sample.
    pub fn known_rtt(&self) -> Option<Duration> {
        [self.min_rtt, self.srtt].into_iter().find(|d| !d.is_zero())
    }

    /// Whether the peer is far (`FAR_RTT`); `None` before any sample.
    pub fn is_far(&self) -> Option<bool> {
        self.known_rtt().map(|r| r >= FAR_RTT)
    }
}

/// Outcome of an attempt to send one frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SendStatus {
    /// The whole frame is the transport's now; the caller may reuse the buffers.
    Sent,
    /// Nothing was taken; try again after the next progress call.
    WouldBlock,
}

/// Something the transport has to tell the engine.
#[derive(Debug)]
pub enum Incoming<'a> {
    /// One complete frame from `peer` on `channel`.
    Frame { peer: PeerId, channel: u16, bytes: &'a [u8] },
    /// `peer` is gone (connection closed, association aborted, heartbeats
    /// unanswered). Requests that involve it can never complete.
    PeerLost { peer: PeerId, reason: String },
}

#[derive(Debug, Error)]
pub enum TransportError {
    #[error("peer {0} is not part of this job")]
    NoSuchPeer(PeerId),
    #[error("channel {channel} out of range (transport has {channels})")]
    NoSuchChannel { channel: u16, channels: u16 },
    #[error("frame of {len} bytes exceeds the transport's maximum of {max}")]
    FrameTooLarge { len: usize, max: usize },
    #[error("peer {peer} is unreachable: {reason}")]
    PeerLost { peer: PeerId, reason: String },
    #[error("transport setup failed: {0}")]
    Setup(String),
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
}

/// A transport connecting this process to every rank of the job.
///
/// Call order, for each progress step: `poll_recv` (drain everything that
/// arrived), then `try_send` for queued frames until `WouldBlock`, then
/// `flush`. Block in `wait` only when no request can advance otherwise.
pub trait Transport: Send {
    /// What this transport offers; the engine sizes fragments and picks
    /// channels from it.
    fn caps(&self) -> &Caps;

    /// This process's rank in the job.
    fn rank(&self) -> PeerId;

    /// Number of ranks in the job.
    fn size(&self) -> u32;

    /// Sends one frame made of `parts` concatenated (header, payload), all or
    /// nothing. A frame longer than `caps().max_frame` is an error. Sending to
    /// oneself is allowed and delivers through `poll_recv`.
    fn try_send(&mut self, peer: PeerId, channel: u16, parts: &[&[u8]]) -> Result<SendStatus, TransportError>;

    /// Hands every frame received so far to `sink`, in channel order. Returns
    /// the number of events delivered.
    fn poll_recv(&mut self, sink: &mut dyn FnMut(Incoming<'_>)) -> Result<usize, TransportError>;

    /// A blocking receive's short cut (`wanmpi_runtime`'s express receive):
    /// offers the next frame waiting from `peer`, in place, to `take`, and
    /// consumes it only if `take` returns true. Frames of one peer are
    /// offered in the order `poll_recv` would deliver them. `None`: this
    /// transport cannot offer `peer`'s frames one by one (use `poll_recv`);
    /// `Some(false)`: nothing waiting, or not taken.
    fn take_next_from(&mut self, _peer: PeerId, _take: &mut dyn FnMut(&[u8]) -> bool) -> Option<bool> {
        None
    }

    /// Pushes out anything buffered inside the transport. Returns true while
    /// data is still waiting for the network.
    fn flush(&mut self) -> Result<bool, TransportError>;

    /// Blocks until something may have arrived or may be sendable, or until
    /// `timeout` passes. Spurious returns are allowed.
    fn wait(&mut self, timeout: Duration) -> Result<(), TransportError>;

    /// A file descriptor that becomes readable when `poll_recv` or `flush`
    /// may make progress, for a progress thread that sleeps outside any lock.
    /// `None` when the transport has nothing to poll (then callers poll
    /// periodically).
    fn readiness_fd(&self) -> Option<i32> {
        None
    }

    /// Called just before the caller sleeps on `readiness_fd` (with nothing
    /// else to do): a transport whose wake-ups cost its peers something
    /// (shm's doorbell: a system call per message) asks for them only now.
    /// Returns false when something is already waiting, so the caller must
    /// not sleep. `wait` does this itself.
    fn prepare_sleep(&mut self) -> bool {
        true
    }

    /// Whether this transport reaches `peer` at all (a transport of one
    /// host serves only that host's ranks).
    fn serves(&self, peer: PeerId) -> bool {
        peer < self.size()
    }

    /// The process id of `peer` when it runs on this host and the transport
    /// checked that the pid is that peer's (shm: the process that proved
    /// the job's token). The runtime may then read the peer's memory for
    /// long messages (single copy); `None` everywhere else.
    fn local_process(&self, _peer: PeerId) -> Option<u32> {
        None
    }

    /// What the transport measured of its path to `peer`, if it measures.
    fn path(&self, _peer: PeerId) -> Option<PathStats> {
        None
    }

    /// What this transport counted toward `peer`, reported to `sink` once
    /// per transport that carries frames to it (a composite reports each of
    /// its parts). Read by the tool interface (MPI_T); a transport that
    /// counts nothing reports nothing, and the runtime then counts frames
    /// for it.
    fn tally(&self, _peer: PeerId, _sink: &mut TallySink<'_>) {}

    /// Whether the runtime should run its progress thread unless the user
    /// chose: true for a transport whose protocol (acknowledgements,
    /// resends) runs only when called, towards peers far enough that a
    /// rank computing without MPI calls would stall them.
    fn wants_progress_thread(&self) -> bool {
        false
    }

    /// Takes the ranks `ranks` of `part`, a transport connected among this
    /// process and processes of another job, as new peers numbered from
    /// `size()` on (MPI_Comm_spawn, MPI_Comm_accept/connect). Only a
    /// transport made for it (transport-composite's `Joined`) can.
    fn attach(&mut self, _part: Box<dyn Transport>, _ranks: Vec<PeerId>) -> Result<PeerId, TransportError> {
        Err(TransportError::Setup("this transport cannot take processes of another job".into()))
    }

    /// The job knows `peer`'s process ended (the launcher saw it): nothing
    /// queued for it can arrive, so stop sending to it, and let `shutdown`
    /// not wait for it (under ULFM the survivors finalize without it).
    fn peer_failed(&mut self, _peer: PeerId) {}

    /// Ends every connection gracefully, waiting at most `timeout` for queued
    /// data to leave.
    fn shutdown(&mut self, timeout: Duration) -> Result<(), TransportError>;
}
