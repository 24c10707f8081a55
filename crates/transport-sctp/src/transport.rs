//! `SctpTransport`: the state of one rank's transport and the `Transport`
//! trait on it. Setup is in setup.rs, the receive pump in pump.rs, teardown
//! in close.rs.

use crate::auth::{self, HELLO_LEN};
use crate::counters::{Counters, PathCounters, PeerCounters, StackCounters, StreamCounters};
use crate::link::Link;
use crate::options::SctpOptions;
use crate::path::{Paths, Probe};
use crate::poller::Poller;
use crate::seal::{Dropped, Opener};
use crate::sock::{would_block, Sock};
use crate::stack::{self, StackUser, TICK};
use std::collections::{HashMap, VecDeque};
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};
use usrsctp_sys as sys;
use wanmpi_transport::{Caps, Incoming, PeerId, SendStatus, Transport, TransportError, FAR_RTT};

/// Something waiting for `poll_recv`, owned.
pub(crate) enum Event {
    Frame { peer: PeerId, channel: u16, bytes: Vec<u8> },
    Lost { peer: PeerId, reason: String },
}

/// What we know of one other rank.
pub(crate) struct Peer {
    pub link: Arc<Link>,
    /// Path failover state; None with a single path (no probes).
    pub paths: Option<Paths>,
    pub sctp_port: u16,
    /// Path MTU (SCTP packet size) used towards this peer.
    pub mtu: u32,
    pub assoc: Option<u32>,
    /// Our HELLO to this peer: our challenge and whether the link is sealed.
    pub hello: [u8; HELLO_LEN],
    /// The peer's HELLO (the first one; repeats are ignored).
    pub peer_hello: Option<[u8; HELLO_LEN]>,
    /// Opens the peer's sealed datagrams (None: a plain link); its sending
    /// half is in `link`.
    pub opener: Option<Opener>,
    /// Datagrams from the peer's address that did not open (forged,
    /// altered, truncated), and those that opened before (replayed).
    pub refused_forged: u64,
    pub refused_replayed: u64,
    pub hello_pending: bool,
    pub proof_pending: Option<[u8; 32]>,
    /// The peer proved the job secret.
    pub verified: bool,
    /// We checked its proof and owe it an ACCEPT.
    pub accept_pending: bool,
    /// The peer accepted our proof: frames may go to it.
    pub accepted: bool,
    /// Frames that arrived before the proof, within the handshake allowance
    /// (none from a rank of this version: it waits for our ACCEPT).
    pub pre_auth: Vec<(u16, Vec<u8>)>,
    /// Bytes received from the peer before its proof, all kinds counted.
    pub pre_auth_bytes: usize,
    /// The most this peer made us hold before its proof (frames held and
    /// unfinished pieces of messages), for the counters.
    pub pre_auth_peak: usize,
    /// We aborted its association (bad proof, too much before the proof, a
    /// message over the frame limit): whatever else comes from it is dropped.
    pub rejected: bool,
    pub lost: Option<String>,
    /// The association is gone (shutdown complete, lost or aborted).
    pub closed: bool,
    /// Every address the peer published for its first path, best first
    /// (the published one, then its reflexive one: endpoint.rs).
    pub cands: Vec<std::net::SocketAddr>,
    /// A datagram from the peer opened (hole punching is done for it).
    pub heard: bool,
    /// Times a sealed datagram moved the peer's address (NAT rebinding).
    pub rebinds: u64,
}

impl Peer {
    /// A peer before its association: not yet proved, nothing held.
    /// `opener`: its datagrams are sealed (the link seals ours).
    pub fn new(link: Arc<Link>, paths: Option<Paths>, sctp_port: u16, mtu: u32, opener: Option<Opener>) -> Peer {
        let sealed = opener.is_some();
        Peer {
            link,
            paths,
            sctp_port,
            mtu,
            assoc: None,
            hello: auth::hello(sealed),
            peer_hello: None,
            opener,
            refused_forged: 0,
            refused_replayed: 0,
            hello_pending: false,
            proof_pending: None,
            verified: false,
            accept_pending: false,
            accepted: false,
            pre_auth: vec![],
            pre_auth_bytes: 0,
            pre_auth_peak: 0,
            rejected: false,
            lost: None,
            closed: false,
            cands: vec![],
            heard: false,
            rebinds: 0,
        }
    }

