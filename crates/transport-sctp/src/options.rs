//! The knobs of the sctp transport, their defaults and their environment
//! variables. docs/sctp.md explains why each default was chosen.

use crate::error::SctpError;
use std::net::IpAddr;
use std::time::Duration;
use wanmpi_bootstrap::seal_policy::{Maps, Seal};
use wanmpi_bootstrap::{PortRange, ENV_PORT_RANGE};

/// Forces sealing of sctp packets on (`1`, also on one host) or off (`0`).
pub const ENV_ENCRYPT: &str = "WANMPI_SCTP_ENCRYPT";

/// Test and fault-injection hook (WANMPI_SCTP_FAULT_TAMPER=`flip@N`,
/// `replay@N` or `inject@N`): how a rank alters the datagram carrying its
/// own N-th frame to each peer (counted from 1 by first fragments, per
/// peer), as a man in the middle would, to show what the peer does with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tamper {
    /// Flip a bit of the frame's data in the datagram (in the ciphertext
    /// when sealed; with the CRC32c fixed when plain, so SCTP delivers it).
    FlipOnWire(u32),
    /// Send the datagram twice.
    Replay(u32),
    /// Send a forgery ahead of the datagram: plain, a copy whose data from
    /// the middle of the frame's chunk on is random (CRC32c fixed), which
    /// SCTP takes and then drops the genuine packet as a duplicate; sealed,
    /// the genuine packet number followed by random bytes.
    Inject(u32),
}

impl Tamper {
    /// The frame it alters (from 1).
    pub fn nth(self) -> u32 {
        match self {
            Tamper::FlipOnWire(n) | Tamper::Replay(n) | Tamper::Inject(n) => n,
        }
    }
}

/// Test/fault-injection hook: from `from` after setup until `until` (or for
/// ever), every datagram of path `path` is dropped in both directions, as a
/// cut cable would (WANMPI_SCTP_FAULT_CUT_PATH=path@from_ms[-until_ms]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PathCut {
    pub path: usize,
    pub from: Duration,
    pub until: Option<Duration>,
}

impl Tamper {
    fn parse(v: &str) -> Option<Tamper> {
        let (kind, nth) = v.trim().split_once('@')?;
        let nth: u32 = nth.trim().parse().ok().filter(|&n| n > 0)?;
        match kind.trim() {
            "flip" => Some(Tamper::FlipOnWire(nth)),
            "replay" => Some(Tamper::Replay(nth)),
            "inject" => Some(Tamper::Inject(nth)),
            _ => None,
        }
    }
}

impl PathCut {
    fn parse(v: &str) -> Option<PathCut> {
        let (path, times) = v.trim().split_once('@')?;
        let (from, until) = match times.split_once('-') {
            Some((f, u)) => (f, Some(u)),
            None => (times, None),
        };
        let ms = |x: &str| x.trim().parse::<u64>().ok().map(Duration::from_millis);
        let until = match until {
            Some(u) => Some(ms(u)?),
            None => None,
        };
        Some(PathCut { path: path.trim().parse().ok()?, from: ms(from)?, until })
    }
}

/// Who computes the SCTP CRC32c checksum. Process-wide in usrsctp: every
/// transport of one process must use the same, and all ranks must agree
/// (`Off` sends zero checksums that the other modes reject).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Checksum {
    /// usrsctp's own software CRC32c (slice-by-8 tables).
    Usrsctp,
    /// usrsctp skips it; this crate computes and checks it (SSE4.2 when the
    /// CPU has it) in the UDP glue.
    Offload,
    /// Nobody computes it; only the UDP checksum protects the packets.
    Off,
}

/// usrsctp's congestion control modules (SCTP_PLUGGABLE_CC).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CongestionControl {
    /// RFC 4960 / RFC 2581: Reno-like, loss based.
    Rfc2581,
    /// HighSpeed TCP (RFC 3649).
    Hstcp,
    /// H-TCP.
    Htcp,
    /// RTCC: RFC 2581 plus RTT-based adjustments.
    Rtcc,
    /// wanmpi's loss-tolerant module (patches/usrsctp/0003): RFC 2581's
    /// growth, but a fast retransmit halves cwnd only when the recent loss
    /// rate is above 5 % or the RTT has doubled (congestion), not on an
    /// isolated random loss. Needs the patched usrsctp.
    Tolerant,
}

