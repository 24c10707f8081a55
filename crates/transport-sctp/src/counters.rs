//! What the transport counts: frames and bytes per peer and per stream,
//! datagrams and retransmitted DATA chunks per peer (seen in the UDP glue),
//! the association's RTT/RTO/cwnd as usrsctp reports them, and usrsctp's
//! process-wide retransmission and timeout counters.

use std::fmt;
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use wanmpi_transport::PeerId;

/// One path to a peer (only when the rank has several addresses).
#[derive(Debug, Default, Clone)]
pub struct PathCounters {
    pub local: Option<SocketAddr>,
    pub remote: Option<SocketAddr>,
    pub active: bool,
    pub up: bool,
    /// All datagrams of the path, SCTP and probes.
    pub datagrams_out: u64,
    pub bytes_out: u64,
    pub datagrams_in: u64,
    pub bytes_in: u64,
    /// Dropped by the fault-injection cut (test hook), both directions.
    pub cut_drops: u64,
    /// Copies of the active path's packets sent here while it was suspected.
    pub copies_out: u64,
    pub probes_out: u64,
    pub acks_in: u64,
    /// Probes from the peer answered on this path.
    pub probes_in: u64,
    /// Times the path was declared down.
    pub went_down: u64,
    pub srtt: Option<Duration>,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct StreamCounters {
    pub frames_sent: u64,
    pub bytes_sent: u64,
    pub frames_received: u64,
    pub bytes_received: u64,
}

#[derive(Debug, Default, Clone)]
pub struct PeerCounters {
    pub peer: PeerId,
    /// Where the primary path's datagrams go now, and how many times a
    /// sealed datagram moved that (NAT rebinding, pump.rs `adopt`).
    pub addr: Option<std::net::SocketAddr>,
    pub rebinds: u64,
    /// Indexed by stream (= channel).
    pub streams: Vec<StreamCounters>,
    pub datagrams_out: u64,
    pub datagrams_in: u64,
    pub bytes_out: u64,
    pub bytes_in: u64,
    pub data_chunks_out: u64,
    /// DATA chunks sent again (fast retransmit or RTO), counted per peer.
    pub retransmitted_chunks: u64,
    pub dropped_injected: u64,
    pub udp_send_errors: u64,
    pub bad_checksums: u64,
    /// Whether the link's packets are sealed (seal.rs).
    pub sealed: bool,
    /// Sealed link: datagrams from the peer's address dropped before
    /// usrsctp saw them because they did not open (forged, altered,
    /// truncated), or opened before (replayed, or a copy on a backup path).
    pub refused_forged: u64,
    pub refused_replayed: u64,
    /// From SCTP_STATUS of the association (0 when it is gone).
    pub srtt_ms: u32,
    pub rto_ms: u32,
    pub cwnd: u32,
    pub mtu: u32,
    /// Empty with a single path.
    pub paths: Vec<PathCounters>,
    pub active_path: usize,
    pub path_switches: u64,
    pub last_switch: Option<Instant>,
    /// Malformed probes or probes for a wrong path from this peer, dropped.
    pub bad_probes: u64,
    /// The most bytes of frames and unfinished messages this peer made us
    /// hold before it proved the job secret (at most `HANDSHAKE_ALLOWANCE`;
    /// 0 from a rank of the job, which sends frames only after our ACCEPT).
    pub held_before_proof_peak: u64,
}

impl PeerCounters {
    pub fn frames_sent(&self) -> u64 {
        self.streams.iter().map(|s| s.frames_sent).sum()
    }
    pub fn frames_received(&self) -> u64 {
        self.streams.iter().map(|s| s.frames_received).sum()
    }
}

/// usrsctp's counters for the whole process (all transports in it).
#[derive(Debug, Default, Clone, Copy)]
pub struct StackCounters {
    pub packets_out: u32,
    pub packets_in: u32,
    pub data_chunks_out: u32,
    pub retransmitted_chunks: u32,
    pub fast_retransmits: u32,
    pub t3_timeouts: u32,
    pub heartbeat_timeouts: u32,
    pub checksum_errors: u32,
    /// DATA chunks received that we already had (the peer resent what had
    /// arrived: a spurious retransmission or a lost SACK).
    pub dup_data_in: u32,
    /// Tail-loss probes sent (patched usrsctp only; 0 with Debian's).
    pub tlp_probes: u32,
    /// Fast retransmits the loss-tolerant module did not back off for.
    pub cc_tolerated: u32,
    /// Fast retransmits it backed off for: loss rate above 5 %, or RTT doubled.
    pub cc_backoffs_rate: u32,
    pub cc_backoffs_delay: u32,
    /// T3 expiries it answered by halving cwnd instead of one MTU.
    pub cc_t3_halved: u32,
    /// T3 expiries with nothing acked since the last one (an outage): cwnd
    /// one MTU, ssthresh kept.
    pub cc_t3_silent: u32,
}

impl StackCounters {
    pub(crate) fn from_stat(s: &usrsctp_sys::sctpstat) -> StackCounters {
        use usrsctp_sys::stat;
        StackCounters {
            packets_out: s.raw[stat::SENDPACKETS],
            packets_in: s.raw[stat::RECVPACKETS],
            data_chunks_out: s.raw[stat::SENDDATA],
            retransmitted_chunks: s.raw[stat::SENDRETRANSDATA],
            fast_retransmits: s.raw[stat::SENDFASTRETRANS],
            t3_timeouts: s.raw[stat::TIMODATA],
            heartbeat_timeouts: s.raw[stat::TIMOHEARTBEAT],
            checksum_errors: s.raw[stat::CHECKSUMERRORS] + s.raw[stat::BADSUM],
            dup_data_in: s.raw[stat::RECVDUPDATA],
            tlp_probes: s.raw[stat::WANMPI_TLP_PROBES],
            cc_tolerated: s.raw[stat::WANMPI_LT_TOLERATED],
            cc_backoffs_rate: s.raw[stat::WANMPI_LT_BACKOFFS_RATE],
            cc_backoffs_delay: s.raw[stat::WANMPI_LT_BACKOFFS_DELAY],
            cc_t3_halved: s.raw[stat::WANMPI_LT_T3_HALVED],
            cc_t3_silent: s.raw[stat::WANMPI_LT_T3_SILENT],
        }
    }
}

#[derive(Debug, Default, Clone)]
pub struct Counters {
    pub rank: PeerId,
    pub peers: Vec<PeerCounters>,
    /// Probe-like datagrams from sources that are no peer's endpoint, dropped.
    pub stray_probes: u64,
    pub stack: StackCounters,
}

impl Counters {
    pub fn peer(&self, p: PeerId) -> Option<&PeerCounters> {
        self.peers.iter().find(|c| c.peer == p)
    }
}

impl fmt::Display for Counters {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "sctp rank {}:", self.rank)?;
        for p in &self.peers {
            writeln!(
                f,
                "  peer {:>3}: sent {} frames/{} B, received {} frames/{} B; datagrams out {} in {}; \
                 retransmitted chunks {}/{}; injected drops {}; srtt {} ms rto {} ms cwnd {} B mtu {}",
                p.peer,
                p.frames_sent(),
                p.streams.iter().map(|s| s.bytes_sent).sum::<u64>(),
                p.frames_received(),
                p.streams.iter().map(|s| s.bytes_received).sum::<u64>(),
                p.datagrams_out,
                p.datagrams_in,
                p.retransmitted_chunks,
                p.data_chunks_out,
                p.dropped_injected,
                p.srtt_ms,
                p.rto_ms,
                p.cwnd,
                p.mtu
            )?;
            if let Some(a) = p.addr {
                writeln!(f, "    at {a}; address moved {} times", p.rebinds)?;
            }
            if p.refused_forged + p.refused_replayed > 0 {
                writeln!(f, "    sealed datagrams dropped: {} did not open (forged or altered), {} replayed", p.refused_forged, p.refused_replayed)?;
            }
            if p.held_before_proof_peak > 0 {
                writeln!(f, "    held before the peer proved the job secret: at most {} B", p.held_before_proof_peak)?;
            }
            if !p.paths.is_empty() {
                writeln!(
                    f,
                    "    paths: active {}, {} switches{}, bad probes {}",
                    p.active_path,
                    p.path_switches,
                    p.last_switch.map(|t| format!(" (last {:.3} s ago)", t.elapsed().as_secs_f64())).unwrap_or_default(),
                    p.bad_probes
                )?;
            }
            for (i, x) in p.paths.iter().enumerate() {
                let addr = |a: Option<SocketAddr>| a.map_or("?".to_string(), |a| a.to_string());
                writeln!(
                    f,
                    "    path {i}{}: {} -> {} {}; datagrams out {}/{} B in {}/{} B; probes out {} acked {} answered {}; \
                     copies {}; srtt {}; down {} times; cut drops {}",
                    if x.active { "*" } else { "" },
                    addr(x.local),
                    addr(x.remote),
                    if x.up { "up" } else { "DOWN" },
                    x.datagrams_out,
                    x.bytes_out,
                    x.datagrams_in,
                    x.bytes_in,
                    x.probes_out,
                    x.acks_in,
                    x.probes_in,
                    x.copies_out,
                    x.srtt.map_or("-".to_string(), |d| format!("{:.2} ms", d.as_secs_f64() * 1e3)),
                    x.went_down,
                    x.cut_drops
                )?;
            }
            for (i, s) in p.streams.iter().enumerate() {
                if *s != StreamCounters::default() {
                    writeln!(
                        f,
                        "    stream {:>2}: sent {} frames/{} B, received {} frames/{} B",
                        i, s.frames_sent, s.bytes_sent, s.frames_received, s.bytes_received
                    )?;
                }
            }
        }
        if self.stray_probes > 0 {
            writeln!(f, "  probe-like datagrams from unknown sources dropped: {}", self.stray_probes)?;
        }
        let s = &self.stack;
        write!(
            f,
            "  usrsctp (process): packets out {} in {}, DATA chunks {} retransmitted {} (fast {}), \
             T3 timeouts {}, heartbeat timeouts {}, checksum errors {}, duplicate DATA in {}",
            s.packets_out,
            s.packets_in,
            s.data_chunks_out,
            s.retransmitted_chunks,
            s.fast_retransmits,
            s.t3_timeouts,
            s.heartbeat_timeouts,
            s.checksum_errors,
            s.dup_data_in
        )?;
        if usrsctp_sys::PATCHED {
            write!(
                f,
                "\n  usrsctp patched: tail-loss probes {}, loss-tolerant cc: losses tolerated {}, back-offs for loss rate {}, for delay {}, T3 expiries halved {}, taken as silence {}",
                s.tlp_probes, s.cc_tolerated, s.cc_backoffs_rate, s.cc_backoffs_delay, s.cc_t3_halved, s.cc_t3_silent
            )
        } else {
            write!(f, "\n  usrsctp: Debian's library (no tail-loss probe, no loss-tolerant cc)")
        }
    }
}
