//! What the tool interface (MPI_T, crates/mpi-capi/src/mpit/) reads of a
//! running process: a snapshot of the engine's and transports' counters
//! taken under the lock, the collective traffic that crossed sites, and
//! the eager limit it may lower at run time.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use wanmpi_engine::EngineStats;
pub use wanmpi_transport::Tally;

use crate::runtime::Runtime;

/// Collective messages (blocking collectives, `coll_adapter.rs`) sent to
/// a rank of another site, and their bytes.
#[derive(Debug, Default)]
pub struct CollWan {
    pub msgs: AtomicU64,
    pub bytes: AtomicU64,
}

impl CollWan {
    pub(crate) fn count(&self, bytes: usize) {
        self.msgs.fetch_add(1, Relaxed);
        self.bytes.fetch_add(bytes as u64, Relaxed);
    }
}

/// One peer as this process sees it.
#[derive(Debug, Clone, Default)]
pub struct PeerView {
    pub msgs_sent: u64,
    pub bytes_sent: u64,
    pub msgs_received: u64,
    pub bytes_received: u64,
    /// Smoothed and smallest round trip in seconds (0: not measured).
    pub srtt: f64,
    pub min_rtt: f64,
    /// The peer's site differs from this process's.
    pub other_site: bool,
    /// Per transport (by name) that carried frames to or from the peer.
    pub transports: Vec<(&'static str, Tally)>,
}

/// What a snapshot takes beyond the totals: the asks of the transport
/// cost a system call per peer for tcp, so a read takes only what it needs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ToolWant {
    /// The totals; `ToolView::peers` stays empty.
    #[default]
    Totals,
    /// Each peer's message counts too.
    Peers,
    /// Each peer's message counts and each transport's counts per peer
    /// (`Transport::tally`).
    Transports,
    /// Each peer's message counts and round trip (`Transport::path`).
    Paths,
}

/// Everything the tool interface reads, at one instant.
#[derive(Debug, Clone, Default)]
pub struct ToolView {
    pub engine: EngineStats,
    pub unexpected_queue: u64,
    pub posted_queue: u64,
    pub eager_limit: u64,
    /// Indexed by world rank (this process's entry is all zero).
    pub peers: Vec<PeerView>,
    pub coll_wan_msgs: u64,
    pub coll_wan_bytes: u64,
}

impl Runtime {
    /// A snapshot of the counters, taken under the lock (no progress
    /// step), with what `want` says of the peers.
    pub fn tool_view(&self, want: ToolWant) -> ToolView {
        let st = self.lock();
        let engine = st.engine.stats().clone();
        let me = self.rank;
        let n = if want == ToolWant::Totals { 0 } else { self.size };
        let peers = (0..n)
            .map(|p| {
                if p == me {
                    return PeerView::default();
                }
                let sent = engine.sent_to.get(p as usize).copied().unwrap_or_default();
                let (msgs_received, bytes_received) = engine.received_from(p);
                let path = if want == ToolWant::Paths { st.transport.path(p).unwrap_or_default() } else { Default::default() };
                let mut transports: Vec<(&'static str, Tally)> = vec![];
                if want == ToolWant::Transports {
                    st.transport.tally(p, &mut |name, t| match transports.iter_mut().find(|(n, _)| *n == name) {
                        Some((_, have)) => have.add(&t),
                        None => transports.push((name, t)),
                    });
                }
                // A transport alone counts no frames of its own: all the
                // engine's traffic with the peer went by it.
                let alone = !transports.iter().any(|(_, t)| t.counts_frames());
                if want == ToolWant::Transports && alone && (sent.msgs > 0 || msgs_received > 0) {
                    let name = st.transport.caps().name;
                    let whole =
                        Tally { frames_sent: sent.msgs, bytes_sent: sent.bytes, frames_received: msgs_received, bytes_received, ..Tally::default() };
                    match transports.iter_mut().find(|(n, _)| *n == name) {
                        Some((_, have)) => have.add(&whole),
                        None => transports.push((name, whole)),
                    }
                }
                PeerView {
                    msgs_sent: sent.msgs,
                    bytes_sent: sent.bytes,
                    msgs_received,
                    bytes_received,
                    srtt: path.srtt.as_secs_f64(),
                    min_rtt: path.min_rtt.as_secs_f64(),
                    other_site: self.site_of(p) != self.site_of(me),
                    transports,
                }
            })
            .collect();
        ToolView {
            unexpected_queue: st.engine.unexpected_queue_len() as u64,
            posted_queue: st.engine.posted_queue_len() as u64,
            eager_limit: st.engine.eager_limit() as u64,
            engine,
            peers,
            coll_wan_msgs: self.coll_wan.msgs.load(Relaxed),
            coll_wan_bytes: self.coll_wan.bytes.load(Relaxed),
        }
    }

    /// Lowers (or restores) the eager limit of this process's sends
    /// (`Engine::set_eager_limit`); Err carries the largest value allowed.
    pub fn set_eager_limit(&self, bytes: usize) -> Result<(), usize> {
        self.lock().engine.set_eager_limit(bytes)
    }

    /// The eager limit of this process's sends now.
    pub fn eager_limit(&self) -> usize {
        self.lock().engine.eager_limit()
    }

    /// The name of this process's transport (`Caps::name`: auto, tcp, ...).
    pub fn transport_name(&self) -> &'static str {
        self.lock().transport.caps().name
    }
}