    /// Counts a datagram from the peer's address that was dropped unopened.
    pub fn refused(&mut self, why: Dropped) {
        match why {
            Dropped::Replayed(_) => self.refused_replayed += 1,
            Dropped::Short | Dropped::Forged => self.refused_forged += 1,
        }
    }

    /// Bytes of the frames held until this peer proves the secret.
    pub fn held_frames(&self) -> usize {
        self.pre_auth.iter().map(|(_, b)| b.len()).sum()
    }
}

/// One rank's sctp transport: one UDP socket, one one-to-many SCTP socket,
/// one association per other rank, streams as channels.
pub struct SctpTransport {
    pub(crate) rank: PeerId,
    pub(crate) size: u32,
    pub(crate) caps: Caps,
    pub(crate) opts: SctpOptions,
    pub(crate) secret: [u8; 32],
    /// One UDP socket per local address, primary first.
    pub(crate) udps: Vec<Arc<UdpSocket>>,
    pub(crate) poller: Poller,
    /// Indexed by rank; `None` for ourselves.
    pub(crate) peers: Vec<Option<Peer>>,
    /// Every published endpoint of every peer: (rank, the peer's address index).
    pub(crate) by_udp: HashMap<SocketAddr, (PeerId, usize)>,
    /// Some peer has several paths: the pump probes them.
    pub(crate) multipath: bool,
    /// Glue datagrams (probes) from sources that are no peer's endpoint.
    pub(crate) stray_probes: u64,
    pub(crate) probe_buf: Vec<(usize, Probe)>,
    pub(crate) by_assoc: HashMap<u32, PeerId>,
    pub(crate) events: VecDeque<Event>,
    /// Partly received messages, by (association, stream).
    pub(crate) reasm: HashMap<(u32, u16), Vec<u8>>,
    pub(crate) notif: Vec<u8>,
    pub(crate) rbuf: Vec<u8>,
    pub(crate) ubuf: Vec<u8>,
    pub(crate) sbuf: Vec<u8>,
    /// Indexed by [rank][stream].
    pub(crate) streams: Vec<Vec<StreamCounters>>,
    pub(crate) shutting_down: bool,
    /// The poller's eventfd is set: `events` got frames outside poll_recv.
    pub(crate) signalled: bool,
    /// Read usrsctp's socket on the next pump even without new input (a
    /// send may have queued a notification).
    pub(crate) must_read: bool,
    /// Closed before `stack` so usrsctp can finish.
    pub(crate) sock: Option<Sock>,
    pub(crate) stack: Option<StackUser>,
}

// SAFETY: the raw usrsctp socket inside `Sock` is only used through `&mut
// self` or `&self` methods of this value; usrsctp itself locks its own state
// and may be called from any thread.
unsafe impl Send for SctpTransport {}

impl SctpTransport {
    pub(crate) fn peer(&self, p: PeerId) -> Result<&Peer, TransportError> {
        self.peers.get(p as usize).and_then(|x| x.as_ref()).ok_or(TransportError::NoSuchPeer(p))
    }

    /// The options this transport runs with.
    pub fn options(&self) -> &SctpOptions {
        &self.opts
    }