impl CongestionControl {
    pub(crate) fn module(self) -> u32 {
        match self {
            CongestionControl::Rfc2581 => usrsctp_sys::SCTP_CC_RFC2581,
            CongestionControl::Hstcp => usrsctp_sys::SCTP_CC_HSTCP,
            CongestionControl::Htcp => usrsctp_sys::SCTP_CC_HTCP,
            CongestionControl::Rtcc => usrsctp_sys::SCTP_CC_RTCC,
            CongestionControl::Tolerant => usrsctp_sys::SCTP_CC_WANMPI_LT,
        }
    }

    /// The default: the loss-tolerant module when the patched usrsctp is
    /// linked, RFC 2581 (the only sensible one in Debian's) otherwise.
    pub fn default_for_build() -> CongestionControl {
        if usrsctp_sys::PATCHED {
            CongestionControl::Tolerant
        } else {
            CongestionControl::Rfc2581
        }
    }
}

#[derive(Debug, Clone)]
pub struct SctpOptions {
    /// Streams per association = channels per peer (WANMPI_SCTP_STREAMS, 10).
    pub streams: u16,
    /// Address this rank binds its UDP socket to and publishes
    /// (WANMPI_SCTP_PUBLISH_ADDR, 127.0.0.1).
    pub publish_addr: IpAddr,
    /// SCTP socket send buffer in bytes (WANMPI_SCTP_SNDBUF, 4 MiB).
    pub sndbuf: u32,
    /// SCTP socket receive buffer = advertised window (WANMPI_SCTP_RCVBUF, 4 MiB).
    pub rcvbuf: u32,
    /// Kernel UDP socket buffers, both directions (WANMPI_SCTP_UDP_BUF, 4 MiB;
    /// the kernel may clamp it to net.core.[rw]mem_max).
    pub udp_buf: u32,
    /// Largest frame `try_send` accepts (WANMPI_SCTP_MAX_FRAME, 256 KiB);
    /// must not exceed `sndbuf`, which bounds a single SCTP send.
    pub max_frame: usize,
    /// Nagle off (WANMPI_SCTP_NODELAY, 1).
    pub nodelay: bool,
    /// Minimum retransmission timeout in ms (WANMPI_SCTP_RTO_MIN, 200).
    pub rto_min_ms: u32,
    /// Initial retransmission timeout in ms (WANMPI_SCTP_RTO_INITIAL, 1000).
    pub rto_initial_ms: u32,
    /// Maximum retransmission timeout in ms (WANMPI_SCTP_RTO_MAX, 1000):
    /// during an outage usrsctp retransmits at most this far apart, so the
    /// job resumes within about a second of the path's return
    /// (`wanmpi_transport::outage::PROBE_CAP`; usrsctp's own default is 60 s).
    pub rto_max_ms: u32,
    /// Delayed SACK time in ms (WANMPI_SCTP_SACK_DELAY, 40).
    pub sack_delay_ms: u32,
    /// SACK every this many packets (WANMPI_SCTP_SACK_FREQ, 1: at once;
    /// with 2, messages of 2+ packets took 3-5x longer on loopback).
    pub sack_freq: u32,
    /// Packets sent back to back at most, 0 = no limit (WANMPI_SCTP_MAX_BURST, 0).
    pub max_burst: u32,
    /// Initial congestion window in MTUs, process-wide (WANMPI_SCTP_INITIAL_CWND, 10).
    pub initial_cwnd: u32,
    /// Heartbeat interval in ms, 0 = off (WANMPI_SCTP_HB_INTERVAL, 5000).
    pub heartbeat_ms: u32,
    /// INIT attempts, and the least retransmissions before an association
    /// is given up (WANMPI_SCTP_MAX_RETRANS, 8); the association and its
    /// usrsctp path live through `outage_limit` of silence
    /// (`assoc_max_retrans`).
    pub max_retrans: u16,
    /// How long a silent peer is kept (WANMPI_OUTAGE_LIMIT, 600 s).
    pub outage_limit: Duration,
    /// Who computes the CRC32c (WANMPI_SCTP_CHECKSUM: sw|offload|off, offload).
    pub checksum: Checksum,
    /// Path MTU = largest SCTP packet = UDP payload; 0 = from the route to
    /// each peer, as TCP's MSS (WANMPI_SCTP_PATH_MTU: auto or bytes, auto).
    pub path_mtu: u32,
    /// Congestion control module (WANMPI_SCTP_CC: tolerant|rfc2581|hstcp|htcp|rtcc;
    /// tolerant with the patched usrsctp, rfc2581 with Debian's).
    pub cc: CongestionControl,
    /// Tail-loss probe after 2 SRTT without progress (WANMPI_SCTP_TLP, 1;
    /// only the patched usrsctp has one, see patches/usrsctp/0002).
    pub tlp: bool,
    /// Time allowed for setting up and authenticating every association
    /// (WANMPI_SCTP_CONNECT_TIMEOUT_MS, 30000).
    pub connect_timeout: Duration,
    /// Where a NAT is in play, a sealed peer none of whose candidates
    /// answered hole punching within this has no path: setup fails naming
    /// the ranks and candidates (WANMPI_SCTP_PUNCH_TIMEOUT_MS, 6 s).
    pub punch_timeout: Duration,
    /// Fraction of outgoing datagrams dropped once setup is done, for tests
    /// (WANMPI_SCTP_DROP_RATE, 0).
    pub drop_rate: f64,
    /// Seed of the drop generator (WANMPI_SCTP_DROP_SEED, 0).
    pub drop_seed: u64,
    /// Drop the first this many outgoing datagrams that carry DATA, once
    /// setup is done, whatever `drop_rate` says: a loss at a known place,
    /// for deterministic tests (WANMPI_SCTP_DROP_FIRST_DATA, 0).
    pub drop_first_data: u32,
    /// Drop every outgoing datagram that carries a chunk of one of these
    /// types, once setup is done: a test hook for losses in the control
    /// handshakes, e.g. 14 = SHUTDOWN COMPLETE (WANMPI_SCTP_DROP_CHUNKS,
    /// comma-separated chunk type numbers, empty).
    pub drop_chunks: Vec<u8>,
    /// Drop the n-th outgoing datagrams (1-based, once setup is done) that
    /// carry DATA sent for the first time: a loss at a known place in a
    /// long message (WANMPI_SCTP_DROP_DATA_NTH, comma-separated, empty).
    pub drop_data_nth: Vec<u32>,
    /// Drop the n-th outgoing datagrams (1-based, once setup is done) that
    /// carry the last fragment of a message (DATA with the E bit) sent for
    /// the first time: a lost tail (WANMPI_SCTP_DROP_END_NTH, empty).
    pub drop_end_nth: Vec<u32>,
    /// Print the counters on stderr at shutdown (WANMPI_SCTP_STATS, 0).
    pub print_stats: bool,
    /// Further local addresses, one more path each (path i+1 pairs our
    /// `more_addrs[i]` with the peer's address i+1). Set with
    /// WANMPI_SCTP_ADDRS=primary,second,... (the first becomes
    /// `publish_addr`); empty by default: one path, no probes.
    pub more_addrs: Vec<IpAddr>,
    /// Networks (address, prefix length) in each of which this rank takes
    /// its own interface address as a further path, after `more_addrs`, in
    /// this order. For launchers that give every rank the same environment
    /// (`mpirun --emulate` with two paths sets 198.19.0.0/24)
    /// (WANMPI_SCTP_PATH_NETS=net/len,..., empty).
    pub path_nets: Vec<(IpAddr, u8)>,
    /// Probe interval of each path when there are several
    /// (WANMPI_SCTP_PROBE_MS, 100).
    pub probe_interval: Duration,
    /// A path is down when its probes went unanswered this long; None =
    /// max(3 x probe interval, 3 x the path's srtt, 200 ms)
    /// (WANMPI_SCTP_PATH_FAIL_MS, 0 = auto).
    pub path_fail: Option<Duration>,
    /// Go back to the primary path once it has been up for one failure
    /// timeout (WANMPI_SCTP_RETURN_TO_PRIMARY, 1).
    pub return_to_primary: bool,
    /// While the active path's probe is overdue (2 x srtt, at least 20 ms),
    /// copy every packet onto a healthy backup path too, so SCTP's first
    /// retransmission already gets through (WANMPI_SCTP_PATH_COPY, 1).
    pub copy_when_suspected: bool,
    /// Test/fault-injection hook: cut one path (WANMPI_SCTP_FAULT_CUT_PATH, unset).
    pub fault_cut_path: Option<PathCut>,
    /// Test hook, no variable: play a stranger that never answers HELLO
    /// with a PROOF and whose `connect` returns as soon as its
    /// associations are up, so a test can send frames nobody accepted.
    pub test_withhold_proof: bool,
    /// Ports the UDP sockets bind in (the launcher's WANMPI_PORT_RANGE,
    /// `mpirun --port-range`); None: any free port.
    pub port_range: Option<PortRange>,
    /// Which links' packets are sealed (`seal.rs`): between hosts by
    /// default (WANMPI_SCTP_ENCRYPT, WANMPI_INSECURE_LAN).
    pub seal: Seal,
    /// Each rank's host and site index (the launcher's maps, given by the
    /// runtime), for `seal`.
    pub maps: Maps,
    /// Test hook, no variable: send the version-1 HELLO (a nonce without
    /// flags), as a rank of an older release would.
    pub test_hello_v1: bool,
    /// Test / fault-injection hook: alter our own frames (`Tamper`,
    /// WANMPI_SCTP_FAULT_TAMPER, unset).
    pub test_tamper: Option<Tamper>,
}

