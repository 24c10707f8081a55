//! `WampTransport::connect` and its teardown: a UDP socket (on the
//! published address when it is this host's, else the wildcard), its
//! candidates (the published address, and the reflexive one the job's
//! reflector saw: `wanmpi_bootstrap::reflect`) and a fresh nonce published
//! through the bootstrap key/value service, keys per peer, and a handshake
//! (a sealed PING each way, answered) that proves every peer holds the job
//! secret and measures the first round trip. Until a peer is heard, its
//! handshake goes to all of its candidates at once (transport.rs), so two
//! masquerading NATs open for each other: hole punching.

use crate::conn::{Conn, ConnConfig};
use crate::options::WampOptions;
use crate::packet::{HEADER_LEN, TAG_LEN};
use crate::poller::Poller;
use crate::seal::{fresh_nonce, Keys, NONCE_LEN};
use crate::transport::{Peer, Refusals, WampTransport};
use rand::SeedableRng;
use std::collections::VecDeque;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};
use wanmpi_bootstrap::{reflect, KeyValue};
use wanmpi_transport::path_mtu::{auto_path_mtu, MAX_UDP_PAYLOAD};
use wanmpi_transport::{Caps, PeerId, Transport, TransportError};

/// Eager limit suggested to the engine, as the other transports.
const EAGER_LIMIT_HINT: usize = 64 << 10;
/// Round trip assumed before the handshake measured one.
const INITIAL_RTT: Duration = Duration::from_millis(100);