    /// A snapshot of every counter.
    pub fn counters(&self) -> Counters {
        let mut peers = vec![];
        for (r, p) in self.peers.iter().enumerate() {
            let Some(p) = p else { continue };
            let s = &p.link.stats;
            let mut c = PeerCounters {
                peer: r as PeerId,
                streams: self.streams[r].clone(),
                datagrams_out: s.datagrams_out.load(Relaxed),
                datagrams_in: s.datagrams_in.load(Relaxed),
                bytes_out: s.bytes_out.load(Relaxed),
                bytes_in: s.bytes_in.load(Relaxed),
                data_chunks_out: s.data_chunks_out.load(Relaxed),
                retransmitted_chunks: s.retransmitted_chunks.load(Relaxed),
                dropped_injected: s.dropped_injected.load(Relaxed),
                udp_send_errors: s.send_errors.load(Relaxed),
                bad_checksums: s.bad_checksums.load(Relaxed),
                sealed: p.opener.is_some(),
                refused_forged: p.refused_forged,
                refused_replayed: p.refused_replayed,
                held_before_proof_peak: p.pre_auth_peak as u64,
                addr: p.link.paths.first().map(|lp| lp.dest()),
                rebinds: p.rebinds,
                ..Default::default()
            };
            if let Some(ps) = &p.paths {
                c.path_switches = ps.switches;
                c.last_switch = ps.last_switch;
                c.active_path = ps.active;
                c.bad_probes = ps.bad_probes;
                for (i, (lp, st)) in p.link.paths.iter().zip(&ps.paths).enumerate() {
                    let ls = &lp.stats;
                    c.paths.push(PathCounters {
                        local: lp.udp.local_addr().ok(),
                        remote: Some(lp.dest()),
                        active: i == ps.active,
                        up: st.up,
                        datagrams_out: ls.datagrams_out.load(Relaxed),
                        bytes_out: ls.bytes_out.load(Relaxed),
                        datagrams_in: ls.datagrams_in.load(Relaxed),
                        bytes_in: ls.bytes_in.load(Relaxed),
                        cut_drops: ls.cut_drops.load(Relaxed),
                        copies_out: ls.copies_out.load(Relaxed),
                        probes_out: st.probes_out,
                        acks_in: st.acks_in,
                        probes_in: st.probes_in,
                        went_down: st.went_down,
                        srtt: st.srtt,
                    });
                }
            }
            if let (Some(a), Some(sock)) = (p.assoc.filter(|_| !p.closed), self.sock.as_ref()) {
                if let Ok(st) = sock.info::<sys::sctp_status>(a, sys::SCTP_STATUS) {
                    c.srtt_ms = st.sstat_primary.spinfo_srtt;
                    c.rto_ms = st.sstat_primary.spinfo_rto;
                    c.cwnd = st.sstat_primary.spinfo_cwnd;
                    c.mtu = st.sstat_primary.spinfo_mtu;
                }
            }
            peers.push(c);
        }
        Counters { rank: self.rank, peers, stray_probes: self.stray_probes, stack: StackCounters::from_stat(&stack::global_stats()) }
    }

