//! `WampTransport`: one UDP socket, one `Conn` per peer, and the `Transport`
//! trait on them. Each call pumps: datagrams in (opened, handed to their
//! peer's `Conn`), timers, datagrams out. Setup is in setup.rs.

use crate::conn::Conn;
use crate::options::WampOptions;
use crate::packet::{Header, Kind, HEADER_LEN};
use crate::poller::Poller;
use crate::seal::Keys;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use std::collections::VecDeque;
use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};
use wanmpi_transport::{Caps, Incoming, PeerId, SendStatus, Transport, TransportError, FAR_RTT};

/// Datagrams read per pump at most, so sending is not starved.
const RECV_BATCH: usize = 512;
/// Datagrams sent to one peer per pump at most.
const SEND_BATCH: usize = 256;

pub(crate) struct Peer {
    pub addr: SocketAddr,
    /// Every address the peer published, best first: until the peer is
    /// heard (`newest_pn`), each datagram to it goes to all of them.
    pub cands: Vec<SocketAddr>,
    /// The peer published a reflexive candidate: a NAT is in its path.
    pub nat: bool,
    pub keys: Keys,
    pub conn: Conn,
    pub lost_reported: bool,
    /// The highest packet number that opened and was taken: a sealed
    /// packet newer than any before, from another address, moves `addr`
    /// there (a NAT rebinding or a new route; a replay is never newer).
    pub newest_pn: Option<u64>,
    /// How many times `addr` moved.
    pub rebinds: u64,
}

/// Equal-sized datagrams to one address (the last may be shorter), sent by
/// one `gso::send_segments` call.
#[derive(Default)]
pub(crate) struct Batch {
    to: Option<SocketAddr>,
    buf: Vec<u8>,
    seg: usize,
    n: usize,
    /// A shorter datagram ended it: nothing may follow.
    closed: bool,
}

impl Batch {
    fn segments(&self) -> impl Iterator<Item = &[u8]> {
        self.buf.chunks(self.seg.max(1))
    }
}

/// Datagrams refused before reaching a connection.
#[derive(Debug, Default, Clone)]
pub struct Refusals {
    /// Not a wamp datagram, or not for us, or from no rank of the job.
    pub strays: u64,
    /// Failed to open: forged, corrupted, or sealed under other keys.
    pub forged: u64,
    /// Opened but refused by the connection (duplicate/replay, malformed, no room).
    pub duplicates: u64,
    pub malformed: u64,
    pub no_room: u64,
}

pub struct WampTransport {
    pub(crate) rank: PeerId,
    pub(crate) size: u32,
    pub(crate) caps: Caps,
    pub(crate) opts: WampOptions,
    pub(crate) udp: UdpSocket,
    pub(crate) poller: Poller,
    pub(crate) peers: Vec<Option<Peer>>,
    pub(crate) local: VecDeque<(u16, Vec<u8>)>,
    pub(crate) rbuf: Vec<u8>,
    pub(crate) sbuf: Vec<u8>,
    /// Datagrams the socket refused (buffer full), sent first next time.
    pub(crate) stalled: VecDeque<(SocketAddr, Vec<u8>)>,
    pub(crate) stalled_until: Option<Instant>,
    /// Datagrams to one peer gathered for one segmentation-offload call.
    pub(crate) batch: Batch,
    /// The kernel takes UDP_SEGMENT (switched off at its first refusal).
    pub(crate) gso: bool,
    pub(crate) drops: Option<ChaCha8Rng>,
    pub(crate) refusals: Refusals,
    /// When to print the next trace line (None: tracing off).
    pub(crate) next_trace: Option<Instant>,
    /// What this rank published: where peers may reach it, best first.
    pub(crate) candidates: Vec<SocketAddr>,
    /// A NAT is between this rank and the others: the published address
    /// is on no interface (a 1:1 NAT's public one, the socket is on the
    /// wildcard), or the reflector saw another address.
    pub(crate) behind_nat: bool,
}

/// Sends one datagram; false when the socket's buffer is full.
fn send_one(udp: &UdpSocket, to: SocketAddr, d: &[u8]) -> Result<bool, TransportError> {
    match udp.send_to(d, to) {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock || e.raw_os_error() == Some(libc::ENOBUFS) => Ok(false),
        // A refused, unreachable or filtered destination is a lost
        // datagram: the peer's silence, not this error, decides whether
        // it is gone (a route may come back).
        Err(e) if matches!(e.raw_os_error(), Some(libc::ECONNREFUSED | libc::ENETUNREACH | libc::EHOSTUNREACH | libc::EPERM)) => Ok(true),
        Err(e) => Err(e.into()),
    }
}

