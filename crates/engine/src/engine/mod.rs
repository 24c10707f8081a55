//! The engine proper: requests in flight, frames in (`handle_incoming`) and
//! frames out (`transmit`), completion (`test`).
//!
//! Call order for a progress step, quinn-style: feed every incoming frame,
//! then `transmit` until the transport refuses, then test requests.
//! `send.rs` holds the sending side (isend, the per-peer output queues,
//! clear-to-send and acknowledgements), `recv.rs` the receiving side (irecv,
//! arrivals, data placement), `complete.rs` completion, cancel and peer loss.

mod complete;
mod express;
mod express_send;
mod recv;
mod revoke;
mod send;
mod single_copy;
mod stats;
mod tool;
mod window;

use rustc_hash::{FxHashMap as HashMap, FxHashSet};
use std::collections::VecDeque;

use wanmpi_transport::{Caps, PeerId};

use crate::config::EngineConfig;
use crate::matching::Matcher;
use crate::request::{RequestId, Requests};

pub use express::{ExpressRx, Taken};
pub use recv::MatchedMessage;
pub use send::SendMode;
pub use single_copy::{LocalRead, ReadError};
pub use stats::{Arrivals, EngineStats, Sent, WindowUse};

/// A frame waiting to go to one peer.
enum OutItem {
    /// A small control frame, already encoded.
    Control { channel: u16, bytes: Vec<u8> },
    /// The next frame of a send request (first frame, RTS or data).
    Message(RequestId),
}

/// Where the data frames of an incoming message go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    Recv(RequestId),
    /// Buffered in `unexpected_data` until a receive matches.
    Unexpected,
}

/// Data of an eager message that arrived before its receive.
struct Buffered {
    data: Vec<u8>,
    got: usize,
    total: usize,
}

/// A receive credit announced by a peer: it has a receive posted for
/// (ctx, tag) with room for `capacity` bytes.
#[derive(Debug, Clone, Copy)]
struct Credit {
    ctx: u32,
    tag: Option<i32>,
    capacity: u64,
}

pub struct Engine {
    rank: PeerId,
    size: u32,
    caps: Caps,
    cfg: EngineConfig,
    /// Sends up to this many bytes go eagerly: `cfg.eager_limit` unless the
    /// tool interface lowered it (`tool.rs`); receivers keep accepting up
    /// to `cfg.eager_limit`, which every rank started with.
    send_eager: usize,
    reqs: Requests,
    matcher: Matcher,
    /// Output queue per peer.
    out: Vec<VecDeque<OutItem>>,
    /// False only when every queue in `out` is empty: set by every push,
    /// recomputed by `transmit`, so an idle progress step (the spin of a
    /// blocked call) does not scan a queue per peer.
    out_maybe: bool,
    /// Next sequence number per (destination, context).
    next_seq: HashMap<(PeerId, u32), u64>,
    /// Ids of the messages `send_now` and `express_send` sent without a request.
    express_ids: u64,
    /// Incoming messages whose data is still arriving, by (peer, msg id).
    inbound: HashMap<(PeerId, u64), Target>,
    unexpected_data: HashMap<(PeerId, u64), Buffered>,
    /// Receive credits announced by each peer, oldest first.
    credits: Vec<VecDeque<Credit>>,
    /// Largest receive credit this process announced to each peer: an eager
    /// message longer than both this and the eager limit is a protocol
    /// violation (and must not make us allocate its claimed size).
    announced_max: Vec<u64>,
    /// The WAN window, both directions.
    window: window::Windows,
    /// Peers known to be gone, with the reason.
    lost: HashMap<PeerId, String>,
    /// Peers that said goodbye (finalized): their leaving is no failure.
    departed: FxHashSet<PeerId>,
    stats: EngineStats,
    /// Reads other local processes' memory (single copy), if the runtime
    /// gave one.
    local_read: Option<Box<dyn LocalRead>>,
    /// Peers single copy failed with, either way: rendezvous from now on.
    no_single_copy: FxHashSet<PeerId>,
    /// Where the bytes of single-copy messages not yet matched are, by
    /// (peer, msg id).
    offers: HashMap<(PeerId, u64), u64>,
}