    /// The primary UDP endpoint this rank published.
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.udps[0].local_addr()
    }

    /// Every UDP endpoint this rank published, primary first.
    pub fn local_addrs(&self) -> std::io::Result<Vec<SocketAddr>> {
        self.udps.iter().map(|u| u.local_addr()).collect()
    }

    /// Test hook: when the fault-injection cut (option `fault_cut_path`)
    /// of the link to `peer` starts and ends.
    pub fn fault_cut_window(&self, peer: PeerId) -> Option<(Instant, Option<Instant>)> {
        let c = self.peer(peer).ok()?.link.cut_window()?;
        Some((c.from, c.until))
    }

    /// Where the primary path's datagrams to `peer` go now, and how many
    /// times a sealed datagram moved that (a NAT rebinding).
    pub fn peer_addr(&self, peer: PeerId) -> Option<(std::net::SocketAddr, u64)> {
        let p = self.peer(peer).ok()?;
        Some((p.link.paths.first()?.dest(), p.rebinds))
    }

    /// Whether the packets to and from `peer` are sealed (None: the
    /// association is not up yet, before the peer's HELLO).
    pub fn sealed(&self, peer: PeerId) -> Option<bool> {
        let p = self.peer(peer).ok()?;
        p.peer_hello.map(|_| p.link.sealed())
    }

    fn send_frame(&mut self, peer: PeerId, channel: u16, parts: &[&[u8]]) -> Result<SendStatus, TransportError> {
        let p = self.peers.get(peer as usize).and_then(Option::as_ref).ok_or(TransportError::NoSuchPeer(peer))?;
        if let Some(reason) = &p.lost {
            return Err(TransportError::PeerLost { peer, reason: reason.clone() });
        }
        let assoc = p.assoc.ok_or_else(|| TransportError::PeerLost { peer, reason: "no association".into() })?;
        let data: &[u8] = if parts.len() == 1 {
            parts[0]
        } else {
            // Borrows `peers` alone, so `sbuf` can hold the joined parts.
            self.sbuf.clear();
            for part in parts {
                self.sbuf.extend_from_slice(part);
            }
            &self.sbuf
        };
        let (len, wire) = (parts.iter().map(|p| p.len()).sum::<usize>(), data.len());
        let sock = self.sock.as_ref().ok_or_else(|| TransportError::Setup("transport is shut down".into()))?;
        match sock.send(assoc, channel, auth::PPID_FRAME, 0, data) {
            Ok(n) if n == wire => {
                let c = &mut self.streams[peer as usize][channel as usize];
                c.frames_sent += 1;
                c.bytes_sent += len as u64;
                Ok(SendStatus::Sent)
            }
            Ok(n) => Err(TransportError::Io(std::io::Error::other(format!("usrsctp took {n} of {wire} bytes")))),
            Err(e) if would_block(&e) || e.raw_os_error() == Some(libc::ENOBUFS) => Ok(SendStatus::WouldBlock),
            Err(e) if e.raw_os_error() == Some(libc::EMSGSIZE) => Err(TransportError::FrameTooLarge { len, max: self.caps.max_frame }),
            Err(e) => Err(TransportError::Io(e)),
        }
    }

    /// After a pump outside poll_recv: frames it queued must wake a caller
    /// sleeping on the readiness fd (measured: 1-byte round trips of ~5 ms,
    /// half the tick, when flush took the datagram and nobody woke).
    fn signal_if_waiting(&mut self) {
        if !self.events.is_empty() && !self.signalled {
            self.poller.signal();
            self.signalled = true;
        }
    }

    /// Whether any association still has data queued or unacknowledged.
    fn data_in_flight(&self) -> bool {
        let Some(sock) = self.sock.as_ref() else { return false };
        self.peers
            .iter()
            .flatten()
            .filter(|p| !p.closed)
            .filter_map(|p| p.assoc)
            .any(|a| sock.info::<sys::sctp_status>(a, sys::SCTP_STATUS).map(|s| s.sstat_unackdata > 0 || s.sstat_penddata > 0).unwrap_or(false))
    }
}

impl Transport for SctpTransport {
    fn caps(&self) -> &Caps {
        &self.caps
    }

    fn rank(&self) -> PeerId {
        self.rank
    }

    fn size(&self) -> u32 {
        self.size
    }

    fn try_send(&mut self, peer: PeerId, channel: u16, parts: &[&[u8]]) -> Result<SendStatus, TransportError> {
        if peer >= self.size {
            return Err(TransportError::NoSuchPeer(peer));
        }
        if channel >= self.caps.channels {
            return Err(TransportError::NoSuchChannel { channel, channels: self.caps.channels });
        }
        let len: usize = parts.iter().map(|p| p.len()).sum();
        if len > self.caps.max_frame {
            return Err(TransportError::FrameTooLarge { len, max: self.caps.max_frame });
        }
        stack::tick();
        if peer == self.rank {
            // Self-send never touches the network; the event queue keeps order.
            let c = &mut self.streams[peer as usize][channel as usize];
            c.frames_sent += 1;
            c.bytes_sent += len as u64;
            c.frames_received += 1;
            c.bytes_received += len as u64;
            self.events.push_back(Event::Frame { peer, channel, bytes: parts.concat() });
            return Ok(SendStatus::Sent);
        }
        let status = self.send_frame(peer, channel, parts)?;
        if status == SendStatus::WouldBlock {
            // SACKs may be waiting in the UDP socket: take them and retry once.
            self.pump()?;
            self.signal_if_waiting();
            return self.send_frame(peer, channel, parts);
        }
        Ok(status)
    }