fn endpoint_key(rank: PeerId) -> String {
    format!("wamp-ep-{rank}")
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Option<[u8; NONCE_LEN]> {
    if s.len() != 2 * NONCE_LEN {
        return None;
    }
    let mut out = [0u8; NONCE_LEN];
    for (i, o) in out.iter_mut().enumerate() {
        *o = u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

/// "ip:port[,ip:port...]/nonce-hex": candidates, best first.
fn parse_endpoint(rank: PeerId, v: &str) -> Result<(Vec<SocketAddr>, [u8; NONCE_LEN]), TransportError> {
    let bad = || TransportError::Setup(format!("rank {rank} published a bad wamp endpoint {v:?}"));
    let (addrs, nonce) = v.split_once('/').ok_or_else(bad)?;
    Ok((reflect::parse_candidates(addrs).ok_or_else(bad)?, unhex(nonce).ok_or_else(bad)?))
}

/// Asks for `bytes` of socket buffer; as root past the system's maximum
/// (a burst of a 300 KiB message is ~210 datagrams, more than the usual
/// 208 KiB default holds).
fn set_buffers(udp: &UdpSocket, bytes: usize) {
    let v = bytes.min(i32::MAX as usize) as libc::c_int;
    for (force, plain) in [(libc::SO_RCVBUFFORCE, libc::SO_RCVBUF), (libc::SO_SNDBUFFORCE, libc::SO_SNDBUF)] {
        // SAFETY: setsockopt on our own fd with an int; on failure the
        // kernel keeps its default (docs/wamp.md says what that costs).
        unsafe {
            let p = (&v as *const libc::c_int).cast();
            if libc::setsockopt(udp.as_raw_fd(), libc::SOL_SOCKET, force, p, 4) != 0 {
                libc::setsockopt(udp.as_raw_fd(), libc::SOL_SOCKET, plain, p, 4);
            }
        }
    }
}

fn conn_config(o: &WampOptions, packet_size: usize) -> ConnConfig {
    let overhead = HEADER_LEN + if o.encrypt { TAG_LEN } else { 0 };
    ConnConfig {
        mode: o.cc,
        channels: o.channels,
        max_payload: packet_size - overhead,
        max_frame: o.max_frame,
        window: o.window,
        send_queue: (4 * o.max_frame).max(4 << 20),
        ack_every: o.ack_every,
        ack_delay: o.int_ack_timeout,
        ack_freq: o.ack_freq,
        xmt_timeout: o.xmt_timeout,
        initial_rtt: INITIAL_RTT,
        initial_window: o.initial_window,
        keepalive: o.keepalive,
        peer_timeout: o.peer_timeout,
        fec: o.fec,
    }
}

impl WampTransport {
    /// Moves this rank to a new UDP socket on another port, as a NAT
    /// rebinding looks to its peers: its datagrams come from a new address
    /// and the old one is dead. The peers follow the first sealed packet
    /// from there (transport.rs, `Peer::newest_pn`). For tests.
    #[doc(hidden)]
    pub fn move_to_new_port(&mut self) -> Result<SocketAddr, TransportError> {
        let (udp, _) = reflect::bind_udp(self.opts.publish_addr, None)?;
        udp.set_nonblocking(true)?;
        set_buffers(&udp, self.opts.udp_buf);
        self.poller = Poller::new(udp.as_raw_fd())?;
        self.udp = udp;
        Ok(self.udp.local_addr()?)
    }

    /// Sets up this rank's transport: publishes its endpoint under
    /// `wamp-ep-<rank>`, fences, and waits (at most `opts.setup_timeout`)
    /// until every peer answered a sealed handshake.
    pub fn connect(kv: &mut dyn KeyValue, secret: [u8; 32], opts: WampOptions) -> Result<WampTransport, TransportError> {
        opts.validate()?;
        let (rank, size) = (kv.rank(), kv.size());
        let (udp, wildcard) = reflect::bind_udp(opts.publish_addr, opts.port_range)?;
        udp.set_nonblocking(true)?;
        set_buffers(&udp, opts.udp_buf);
        let nonce = fresh_nonce();
        let mut mine = reflect::udp_candidates(&udp, opts.publish_addr, kv.reflector(), &secret, rank)
            .map_err(|e| TransportError::Setup(format!("wamp: {e}")))?;
        // Behind NAT: our own addresses too, for peers behind the same one.
        let behind_nat = wildcard || mine.len() > 1;
        if behind_nat {
            reflect::add_host_candidates(&mut mine, udp.local_addr()?.port());
        }
        let boot = |e: wanmpi_bootstrap::BootstrapError| TransportError::Setup(format!("bootstrap: {e}"));
        kv.put(&endpoint_key(rank), &format!("{}/{}", reflect::format_candidates(&mine), hex(&nonce))).map_err(boot)?;
        kv.fence().map_err(boot)?;
        let now = Instant::now();
        let mut peers = Vec::with_capacity(size as usize);
        // The route's MTU from the socket's own address (the published one
        // may be on no interface: a 1:1 NAT's).
        let local_ip = udp.local_addr()?.ip();
        let keys: Vec<String> = (0..size).filter(|&r| r != rank).map(endpoint_key).collect();
        let mut eps = kv.get_many(&keys).map_err(boot)?.into_iter();
        for r in 0..size {
            if r == rank {
                peers.push(None);
                continue;
            }
            let ep = eps.next().ok_or_else(|| TransportError::Setup(format!("bootstrap: no endpoint of rank {r}")))?;
            let (cands, peer_nonce) = parse_endpoint(r, &ep)?;
            let addr = cands[0];
            let keys = if opts.encrypt { Keys::derive(&secret, rank, &nonce, r, &peer_nonce) } else { Keys::plain() };
            let packet = if opts.packet_size != 0 { opts.packet_size } else { auto_path_mtu(local_ip, addr) as usize };
            let mut conn = Conn::new(conn_config(&opts, packet.min(MAX_UDP_PAYLOAD as usize)), now);
            conn.ping();
            let nat = cands.len() > 1;
            peers.push(Some(Peer { addr, cands, nat, keys, conn, lost_reported: false, newest_pn: None, rebinds: 0 }));
        }
        let poller = Poller::new(udp.as_raw_fd())?;
        let drops = (opts.drop_rate > 0.0).then(|| rand_chacha::ChaCha8Rng::seed_from_u64(opts.drop_seed ^ rank as u64));
        let mut t = WampTransport {
            rank,
            size,
            caps: Caps { name: "wamp", channels: opts.channels, max_frame: opts.max_frame, eager_limit_hint: EAGER_LIMIT_HINT, reliable: true },
            udp,
            poller,
            peers,
            local: VecDeque::new(),
            rbuf: vec![0; 1 << 16],
            sbuf: Vec::with_capacity(1 << 16),
            stalled: VecDeque::new(),
            stalled_until: None,
            batch: Default::default(),
            // Behind a NAT, one datagram per call: batches sent by
            // segmentation offload through a NAT in the sending host itself
            // (nftables snat, then a device without offload) were lost
            // whole in the emulator while single datagrams passed (a 64 KiB
            // message never arrived; docs/wamp.md), and a rank cannot tell
            // where its NAT is.
            gso: opts.gso && !behind_nat,
            drops,
            refusals: Refusals::default(),
            next_trace: opts.trace.then(Instant::now),
            opts,
            candidates: mine,
            behind_nat,
        };
        t.handshake()?;
        Ok(t)
    }

    fn handshake(&mut self) -> Result<(), TransportError> {
        let start = Instant::now();
        loop {
            self.pump()?;
            let missing: Vec<PeerId> = (0..self.size).filter(|&r| self.peers[r as usize].as_ref().is_some_and(|p| !p.conn.established())).collect();
            if missing.is_empty() {
                return Ok(());
            }
            if let Some((r, reason)) = self.peers.iter().enumerate().find_map(|(r, p)| Some((r, p.as_ref()?.conn.lost()?.to_string()))) {
                return Err(TransportError::PeerLost { peer: r as u32, reason: format!("during wamp setup: {reason}") });
            }
            let waited = start.elapsed();
            // Behind NAT an unanswered peer is no slow start: the path
            // does not open (symmetric NATs on both sides, UDP filtered).
            let nat_here = self.behind_nat;
            let unheard: Vec<PeerId> =
                (0..self.size).filter(|&r| self.peers[r as usize].as_ref().is_some_and(|p| p.newest_pn.is_none() && (nat_here || p.nat))).collect();
            if waited >= self.opts.punch_timeout && !unheard.is_empty() {
                return Err(TransportError::Setup(format!(
                    "wamp: no path from rank {} to {}: {} for {:.1} s and no sealed answer came (NATs that open no path: symmetric on both sides, or UDP filtered; no relay yet); rank {}'s own candidates: {}",
                    self.rank,
                    if unheard.len() == 1 { format!("rank {}", unheard[0]) } else { format!("ranks {unheard:?}") },
                    self.tried(&unheard),
                    waited.as_secs_f64(),
                    self.rank,
                    reflect::format_candidates(&self.candidates),
                )));
            }
            if waited >= self.opts.setup_timeout {
                return Err(TransportError::Setup(format!(
                    "wamp handshake timed out after {:.1} s; no answer from ranks {missing:?} (wrong job secret, unreachable address, or not started); {}",
                    waited.as_secs_f64(),
                    self.tried(&missing),
                )));
            }
            self.wait(Duration::from_millis(50))?;
        }
    }
}

impl WampTransport {
    /// "tried rank 1 at a, b; rank 2 at c" for an error message.
    fn tried(&self, ranks: &[PeerId]) -> String {
        let each: Vec<String> = ranks
            .iter()
            .filter_map(|&r| Some(format!("rank {r} at {}", reflect::format_candidates(&self.peers.get(r as usize)?.as_ref()?.cands))))
            .collect();
        format!("tried {}", each.join("; "))
    }
}

/// Ends every connection: each side's CLOSE goes out once its data is
/// acknowledged; done when every peer's CLOSE arrived and ours was
/// acknowledged, or lost, or at `timeout`. Then a linger of three round
/// trips answers retransmissions of the peers' last packets.
pub(crate) fn shutdown(t: &mut WampTransport, timeout: Duration) -> Result<(), TransportError> {
    let start = Instant::now();
    for p in t.peers.iter_mut().flatten() {
        p.conn.close();
    }
    let settled = |t: &WampTransport| t.peers.iter().flatten().all(|p| p.conn.closed() || p.conn.lost().is_some());
    while !settled(t) && start.elapsed() < timeout {
        t.pump()?;
        t.wait(Duration::from_millis(10))?;
    }
    let unsettled: Vec<usize> =
        t.peers.iter().enumerate().filter(|(_, p)| p.as_ref().is_some_and(|p| !p.conn.closed() && p.conn.lost().is_none())).map(|(r, _)| r).collect();
    // Like TCP's TIME-WAIT: our ACK of a peer's CLOSE may be lost, and the
    // peer then resends its CLOSE after a probe timeout; stay to answer it.
    let srtt = t.peers.iter().flatten().map(|p| p.conn.rtt().srtt).max().unwrap_or_default();
    let linger = Instant::now() + (srtt * 3).clamp(Duration::from_millis(20), timeout.saturating_sub(start.elapsed()).max(Duration::from_millis(20)));
    while Instant::now() < linger {
        t.pump()?;
        t.wait(Duration::from_millis(5))?;
    }
    if t.opts.print_stats {
        eprintln!("{}", crate::stats::report(t));
    }
    if !unsettled.is_empty() {
        eprintln!(
            "wanmpi wamp rank {}: shutdown timed out after {:.1} s; ranks {unsettled:?} did not confirm the close",
            t.rank,
            timeout.as_secs_f64()
        );
    }
    Ok(())
}