impl Default for SctpOptions {
    fn default() -> Self {
        SctpOptions {
            streams: 10,
            publish_addr: IpAddr::from([127, 0, 0, 1]),
            sndbuf: 4 << 20,
            rcvbuf: 4 << 20,
            udp_buf: 4 << 20,
            max_frame: 256 << 10,
            nodelay: true,
            rto_min_ms: 200,
            rto_initial_ms: 1000,
            rto_max_ms: 1000,
            sack_delay_ms: 40,
            sack_freq: 1,
            max_burst: 0,
            initial_cwnd: 10,
            heartbeat_ms: 5000,
            max_retrans: 8,
            outage_limit: wanmpi_transport::outage::DEFAULT,
            checksum: Checksum::Offload,
            path_mtu: 0,
            cc: CongestionControl::default_for_build(),
            tlp: true,
            connect_timeout: Duration::from_secs(30),
            punch_timeout: Duration::from_secs(6),
            drop_rate: 0.0,
            drop_seed: 0,
            drop_first_data: 0,
            drop_chunks: vec![],
            drop_data_nth: vec![],
            drop_end_nth: vec![],
            print_stats: false,
            more_addrs: vec![],
            path_nets: vec![],
            probe_interval: Duration::from_millis(100),
            path_fail: None,
            return_to_primary: true,
            copy_when_suspected: true,
            fault_cut_path: None,
            test_withhold_proof: false,
            port_range: None,
            seal: Seal::BetweenHosts,
            maps: Maps::default(),
            test_hello_v1: false,
            test_tamper: None,
        }
    }
}