    fn poll_recv(&mut self, sink: &mut dyn FnMut(Incoming<'_>)) -> Result<usize, TransportError> {
        self.pump()?;
        let mut n = 0;
        if self.signalled {
            self.poller.unsignal();
            self.signalled = false;
        }
        while let Some(ev) = self.events.pop_front() {
            match ev {
                Event::Frame { peer, channel, bytes } => sink(Incoming::Frame { peer, channel, bytes: &bytes }),
                Event::Lost { peer, reason } => sink(Incoming::PeerLost { peer, reason }),
            }
            n += 1;
        }
        Ok(n)
    }

    fn flush(&mut self) -> Result<bool, TransportError> {
        self.pump()?;
        self.signal_if_waiting();
        Ok(self.data_in_flight())
    }

    fn wait(&mut self, timeout: Duration) -> Result<(), TransportError> {
        let deadline = Instant::now() + timeout;
        loop {
            if !self.events.is_empty() {
                return Ok(());
            }
            let left = deadline.saturating_duration_since(Instant::now());
            self.poller.wait(left.min(TICK))?;
            if self.pump()? > 0 || Instant::now() >= deadline {
                return Ok(());
            }
        }
    }

    fn readiness_fd(&self) -> Option<i32> {
        Some(self.poller.fd())
    }

    /// usrsctp runs only when called (AF_CONN, no threads of its own):
    /// SACKs, retransmissions and its timers wait while a rank computes
    /// without MPI calls, and a peer 80 ms away waits with them. So, as
    /// wamp does, a peer whose smoothed round trip (from the association's
    /// setup) reaches FAR_RTT asks for the progress thread; on loopback the
    /// srtt is 0 ms and the thread stays off.
    fn wants_progress_thread(&self) -> bool {
        let Some(sock) = self.sock.as_ref() else { return false };
        self.peers.iter().flatten().filter(|p| !p.closed).filter_map(|p| p.assoc).any(|a| {
            sock.info::<sys::sctp_status>(a, sys::SCTP_STATUS)
                .is_ok_and(|st| Duration::from_millis(u64::from(st.sstat_primary.spinfo_srtt)) >= FAR_RTT)
        })
    }

    /// The association's smoothed round trip (usrsctp's, in whole ms: the
    /// middle of that millisecond, so an established association that
    /// reads 0 counts as measured and near) or the glue's probe-measured
    /// one when it has several paths; loss is DATA chunks sent again over
    /// those sent. The runtime grants a far peer its WAN window from this
    /// (without it every long message to an sctp peer paid a rendezvous
    /// round trip: a 128 KiB farm at 20 ms ran 2.8x its compute bound).
    fn path(&self, peer: PeerId) -> Option<wanmpi_transport::PathStats> {
        let p = self.peers.get(peer as usize)?.as_ref().filter(|p| !p.closed)?;
        let (a, sock) = (p.assoc?, self.sock.as_ref()?);
        let st = sock.info::<sys::sctp_status>(a, sys::SCTP_STATUS).ok()?;
        let glue = p.paths.as_ref().and_then(|ps| ps.paths.get(ps.active)).and_then(|s| s.srtt);
        let whole_ms = Duration::from_micros(u64::from(st.sstat_primary.spinfo_srtt) * 1000 + 500);
        let srtt = glue.filter(|g| !g.is_zero()).unwrap_or(whole_ms);
        let s = &p.link.stats;
        let (sent, again) = (s.data_chunks_out.load(Relaxed), s.retransmitted_chunks.load(Relaxed));
        let loss = if sent == 0 { 0.0 } else { again as f64 / sent as f64 };
        Some(wanmpi_transport::PathStats { srtt, min_rtt: Duration::ZERO, loss, sent, delivery_rate: 0.0 })
    }

    /// DATA chunks usrsctp sent again to `peer` (the composite above, or
    /// the runtime, counts the frames).
    fn tally(&self, peer: PeerId, sink: &mut wanmpi_transport::TallySink<'_>) {
        if let Some(Some(p)) = self.peers.get(peer as usize) {
            let retransmits = p.link.stats.retransmitted_chunks.load(Relaxed);
            sink(self.caps.name, wanmpi_transport::Tally { retransmits, ..Default::default() });
        }
    }

    fn peer_failed(&mut self, peer: PeerId) {
        self.lose(peer, "its process ended (the launcher saw it)".into());
        self.close_peer(peer);
    }

    fn shutdown(&mut self, timeout: Duration) -> Result<(), TransportError> {
        self.shutdown_gracefully(timeout)
    }
}