impl Engine {
    pub fn new(rank: PeerId, size: u32, caps: Caps, cfg: EngineConfig) -> Engine {
        Engine {
            rank,
            size,
            caps,
            send_eager: cfg.eager_limit,
            cfg,
            reqs: Requests::default(),
            matcher: Matcher::default(),
            out: (0..size).map(|_| VecDeque::new()).collect(),
            out_maybe: false,
            next_seq: HashMap::default(),
            express_ids: 0,
            inbound: HashMap::default(),
            unexpected_data: HashMap::default(),
            credits: (0..size).map(|_| VecDeque::new()).collect(),
            announced_max: vec![0; size as usize],
            window: window::Windows::new(size),
            lost: HashMap::default(),
            departed: Default::default(),
            stats: EngineStats { sent_to: vec![Default::default(); size as usize], ..EngineStats::default() },
            local_read: None,
            no_single_copy: Default::default(),
            offers: HashMap::default(),
        }
    }

    pub fn rank(&self) -> PeerId {
        self.rank
    }
    pub fn size(&self) -> u32 {
        self.size
    }
    /// Makes room for `count` processes joined after start (MPI_Comm_spawn,
    /// MPI_Comm_accept/connect): they take the ids `size..size + count`,
    /// which the transport must reach from now on. Returns the first new id.
    pub fn add_peers(&mut self, count: u32) -> PeerId {
        let first = self.size;
        self.size = first.checked_add(count).expect("fewer than 2^32 processes");
        self.out.resize_with(self.size as usize, VecDeque::new);
        self.credits.resize_with(self.size as usize, VecDeque::new);
        self.announced_max.resize(self.size as usize, 0);
        self.stats.sent_to.resize(self.size as usize, Default::default());
        self.window.grow(self.size);
        first
    }
    pub fn config(&self) -> &EngineConfig {
        &self.cfg
    }
    pub fn stats(&self) -> &EngineStats {
        &self.stats
    }

    /// Marks a context as relaxed (`mpi_assert_allow_overtaking=true`).
    pub fn set_allow_overtaking(&mut self, ctx: u32, allow: bool) {
        self.matcher.set_relaxed(ctx, allow);
    }

    /// The channel every frame of messages on (ctx, tag) uses, so that they
    /// stay ordered; different (ctx, tag) spread over the channels.
    fn channel_for(&self, ctx: u32, tag: i32) -> u16 {
        channel_of(self.caps.channels, ctx, tag)
    }

    /// Largest payload of one frame.
    fn chunk(&self) -> usize {
        self.caps.max_frame.saturating_sub(wanmpi_wire::MAX_HEADER_LEN).max(1)
    }

    /// True while frames wait to be sent.
    #[inline]
    pub fn has_pending_output(&self) -> bool {
        self.out_maybe && self.out.iter().any(|q| !q.is_empty())
    }

    /// Number of requests not yet completed-and-tested.
    pub fn live_requests(&self) -> usize {
        self.reqs.live()
    }

    /// Peers known lost, with reasons.
    pub fn lost_peers(&self) -> &HashMap<PeerId, String> {
        &self.lost
    }

    /// Peers lost without saying goodbye first: failures.
    pub fn failed_peers(&self) -> impl Iterator<Item = (&PeerId, &String)> {
        self.lost.iter().filter(|(p, _)| !self.departed.contains(p))
    }

    /// Tells every peer this process is finalizing (queued after everything
    /// already queued to it).
    pub fn say_goodbye(&mut self) {
        for peer in 0..self.size {
            if peer != self.rank && !self.lost.contains_key(&peer) {
                self.queue_control(peer, 0, wanmpi_wire::Frame::Bye);
            }
        }
    }
}

/// `Engine::channel_for` for a transport of `channels` channels.
#[inline]
fn channel_of(channels: u16, ctx: u32, tag: i32) -> u16 {
    let n = channels.max(1) as u64;
    if n == 1 {
        return 0;
    }
    // A multiplicative hash: consecutive tags land on different channels.
    let h = (u64::from(ctx) << 32 | u64::from(tag as u32)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    // A power of two (the usual count) takes a mask, not a division:
    // the same channel either way.
    let x = h >> 32;
    (if n.is_power_of_two() { x & (n - 1) } else { x % n }) as u16
}

#[cfg(test)]
mod hostile;
#[cfg(test)]
mod tests;