impl SctpOptions {
    /// The given local addresses, primary (`publish_addr`) first; path i
    /// uses address i. Addresses from `path_nets` follow at connect.
    pub fn local_addrs(&self) -> Vec<IpAddr> {
        std::iter::once(self.publish_addr).chain(self.more_addrs.iter().copied()).collect()
    }

    /// Defaults overridden by the WANMPI_SCTP_* environment variables.
    pub fn from_env() -> Result<SctpOptions, SctpError> {
        Self::from_lookup(|k| std::env::var(k).ok())
    }

    /// Defaults overridden by `lookup(name)` (testable form of `from_env`).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<SctpOptions, SctpError> {
        let mut o = SctpOptions::default();
        let get = |name: &str| lookup(&format!("WANMPI_SCTP_{name}"));
        if let Some(v) = get("STREAMS") {
            o.streams = num("STREAMS", &v)?;
        }
        if let Some(v) = get("PUBLISH_ADDR") {
            o.publish_addr = v.trim().parse().map_err(|_| bad("PUBLISH_ADDR", &v, "not an IP address"))?;
        }
        if let Some(v) = get("SNDBUF") {
            o.sndbuf = num("SNDBUF", &v)?;
        }
        if let Some(v) = get("RCVBUF") {
            o.rcvbuf = num("RCVBUF", &v)?;
        }
        if let Some(v) = get("UDP_BUF") {
            o.udp_buf = num("UDP_BUF", &v)?;
        }
        if let Some(v) = get("MAX_FRAME") {
            o.max_frame = num("MAX_FRAME", &v)?;
        }
        if let Some(v) = get("NODELAY") {
            o.nodelay = num::<u8>("NODELAY", &v)? != 0;
        }
        if let Some(v) = get("RTO_MIN") {
            o.rto_min_ms = num("RTO_MIN", &v)?;
        }
        if let Some(v) = get("RTO_INITIAL") {
            o.rto_initial_ms = num("RTO_INITIAL", &v)?;
        }
        if let Some(v) = get("RTO_MAX") {
            o.rto_max_ms = num("RTO_MAX", &v)?;
        }
        if let Some(v) = get("SACK_DELAY") {
            o.sack_delay_ms = num("SACK_DELAY", &v)?;
        }
        if let Some(v) = get("SACK_FREQ") {
            o.sack_freq = num("SACK_FREQ", &v)?;
        }
        if let Some(v) = get("MAX_BURST") {
            o.max_burst = num("MAX_BURST", &v)?;
        }
        if let Some(v) = get("INITIAL_CWND") {
            o.initial_cwnd = num("INITIAL_CWND", &v)?;
        }
        if let Some(v) = get("HB_INTERVAL") {
            o.heartbeat_ms = num("HB_INTERVAL", &v)?;
        }
        if let Some(v) = lookup(wanmpi_transport::outage::ENV) {
            o.outage_limit =
                wanmpi_transport::outage::parse(&v).map_err(|problem| SctpError::BadOption { var: wanmpi_transport::outage::ENV.into(), problem })?;
        }
        if let Some(v) = get("MAX_RETRANS") {
            o.max_retrans = num("MAX_RETRANS", &v)?;
        }
        if let Some(v) = get("CHECKSUM") {
            o.checksum = match v.trim() {
                "sw" | "usrsctp" => Checksum::Usrsctp,
                "offload" => Checksum::Offload,
                "off" | "none" => Checksum::Off,
                _ => return Err(bad("CHECKSUM", &v, "expected sw, offload or off")),
            };
        }
        if let Some(v) = get("PATH_MTU") {
            o.path_mtu = if v.trim() == "auto" { 0 } else { num("PATH_MTU", &v)? };
        }
        if let Some(v) = get("CC") {
            o.cc = match v.trim() {
                "rfc2581" | "reno" => CongestionControl::Rfc2581,
                "hstcp" => CongestionControl::Hstcp,
                "htcp" => CongestionControl::Htcp,
                "rtcc" => CongestionControl::Rtcc,
                "tolerant" | "lt" => CongestionControl::Tolerant,
                _ => return Err(bad("CC", &v, "expected tolerant, rfc2581, hstcp, htcp or rtcc")),
            };
        }
        if let Some(v) = get("TLP") {
            o.tlp = num::<u32>("TLP", &v)? != 0;
        }
        if let Some(v) = get("CONNECT_TIMEOUT_MS") {
            o.connect_timeout = Duration::from_millis(num("CONNECT_TIMEOUT_MS", &v)?);
        }
        if let Some(v) = get("PUNCH_TIMEOUT_MS") {
            o.punch_timeout = Duration::from_millis(num("PUNCH_TIMEOUT_MS", &v)?);
        }
        if let Some(v) = get("DROP_RATE") {
            o.drop_rate = v.trim().parse().map_err(|_| bad("DROP_RATE", &v, "not a number"))?;
        }
        if let Some(v) = get("DROP_SEED") {
            o.drop_seed = num("DROP_SEED", &v)?;
        }
        if let Some(v) = get("DROP_FIRST_DATA") {
            o.drop_first_data = num("DROP_FIRST_DATA", &v)?;
        }
        if let Some(v) = get("DROP_CHUNKS") {
            o.drop_chunks = v.split(',').map(str::trim).filter(|c| !c.is_empty()).map(|c| num("DROP_CHUNKS", c)).collect::<Result<_, _>>()?;
        }
        if let Some(v) = get("DROP_DATA_NTH") {
            o.drop_data_nth = v.split(',').map(str::trim).filter(|c| !c.is_empty()).map(|c| num("DROP_DATA_NTH", c)).collect::<Result<_, _>>()?;
        }
        if let Some(v) = get("DROP_END_NTH") {
            o.drop_end_nth = v.split(',').map(str::trim).filter(|c| !c.is_empty()).map(|c| num("DROP_END_NTH", c)).collect::<Result<_, _>>()?;
        }
        if let Some(v) = get("STATS") {
            o.print_stats = num::<u8>("STATS", &v)? != 0;
        }
        if let Some(v) = get("ADDRS") {
            let mut addrs = vec![];
            for a in v.split(',').map(str::trim).filter(|a| !a.is_empty()) {
                addrs.push(a.parse::<IpAddr>().map_err(|_| bad("ADDRS", &v, "not a comma-separated list of IP addresses"))?);
            }
            if addrs.is_empty() {
                return Err(bad("ADDRS", &v, "no address"));
            }
            if get("PUBLISH_ADDR").is_some() && o.publish_addr != addrs[0] {
                return Err(bad("ADDRS", &v, "the first address must be WANMPI_SCTP_PUBLISH_ADDR when both are set"));
            }
            o.publish_addr = addrs[0];
            o.more_addrs = addrs[1..].to_vec();
        }
        if let Some(v) = get("PATH_NETS") {
            for n in v.split(',').map(str::trim).filter(|n| !n.is_empty()) {
                let parsed = n.split_once('/').and_then(|(a, l)| Some((a.parse::<IpAddr>().ok()?, l.parse::<u8>().ok()?)));
                o.path_nets.push(parsed.ok_or_else(|| bad("PATH_NETS", &v, "expected a comma-separated list of address/prefix-length"))?);
            }
        }
        if let Some(v) = get("PROBE_MS") {
            o.probe_interval = Duration::from_millis(num("PROBE_MS", &v)?);
        }
        if let Some(v) = get("PATH_FAIL_MS") {
            o.path_fail = match num::<u64>("PATH_FAIL_MS", &v)? {
                0 => None,
                ms => Some(Duration::from_millis(ms)),
            };
        }
        if let Some(v) = get("RETURN_TO_PRIMARY") {
            o.return_to_primary = num::<u8>("RETURN_TO_PRIMARY", &v)? != 0;
        }
        if let Some(v) = get("PATH_COPY") {
            o.copy_when_suspected = num::<u8>("PATH_COPY", &v)? != 0;
        }
        if let Some(v) = get("FAULT_CUT_PATH") {
            o.fault_cut_path = Some(PathCut::parse(&v).ok_or_else(|| bad("FAULT_CUT_PATH", &v, "expected path@from_ms or path@from_ms-until_ms"))?);
        }
        if let Some(v) = get("FAULT_TAMPER") {
            o.test_tamper = Some(Tamper::parse(&v).ok_or_else(|| bad("FAULT_TAMPER", &v, "expected flip@N, replay@N or inject@N (N >= 1)"))?);
        }
        o.port_range = PortRange::from_lookup(&lookup).map_err(|problem| SctpError::BadOption { var: ENV_PORT_RANGE.into(), problem })?;
        o.seal = Seal::from_lookup(ENV_ENCRYPT, &lookup).map_err(|problem| SctpError::BadOption { var: ENV_ENCRYPT.into(), problem })?;
        o.validate()?;
        Ok(o)
    }

    /// Retransmissions before usrsctp gives the association up: enough, at
    /// one every `rto_max_ms` at most, to span the outage limit (usrsctp
    /// counts heartbeats that go unanswered too, so an idle association
    /// outlives the limit; the launcher reports dead processes anyway).
    pub fn assoc_max_retrans(&self) -> u16 {
        let spans = self.outage_limit.as_millis().div_ceil(u128::from(self.rto_max_ms.max(1)));
        spans.clamp(u128::from(self.max_retrans), u128::from(u16::MAX)) as u16
    }

    /// Rejects combinations usrsctp would refuse or that could never work.
    pub fn validate(&self) -> Result<(), SctpError> {
        let fail = |var: &str, problem: &str| Err(bad(var, "", problem));
        if self.streams == 0 {
            return fail("STREAMS", "at least one stream is needed");
        }
        if self.max_frame == 0 || self.max_frame > self.sndbuf as usize {
            return fail("MAX_FRAME", "must be between 1 and the send buffer size (a larger send fails with EMSGSIZE)");
        }
        if !(self.rto_min_ms <= self.rto_initial_ms && self.rto_initial_ms <= self.rto_max_ms && self.rto_min_ms > 0) {
            return fail("RTO_MIN", "need 0 < rto_min <= rto_initial <= rto_max");
        }
        if self.path_mtu != 0 && !(576..=crate::mtu::MAX_UDP_PAYLOAD).contains(&self.path_mtu) {
            return fail("PATH_MTU", "must be auto (0) or between 576 and 65507");
        }
        if !(0.0..1.0).contains(&self.drop_rate) {
            return fail("DROP_RATE", "must be in [0, 1)");
        }
        if self.max_retrans == 0 {
            return fail("MAX_RETRANS", "must be at least 1");
        }
        if self.cc == CongestionControl::Tolerant && !usrsctp_sys::PATCHED {
            return fail("CC", "tolerant needs the patched usrsctp (scripts/build-usrsctp); this build links Debian's libusrsctp");
        }
        if self.path_nets.iter().any(|&(a, l)| l > if a.is_ipv4() { 32 } else { 128 }) {
            return fail("PATH_NETS", "prefix length too long for the address family");
        }
        let addrs = self.local_addrs();
        if addrs.len() + self.path_nets.len() > crate::path::MAX_PATHS {
            return fail("ADDRS", "at most 8 addresses");
        }
        if (1..addrs.len()).any(|i| addrs[..i].contains(&addrs[i])) {
            return fail("ADDRS", "an address is listed twice");
        }
        if self.probe_interval.is_zero() {
            return fail("PROBE_MS", "must be at least 1 ms");
        }
        if let Some(c) = self.fault_cut_path {
            if c.path >= addrs.len() + self.path_nets.len() || c.until.is_some_and(|u| u <= c.from) {
                return fail("FAULT_CUT_PATH", "path out of range or empty time window");
            }
        }
        Ok(())
    }
}