impl WampTransport {
    pub fn options(&self) -> &WampOptions {
        &self.opts
    }

    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.udp.local_addr()
    }

    /// Datagrams refused so far: strays and forgeries here, the rest as
    /// each connection counted them.
    pub fn refusals(&self) -> Refusals {
        let mut r = self.refusals.clone();
        for p in self.peers.iter().flatten() {
            let st = &p.conn.stats;
            r.duplicates += st.duplicates;
            r.malformed += st.malformed;
            r.no_room += st.refused_no_room;
        }
        r
    }

    /// Where `peer`'s datagrams go now, and how many times that moved.
    pub fn peer_addr(&self, peer: PeerId) -> Option<(SocketAddr, u64)> {
        self.peers.get(peer as usize)?.as_ref().map(|p| (p.addr, p.rebinds))
    }

    /// The connection to `peer` (tests and stats).
    pub fn conn(&self, peer: PeerId) -> Option<&Conn> {
        self.peers.get(peer as usize)?.as_ref().map(|p| &p.conn)
    }

    /// Datagrams in, timers, datagrams out.
    pub(crate) fn pump(&mut self) -> Result<(), TransportError> {
        self.take_input()?;
        self.transmit()?;
        self.rearm();
        Ok(())
    }

    /// Datagrams in and timers, without sending.
    fn take_input(&mut self) -> Result<(), TransportError> {
        self.trace();
        self.receive()?;
        let now = Instant::now();
        for p in self.peers.iter_mut().flatten() {
            p.conn.on_timeout(now);
        }
        Ok(())
    }

    /// With WANMPI_WAMP_TRACE=1, each connection's sender state once a second.
    fn trace(&mut self) {
        let Some(next) = self.next_trace else { return };
        let now = Instant::now();
        if now < next {
            return;
        }
        self.next_trace = Some(now + Duration::from_secs(1));
        for (r, p) in self.peers.iter().enumerate() {
            if let Some(p) = p {
                eprintln!("wamp trace rank {} -> {r}: {}", self.rank, p.conn.trace_line());
            }
        }
    }

    fn receive(&mut self) -> Result<(), TransportError> {
        for _ in 0..RECV_BATCH {
            let (n, from) = match self.udp.recv_from(&mut self.rbuf) {
                Ok(got) => got,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                // ICMP errors for earlier sends (port unreachable): the
                // peer's liveness is judged by its silence instead.
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => continue,
                Err(e) => return Err(e.into()),
            };
            let now = Instant::now();
            let (rank, refusals) = (self.rank, &mut self.refusals);
            let buf = &mut self.rbuf[..n];
            let h = match Header::parse(buf) {
                Ok(h) if h.to == rank => h,
                _ => {
                    refusals.strays += 1;
                    continue;
                }
            };
            let Some(Some(p)) = self.peers.get_mut(h.from as usize) else {
                refusals.strays += 1;
                continue;
            };
            let want = if p.keys.encrypting() { Kind::Sealed } else { Kind::Plain };
            if h.kind != want {
                refusals.forged += 1;
                continue;
            }
            let Ok(range) = p.keys.open(h.pn, buf, HEADER_LEN) else {
                refusals.forged += 1;
                continue;
            };
            // A refused datagram is counted by its connection (refusals()).
            let taken = p.conn.on_datagram(now, h.pn, &buf[range]).is_ok();
            if taken && p.newest_pn.is_none_or(|n| h.pn > n) {
                // The first packet heard ends hole punching: its source,
                // whichever candidate it was (or none: a NAT that mapped
                // us a new port), is where the peer's datagrams go.
                let first = p.newest_pn.is_none();
                p.newest_pn = Some(h.pn);
                // Only a sealed packet proves who sent it.
                let same = |a: SocketAddr, b: SocketAddr| a.ip().to_canonical() == b.ip().to_canonical() && a.port() == b.port();
                if !same(from, p.addr) && p.keys.encrypting() {
                    p.addr = from;
                    if !first {
                        p.rebinds += 1;
                    }
                }
            }
        }
        Ok(())
    }

    fn transmit(&mut self) -> Result<(), TransportError> {
        let now = Instant::now();
        if self.stalled_until.is_some_and(|t| now < t) {
            return Ok(());
        }
        self.stalled_until = None;
        while let Some((to, d)) = self.stalled.pop_front() {
            if !send_one(&self.udp, to, &d)? {
                self.stalled.push_front((to, d));
                self.stalled_until = Some(now + self.opts.overflow_timeout);
                return Ok(());
            }
        }
        let mut sbuf = std::mem::take(&mut self.sbuf);
        let result = self.transmit_all(now, &mut sbuf);
        self.sbuf = sbuf;
        result
    }

    fn transmit_all(&mut self, now: Instant, sbuf: &mut Vec<u8>) -> Result<(), TransportError> {
        for i in 0..self.peers.len() {
            for _ in 0..SEND_BATCH {
                let Some(p) = self.peers[i].as_mut() else { break };
                let pn = p.conn.next_pn();
                sbuf.clear();
                let kind = if p.keys.encrypting() { Kind::Sealed } else { Kind::Plain };
                Header { kind, from: self.rank, to: i as u32, pn }.emit(sbuf);
                if !p.conn.poll_transmit(now, sbuf) {
                    break;
                }
                p.keys.seal(pn, sbuf, HEADER_LEN);
                let to = p.addr;
                if p.newest_pn.is_none() {
                    // Hole punching: a copy to every other candidate (the
                    // handshake's pings, at the probe timeout's pace).
                    for &c in p.cands.iter().filter(|&&c| c != to) {
                        send_one(&self.udp, c, sbuf)?;
                    }
                }
                if let Some(rng) = &mut self.drops {
                    if rng.gen::<f64>() < self.opts.drop_rate {
                        continue;
                    }
                }
                if !self.queue_out(now, to, sbuf)? {
                    return Ok(());
                }
            }
            if !self.flush_batch(now)? {
                return Ok(());
            }
        }
        Ok(())
    }

    /// Sends a datagram, or gathers it into the batch; false once the
    /// socket refused something (sending stops until `stalled_until`).
    fn queue_out(&mut self, now: Instant, to: SocketAddr, d: &[u8]) -> Result<bool, TransportError> {
        if !self.gso {
            if send_one(&self.udp, to, d)? {
                return Ok(true);
            }
            self.stalled.push_back((to, d.to_vec()));
            self.stalled_until = Some(now + self.opts.overflow_timeout);
            return Ok(false);
        }
        let b = &self.batch;
        let fits = b.n == 0
            || (b.to == Some(to)
                && !b.closed
                && d.len() <= b.seg
                && b.n < crate::gso::MAX_SEGMENTS
                && b.buf.len() + d.len() <= crate::gso::MAX_BYTES);
        if !fits && !self.flush_batch(now)? {
            // The refused batch waits in `stalled`; this one follows it.
            self.stalled.push_back((to, d.to_vec()));
            return Ok(false);
        }
        let b = &mut self.batch;
        if b.n == 0 {
            b.to = Some(to);
            b.seg = d.len();
        }
        b.buf.extend_from_slice(d);
        b.n += 1;
        b.closed = d.len() < b.seg;
        Ok(true)
    }

    /// Sends the gathered batch; false when the socket refused it (its
    /// datagrams then wait in `stalled`).
    fn flush_batch(&mut self, now: Instant) -> Result<bool, TransportError> {
        let Some(to) = self.batch.to else { return Ok(true) };
        let sent = if self.batch.n == 1 {
            send_one(&self.udp, to, &self.batch.buf)?
        } else {
            match crate::gso::send_segments(&self.udp, to, &self.batch.buf, self.batch.seg as u16) {
                Ok(_) => true,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock || e.raw_os_error() == Some(libc::ENOBUFS) => false,
                Err(e) if matches!(e.raw_os_error(), Some(libc::ECONNREFUSED | libc::ENETUNREACH | libc::EHOSTUNREACH | libc::EPERM)) => true,
                // EIO, EINVAL, EOPNOTSUPP: no offload on this path or kernel;
                // one datagram per call from now on.
                Err(_) => {
                    self.gso = false;
                    false
                }
            }
        };
        if !sent {
            let segs: Vec<Vec<u8>> = self.batch.segments().map(|s| s.to_vec()).collect();
            self.stalled.extend(segs.into_iter().map(|s| (to, s)));
            if self.gso {
                self.stalled_until = Some(now + self.opts.overflow_timeout);
            }
        }
        self.batch.buf.clear();
        self.batch.n = 0;
        self.batch.to = None;
        self.batch.closed = false;
        Ok(sent)
    }

    fn next_deadline(&mut self, now: Instant) -> Option<Instant> {
        let mut d = self.stalled_until;
        for p in self.peers.iter_mut().flatten() {
            if let Some(t) = p.conn.deadline(now) {
                d = Some(d.map_or(t, |x| x.min(t)));
            }
        }
        d
    }

    fn rearm(&mut self) {
        let now = Instant::now();
        let d = self.next_deadline(now);
        self.poller.arm(now, d);
    }

    fn check_peer(&self, peer: PeerId) -> Result<&Peer, TransportError> {
        self.peers.get(peer as usize).and_then(|p| p.as_ref()).ok_or(TransportError::NoSuchPeer(peer))
    }
}