fn bad(var: &str, value: &str, problem: &str) -> SctpError {
    SctpError::BadOption { var: format!("WANMPI_SCTP_{var}"), problem: format!("{problem} (got {value:?})") }
}

fn num<T: std::str::FromStr>(var: &str, v: &str) -> Result<T, SctpError> {
    v.trim().parse().map_err(|_| bad(var, v, "not a valid number"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn from(pairs: &[(&str, &str)]) -> Result<SctpOptions, SctpError> {
        let m: HashMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        SctpOptions::from_lookup(|k| m.get(k).cloned())
    }

    #[test]
    fn environment_overrides_defaults() {
        let o = from(&[
            ("WANMPI_SCTP_STREAMS", "1"),
            ("WANMPI_SCTP_RTO_MIN", "50"),
            ("WANMPI_SCTP_CC", "htcp"),
            ("WANMPI_SCTP_CHECKSUM", "offload"),
            ("WANMPI_SCTP_DROP_RATE", "0.05"),
            ("WANMPI_SCTP_DROP_CHUNKS", "14, 8"),
            ("WANMPI_SCTP_DROP_DATA_NTH", "40"),
            ("WANMPI_SCTP_DROP_END_NTH", "3,5"),
            ("WANMPI_SCTP_TLP", "0"),
        ])
        .unwrap();
        assert_eq!(o.drop_chunks, vec![14, 8]);
        assert_eq!(o.drop_data_nth, vec![40]);
        assert_eq!(o.drop_end_nth, vec![3, 5]);
        assert!(!o.tlp);
        assert_eq!(o.streams, 1);
        assert_eq!(o.rto_min_ms, 50);
        assert_eq!(o.cc, CongestionControl::Htcp);
        assert_eq!(o.checksum, Checksum::Offload);
        assert_eq!(o.drop_rate, 0.05);
        assert_eq!(o.rto_max_ms, SctpOptions::default().rto_max_ms);
    }

    #[test]
    fn bad_values_are_named_errors() {
        let e = from(&[("WANMPI_SCTP_STREAMS", "ten")]).unwrap_err().to_string();
        assert!(e.contains("WANMPI_SCTP_STREAMS"), "{e}");
        assert!(from(&[("WANMPI_SCTP_STREAMS", "0")]).is_err());
        assert!(from(&[("WANMPI_SCTP_MAX_FRAME", "999999999")]).is_err());
        assert!(from(&[("WANMPI_SCTP_RTO_MIN", "5000")]).is_err());
        assert!(from(&[("WANMPI_SCTP_CC", "bbr")]).is_err());
        assert!(from(&[("WANMPI_SCTP_DROP_RATE", "1.5")]).is_err());
        assert!(from(&[("WANMPI_SCTP_PATH_MTU", "70000")]).is_err());
        assert_eq!(from(&[("WANMPI_SCTP_PATH_MTU", "auto")]).unwrap().path_mtu, 0);
        assert_eq!(from(&[("WANMPI_SCTP_PATH_MTU", "9000")]).unwrap().path_mtu, 9000);
    }

    #[test]
    fn sealing_follows_the_job_rule_and_its_own_switch() {
        assert_eq!(from(&[]).unwrap().seal, Seal::BetweenHosts);
        assert_eq!(from(&[("WANMPI_INSECURE_LAN", "1")]).unwrap().seal, Seal::BetweenSites);
        assert_eq!(from(&[(ENV_ENCRYPT, "1"), ("WANMPI_INSECURE_LAN", "1")]).unwrap().seal, Seal::Always);
        assert_eq!(from(&[(ENV_ENCRYPT, "0")]).unwrap().seal, Seal::Never);
        // tcp's switch is tcp's alone.
        assert_eq!(from(&[("WANMPI_TCP_ENCRYPT", "0")]).unwrap().seal, Seal::BetweenHosts);
        let e = from(&[(ENV_ENCRYPT, "on")]).unwrap_err().to_string();
        assert!(e.contains(ENV_ENCRYPT), "{e}");
        assert_eq!(from(&[]).unwrap().test_tamper, None);
        assert_eq!(from(&[("WANMPI_SCTP_FAULT_TAMPER", "flip@3")]).unwrap().test_tamper, Some(Tamper::FlipOnWire(3)));
        assert_eq!(from(&[("WANMPI_SCTP_FAULT_TAMPER", "replay@1")]).unwrap().test_tamper, Some(Tamper::Replay(1)));
        assert_eq!(from(&[("WANMPI_SCTP_FAULT_TAMPER", "inject@9")]).unwrap().test_tamper, Some(Tamper::Inject(9)));
        for bad in ["flip", "flip@0", "burn@2", "flip@x"] {
            assert!(from(&[("WANMPI_SCTP_FAULT_TAMPER", bad)]).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_association_outlives_the_outage_limit() {
        let o = from(&[]).unwrap();
        assert_eq!((o.rto_max_ms, o.outage_limit), (1000, Duration::from_secs(600)));
        assert_eq!(o.assoc_max_retrans(), 600);
        assert_eq!(from(&[("WANMPI_OUTAGE_LIMIT", "2.5")]).unwrap().assoc_max_retrans(), 8, "never below MAX_RETRANS");
        assert_eq!(from(&[("WANMPI_OUTAGE_LIMIT", "86400")]).unwrap().assoc_max_retrans(), u16::MAX);
        let e = from(&[("WANMPI_OUTAGE_LIMIT", "forever")]).unwrap_err().to_string();
        assert!(e.contains("WANMPI_OUTAGE_LIMIT"), "{e}");
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn multihoming_options() {
        let o = from(&[]).unwrap();
        assert_eq!(o.local_addrs(), vec![IpAddr::from([127, 0, 0, 1])]);
        assert_eq!((o.probe_interval, o.path_fail, o.return_to_primary, o.fault_cut_path), (Duration::from_millis(100), None, true, None));
        let o = from(&[
            ("WANMPI_SCTP_ADDRS", "10.0.0.1, 10.1.0.1"),
            ("WANMPI_SCTP_PROBE_MS", "50"),
            ("WANMPI_SCTP_PATH_FAIL_MS", "400"),
            ("WANMPI_SCTP_RETURN_TO_PRIMARY", "0"),
            ("WANMPI_SCTP_PATH_COPY", "0"),
            ("WANMPI_SCTP_FAULT_CUT_PATH", "1@500-1500"),
        ])
        .unwrap();
        assert_eq!(o.publish_addr, IpAddr::from([10, 0, 0, 1]));
        assert_eq!(o.local_addrs(), vec![IpAddr::from([10, 0, 0, 1]), IpAddr::from([10, 1, 0, 1])]);
        assert_eq!(o.probe_interval, Duration::from_millis(50));
        assert_eq!(o.path_fail, Some(Duration::from_millis(400)));
        assert!(!o.return_to_primary);
        assert!(!o.copy_when_suspected);
        let cut = PathCut { path: 1, from: Duration::from_millis(500), until: Some(Duration::from_millis(1500)) };
        assert_eq!(o.fault_cut_path, Some(cut));
        let o = from(&[("WANMPI_SCTP_PATH_NETS", "198.19.0.0/24, fd00::/64")]).unwrap();
        assert_eq!(o.path_nets, vec![(ip("198.19.0.0"), 24), (ip("fd00::"), 64)]);
        let o = from(&[("WANMPI_SCTP_ADDRS", "10.0.0.1,10.1.0.1"), ("WANMPI_SCTP_FAULT_CUT_PATH", "0@300")]).unwrap();
        assert_eq!(o.fault_cut_path.unwrap().until, None);
        for bad in [
            vec![("WANMPI_SCTP_ADDRS", "10.0.0.1,x")],
            vec![("WANMPI_SCTP_ADDRS", ",")],
            vec![("WANMPI_SCTP_ADDRS", "10.0.0.1,10.0.0.1")],
            vec![("WANMPI_SCTP_ADDRS", "10.0.0.1,10.1.0.1"), ("WANMPI_SCTP_PUBLISH_ADDR", "10.1.0.1")],
            vec![("WANMPI_SCTP_PROBE_MS", "0")],
            vec![("WANMPI_SCTP_PATH_NETS", "198.19.0.0")],
            vec![("WANMPI_SCTP_PATH_NETS", "198.19.0.0/33")],
            vec![("WANMPI_SCTP_FAULT_CUT_PATH", "1@100")],
            vec![("WANMPI_SCTP_FAULT_CUT_PATH", "0@500-100")],
            vec![("WANMPI_SCTP_FAULT_CUT_PATH", "0")],
        ] {
            assert!(from(&bad).is_err(), "{bad:?}");
        }
    }
}