impl Transport for WampTransport {
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
        self.caps.check_frame(channel, parts)?;
        if peer == self.rank {
            self.local.push_back((channel, parts.concat()));
            return Ok(SendStatus::Sent);
        }
        let p = self.check_peer(peer)?;
        if let Some(reason) = p.conn.lost() {
            return Err(TransportError::PeerLost { peer, reason: reason.to_string() });
        }
        let p = self.peers[peer as usize].as_mut().expect("checked");
        if !p.conn.offer(channel, parts) {
            self.pump()?;
            return Ok(SendStatus::WouldBlock);
        }
        self.transmit()?;
        self.rearm();
        Ok(SendStatus::Sent)
    }

    fn peer_failed(&mut self, peer: PeerId) {
        if let Some(Some(p)) = self.peers.get_mut(peer as usize) {
            p.conn.abandon("its process ended (the launcher saw it)");
            p.lost_reported = true;
        }
    }

    fn poll_recv(&mut self, sink: &mut dyn FnMut(Incoming<'_>)) -> Result<usize, TransportError> {
        self.take_input()?;
        let mut n = 0;
        while let Some((channel, bytes)) = self.local.pop_front() {
            sink(Incoming::Frame { peer: self.rank, channel, bytes: &bytes });
            n += 1;
        }
        for (i, p) in self.peers.iter_mut().enumerate() {
            let Some(p) = p else { continue };
            while let Some((channel, bytes)) = p.conn.pop_frame() {
                sink(Incoming::Frame { peer: i as u32, channel, bytes: &bytes });
                p.conn.recycle(bytes);
                n += 1;
            }
            if let (Some(reason), false) = (p.conn.lost(), p.lost_reported) {
                p.lost_reported = true;
                sink(Incoming::PeerLost { peer: i as u32, reason: format!("wamp: rank {i} at {}: {reason}", p.addr) });
                n += 1;
            }
        }
        // Sent after delivering: that may have freed credit worth announcing.
        self.transmit()?;
        self.rearm();
        Ok(n)
    }

    fn flush(&mut self) -> Result<bool, TransportError> {
        self.pump()?;
        Ok(!self.stalled.is_empty() || self.peers.iter().flatten().any(|p| p.conn.lost().is_none() && p.conn.busy()))
    }

    fn wait(&mut self, timeout: Duration) -> Result<(), TransportError> {
        if !self.local.is_empty() {
            return Ok(());
        }
        let now = Instant::now();
        let t = self.next_deadline(now).map_or(timeout, |d| d.saturating_duration_since(now).min(timeout));
        self.poller.arm(now, None);
        self.poller.wait(t)?;
        Ok(())
    }

    fn readiness_fd(&self) -> Option<i32> {
        Some(self.poller.fd())
    }

    fn path(&self, peer: PeerId) -> Option<wanmpi_transport::PathStats> {
        let c = self.conn(peer)?;
        Some(wanmpi_transport::PathStats {
            srtt: c.rtt().srtt,
            min_rtt: c.rtt().min,
            loss: c.loss_rate(),
            sent: c.stats.packets_sent,
            delivery_rate: c.bandwidth(),
        })
    }

    /// Our acknowledgements and resends run only when called: a rank that
    /// computes without MPI calls stalls its peers meanwhile. Across a WAN
    /// that costs far more than the thread (the plain-MPI farm at 80 ms / 2 %
    /// loss: 1.39x its compute bound without, 1.04x with); on one host the
    /// thread's lock traffic costs more than it saves (1-byte loopback round
    /// trip 33 -> 56 us), so only a far peer turns it on.
    fn wants_progress_thread(&self) -> bool {
        self.peers.iter().flatten().any(|p| p.conn.rtt().min >= FAR_RTT)
    }

    /// Chunks resent to `peer`, and packets rebuilt from its repair
    /// packets (FEC) without a resend.
    fn tally(&self, peer: PeerId, sink: &mut wanmpi_transport::TallySink<'_>) {
        if let Some(c) = self.conn(peer) {
            let t = wanmpi_transport::Tally { retransmits: c.stats.chunks_resent, repairs: c.stats.recovered, ..Default::default() };
            sink(self.caps.name, t);
        }
    }

    fn shutdown(&mut self, timeout: Duration) -> Result<(), TransportError> {
        crate::setup::shutdown(self, timeout)
    }
}
