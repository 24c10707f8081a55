//! `TcpTransport`: the connected job, and its `Transport` implementation:
//! per peer, the frame stream (`stream`) and the connection carrying it;
//! a connection that breaks under the job is replaced (`redial`) and the
//! stream resumes on the new one.

use crate::options::TcpOptions;
use crate::redial::{Redial, HS_BASE, LISTENER, TIMER};
use crate::rx::{RxBuf, RxError, DRAIN_BUDGET, RX_BUF};
use crate::seal::Keys;
use crate::setup;
use crate::stream::{parse_ack, Stream, CONTROL};
use crate::sys::{Epoll, EventFd, Events, READ, WRITE};
use crate::tx::TxState;
use socket2::Socket;
use std::collections::VecDeque;
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};
use wanmpi_bootstrap::KeyValue;
use wanmpi_transport::{Caps, Incoming, PeerId, SendStatus, Transport, TransportError};

/// epoll token of the self-send wake-up; peers use their rank as token
/// (the others are `redial`'s).
const WAKE: u64 = u64::MAX - 1;

/// The engine's default eager limit; tcp has no reason to suggest another.
const EAGER_HINT: usize = 64 * 1024;

pub(crate) struct Conn {
    pub(crate) sock: Socket,
    rx: RxBuf,
    pub(crate) tx: TxState,
    /// The last try_send was refused for a full socket: wake `wait` once
    /// it drains.
    blocked: bool,
    /// Whether epoll currently watches writability (only while a residual
    /// or a backlog waits or a send was refused, so an idle writable
    /// socket never spins).
    writing: bool,
}

impl Conn {
    pub(crate) fn new(sock: Socket, keys: Option<Box<Keys>>) -> Conn {
        let (sealer, opener) = keys.map(|k| (k.sealer, k.opener)).unzip();
        Conn { sock, rx: RxBuf::new(RX_BUF, opener), tx: TxState::new(sealer), blocked: false, writing: false }
    }
}

/// One other rank: its frame stream, which outlives connections, and the
/// connection carrying it now, if any.
pub(crate) struct Peer {
    pub(crate) conn: Option<Conn>,
    pub(crate) stream: Stream,
    /// While there is no connection: since when, and why it broke.
    pub(crate) down: Option<(Instant, String)>,
    /// Reported lost (once), with why; nothing more is sent or received.
    pub(crate) lost: Option<String>,
    /// Whether the connection is (was last) sealed.
    pub(crate) sealed: bool,
    /// Where the peer was last reached, for messages.
    pub(crate) addr: String,
    /// Where this rank redials the peer after a break: every target, the
    /// one that worked at setup first (both sides of a pair redial, the
    /// higher rank after `reverse_delay`; `pair`).
    pub(crate) dial: Vec<crate::targets::Target>,
    /// How the peer was reached at setup (`WANMPI_STATS`).
    pub(crate) path: Option<crate::setup::Path>,
    /// The peer runs on this host: a refused redial means its process is gone.
    pub(crate) same_host: bool,
    /// The last connection's smoothed round trip, when it broke (how long
    /// a redial's SYN may take).
    pub(crate) rtt: Duration,
}

pub(crate) enum Slot {
    Me,
    Peer(Box<Peer>),
}

/// One rank's TCP connections to every other rank of the job.
///
/// Use: [`TcpTransport::connect`] once at start-up (every rank at the same
/// time: it meets the others through the key/value exchange), then the
/// [`Transport`] calls from the progress loop.
pub struct TcpTransport {
    pub(crate) rank: PeerId,
    pub(crate) caps: Caps,
    pub(crate) opts: TcpOptions,
    pub(crate) epoll: Epoll,
    wake: EventFd,
    pub(crate) events: Events,
    ready: Vec<(u64, u32)>,
    pub(crate) peers: Vec<Slot>,
    self_queue: VecDeque<Vec<u8>>,
    /// Peers lost but not yet reported through `poll_recv`.
    pub(crate) losses: VecDeque<(PeerId, String)>,
    /// Redials, their handshakes and deadlines (`redial`).
    pub(crate) redial: Redial,
    pub(crate) reconnects: u64,
}

impl TcpTransport {
    /// Listens, publishes `tcp-ep-<rank>`, fences, and connects to every
    /// other rank, each connection authenticated with `secret`. Returns when
    /// all peers are connected, or fails after `opts.setup_timeout`.
    pub fn connect(kv: &mut dyn KeyValue, secret: [u8; 32], mut opts: TcpOptions) -> Result<TcpTransport, TransportError> {
        if opts.max_frame == 0 || opts.max_frame >= CONTROL as usize {
            // The top bit of a length prefix marks control frames (`stream`).
            return Err(TransportError::Setup(format!("max_frame {} must be in 1..2^31", opts.max_frame)));
        }
        let rank = kv.rank();
        let epoll = Epoll::new()?;
        let wake = EventFd::new()?;
        let est = setup::establish(kv, &secret, &opts, &epoll)?;
        if est.behind_nat {
            // Redials too: this rank may be reachable only by dialling out.
            opts.reverse_delay = Duration::ZERO;
        }
        epoll.add(wake.raw_fd(), WAKE, READ)?;
        let mut peers = Vec::with_capacity(est.conns.len());
        for (r, sock) in est.conns.into_iter().enumerate() {
            peers.push(match sock {
                None => Slot::Me,
                Some((sock, keys)) => {
                    epoll.add(sock.as_raw_fd(), r as u64, READ)?;
                    // Best effort: without it, a silent path waits out the
                    // kernel's own retransmissions before the redial.
                    let _ = setup::watch_silence(&sock, &opts);
                    let path = est.paths[r];
                    let mut dial = est.targets[r].clone();
                    if let Some(crate::setup::Path::Dialled(t)) = path {
                        // What worked is tried first again (all at once, still).
                        dial.retain(|x| *x != t);
                        dial.insert(0, t);
                    }
                    let remote = sock.peer_addr().ok().and_then(|a| a.as_socket());
                    let same_host = match opts.maps.host.as_ref().and_then(|h| Some((h.get(rank as usize)?, h.get(r)?))) {
                        Some((a, b)) => a == b,
                        None => remote.is_some_and(|a| a.ip().to_canonical().is_loopback()),
                    };
                    let addr = remote.or(dial.first().map(|t| t.addr)).map_or_else(|| "?".to_string(), |a| a.to_string());
                    Slot::Peer(Box::new(Peer {
                        sealed: keys.is_some(),
                        conn: Some(Conn::new(sock, keys)),
                        stream: Stream::default(),
                        down: None,
                        lost: None,
                        addr,
                        dial,
                        path,
                        same_host,
                        rtt: Duration::ZERO,
                    }))
                }
            });
        }
        if opts.report {
            let open = |want: bool| -> Vec<u32> {
                (0..peers.len() as u32).filter(|&r| matches!(&peers[r as usize], Slot::Peer(p) if p.sealed == want)).collect()
            };
            eprintln!("wanmpi tcp: rank {rank}: sealed (AES-128-GCM) to ranks {:?}, plain to ranks {:?}", open(true), open(false));
            for (r, slot) in peers.iter().enumerate() {
                if let Slot::Peer(p) = slot {
                    let how = p.path.map_or_else(|| "?".to_string(), |x| x.to_string());
                    eprintln!("wanmpi tcp: rank {rank}: path to rank {r}: {how}");
                }
            }
        }
        let redial = Redial::new(est.listener, secret, peers.len(), &epoll)?;
        let caps = Caps { name: "tcp", channels: 1, max_frame: opts.max_frame, eager_limit_hint: EAGER_HINT, reliable: true };
        Ok(TcpTransport {
            rank,
            caps,
            opts,
            epoll,
            wake,
            events: Events::with_capacity(peers.len() + 8),
            ready: Vec::new(),
            peers,
            self_queue: VecDeque::new(),
            losses: VecDeque::new(),
            redial,
            reconnects: 0,
        })
    }

    /// Whether the connection to `peer` is sealed (None: no open connection).
    pub fn sealed(&self, peer: PeerId) -> Option<bool> {
        match self.peers.get(peer as usize)? {
            Slot::Peer(p) if p.conn.is_some() => Some(p.sealed),
            _ => None,
        }
    }

    /// The port this rank listens on (redials of lower ranks come there).
    pub fn listen_port(&self) -> Option<u16> {
        self.redial.port()
    }

    /// The local and remote ports of the connection to `peer`, if open
    /// (to find it in `ss`).
    pub fn connection_ports(&self, peer: PeerId) -> Option<(u16, u16)> {
        let Slot::Peer(p) = self.peers.get(peer as usize)? else { return None };
        let sock = &p.conn.as_ref()?.sock;
        let port = |a: std::io::Result<socket2::SockAddr>| a.ok()?.as_socket().map(|a| a.port());
        Some((port(sock.local_addr())?, port(sock.peer_addr())?))
    }

    /// How `peer` was reached at setup: `dialled ADDR (KIND)` or
    /// `accepted from ADDR` (the candidate that won, `setup`).
    pub fn path_to(&self, peer: PeerId) -> Option<String> {
        let Slot::Peer(p) = self.peers.get(peer as usize)? else { return None };
        p.path.map(|x| x.to_string())
    }

    /// Connections that replaced a broken one since setup.
    pub fn reconnections(&self) -> u64 {
        self.reconnects
    }

    /// Bytes of frames to `peer` kept until it acknowledges them (at most
    /// `RETX_LIMIT` and one frame).
    pub fn unacknowledged(&self, peer: PeerId) -> usize {
        match self.peers.get(peer as usize) {
            Some(Slot::Peer(p)) => p.stream.held(),
            _ => 0,
        }
    }

    /// Reports `peer` lost (once) and closes its connection.
    pub(crate) fn lose(&mut self, peer: PeerId, reason: String) {
        let epoll = &self.epoll;
        let Some(Slot::Peer(p)) = self.peers.get_mut(peer as usize) else { return };
        if p.lost.is_some() {
            return;
        }
        if let Some(c) = p.conn.take() {
            let _ = epoll.delete(c.sock.as_raw_fd());
        }
        p.down = None;
        p.lost = Some(reason.clone());
        self.losses.push_back((peer, reason));
        self.redial.forget(peer, &self.epoll);
    }

    /// The connection to `peer` failed under the job (reset, aborted,
    /// timed out): drop it and keep the stream, to resume on the next one.
    pub(crate) fn break_conn(&mut self, peer: PeerId, why: String) {
        let epoll = &self.epoll;
        let Some(Slot::Peer(p)) = self.peers.get_mut(peer as usize) else { return };
        let Some(c) = p.conn.take() else { return };
        let _ = epoll.delete(c.sock.as_raw_fd());
        if let Some(path) = crate::path::tcp_path(&c.sock) {
            p.rtt = path.srtt;
        }
        crate::redial::discard(c.sock);
        let now = Instant::now();
        p.down.get_or_insert((now, why.clone()));
        eprintln!("wanmpi tcp: rank {}: connection to rank {peer} at {} broke ({why}); redialling", self.rank, p.addr);
        // Both sides redial, the higher rank a little later (`pair`).
        let delay = crate::pair::dial_delay(self.rank, peer, self.opts.reverse_delay);
        self.redial.schedule(peer, now + delay);
        self.redial.dirty = true;
    }

    /// Watches writability exactly while a residual or backlog waits or a
    /// send was refused.
    fn set_writing(epoll: &Epoll, peer: PeerId, c: &mut Conn, backlog: bool) -> std::io::Result<()> {
        let want = c.tx.pending() || c.blocked || backlog;
        if want != c.writing {
            epoll.modify(c.sock.as_raw_fd(), peer as u64, if want { READ | WRITE } else { READ })?;
            c.writing = want;
        }
        Ok(())
    }

    /// Pushes `peer`'s residual, then its backlog of kept frames, then an
    /// acknowledgement if one is due; true while some of it remains.
    /// `writable`: epoll said the socket has room, so a refused sender may
    /// try again.
    pub(crate) fn flush_peer(&mut self, peer: PeerId, writable: bool) -> bool {
        let epoll = &self.epoll;
        let Some(Slot::Peer(p)) = self.peers.get_mut(peer as usize) else { return false };
        let Some(c) = p.conn.as_mut() else { return false };
        if writable {
            c.blocked = false;
        }
        let fd = c.sock.as_raw_fd();
        let res = (|| -> std::io::Result<()> {
            // Bounded: each turn puts one kept frame on the wire or stops.
            loop {
                if !c.tx.flush(fd)? {
                    return Ok(());
                }
                if p.stream.backlog() {
                    let ack = p.stream.ack_to_tell();
                    let Some(f) = p.stream.next_unsent() else { return Ok(()) };
                    if c.tx.send_frame(fd, &[f], ack)? == SendStatus::WouldBlock {
                        return Ok(());
                    }
                    if let Some(n) = ack {
                        p.stream.told(n);
                    }
                    p.stream.put_on_wire();
                    continue;
                }
                if p.stream.ack_due() {
                    if let Some(n) = p.stream.ack_to_tell() {
                        if c.tx.send_ack(fd, n)? == SendStatus::Sent {
                            p.stream.told(n);
                        }
                    }
                }
                return Ok(());
            }
        })()
        .and_then(|()| Self::set_writing(epoll, peer, c, p.stream.backlog()));
        match res {
            Ok(()) => c.tx.pending() || p.stream.backlog(),
            Err(e) => {
                self.break_conn(peer, format!("send failed: {e}"));
                false
            }
        }
    }

    /// Reads `peer`'s connection (up to the budget), delivering its frames.
    fn drain_peer(&mut self, peer: PeerId, sink: &mut dyn FnMut(Incoming<'_>)) -> usize {
        let max = self.caps.max_frame;
        let Some(Slot::Peer(p)) = self.peers.get_mut(peer as usize) else { return 0 };
        let Some(c) = p.conn.as_mut() else { return 0 };
        let mut n = 0;
        let mut bad: Option<crate::stream::StreamError> = None;
        let stream = &mut p.stream;
        let mut reader = &c.sock;
        let res = c.rx.drain(&mut reader, max, DRAIN_BUDGET, &mut |control, bytes| {
            if bad.is_some() {
                return; // the peer is being lost: nothing after the violation counts
            }
            if control {
                if let Err(e) = parse_ack(bytes).and_then(|k| stream.on_ack(k)) {
                    bad = Some(e);
                }
                return;
            }
            stream.delivered(bytes.len());
            n += 1;
            sink(Incoming::Frame { peer, channel: 0, bytes });
        });
        let ack_due = stream.ack_due();
        if let Some(why) = bad {
            self.lose(peer, why.to_string());
            return n;
        }
        match res {
            Ok(_) => {
                if ack_due {
                    self.flush_peer(peer, false);
                }
            }
            // Broken under the job (a reset, an abort, a timeout): resume
            // on a new connection. A clean close is the peer's own doing.
            Err(RxError::Io(e)) => self.break_conn(peer, e.to_string()),
            Err(e) => {
                if matches!(e, RxError::Tampered { .. }) {
                    // A security event, said here even if the job survives the loss.
                    eprintln!("wanmpi tcp: rank {}: connection from rank {peer}: {e}", self.rank);
                }
                self.lose(peer, e.to_string());
            }
        }
        n
    }

    pub(crate) fn mark_all_closed(&mut self, reason: &str) {
        for slot in &mut self.peers {
            if let Slot::Peer(p) = slot {
                if p.lost.is_none() {
                    p.conn = None;
                    p.lost = Some(reason.to_string());
                }
            }
        }
        self.losses.clear();
        self.redial.close(&self.epoll);
    }

    /// Handles one epoll event of the transport's own (not a peer's).
    /// Returns false for a peer's token.
    fn own_event(&mut self, token: u64) -> bool {
        match token {
            WAKE => true,
            TIMER => {
                self.redial.timer.clear();
                self.tick(Instant::now());
                true
            }
            LISTENER => {
                self.accept_all();
                true
            }
            t if t >= HS_BASE => {
                self.drive_handshake((t - HS_BASE) as usize);
                true
            }
            _ => false,
        }
    }
}

impl Transport for TcpTransport {
    fn caps(&self) -> &Caps {
        &self.caps
    }

    fn rank(&self) -> PeerId {
        self.rank
    }

    fn size(&self) -> u32 {
        self.peers.len() as u32
    }

    fn path(&self, peer: PeerId) -> Option<wanmpi_transport::PathStats> {
        match self.peers.get(peer as usize)? {
            Slot::Peer(p) => crate::path::tcp_path(&p.conn.as_ref()?.sock),
            Slot::Me => None,
        }
    }

    fn try_send(&mut self, peer: PeerId, channel: u16, parts: &[&[u8]]) -> Result<SendStatus, TransportError> {
        if channel >= self.caps.channels {
            return Err(TransportError::NoSuchChannel { channel, channels: self.caps.channels });
        }
        let len: usize = parts.iter().map(|p| p.len()).sum();
        if len > self.caps.max_frame {
            return Err(TransportError::FrameTooLarge { len, max: self.caps.max_frame });
        }
        let epoll = &self.epoll;
        let p = match self.peers.get_mut(peer as usize) {
            None => return Err(TransportError::NoSuchPeer(peer)),
            Some(Slot::Me) => {
                self.self_queue.push_back(parts.concat());
                self.wake.signal();
                return Ok(SendStatus::Sent);
            }
            Some(Slot::Peer(p)) => p,
        };
        if let Some(reason) = &p.lost {
            return Err(TransportError::PeerLost { peer, reason: reason.clone() });
        }
        // Full of unacknowledged frames: refused until an acknowledgement
        // (a readable socket, which epoll always watches) frees room.
        if !p.stream.has_room(len) {
            return Ok(SendStatus::WouldBlock);
        }
        let c = match p.conn.as_mut() {
            // Up, nothing queued before this frame: straight to the socket.
            Some(c) if !p.stream.backlog() => c,
            // Down, or resending after a reconnection: queued in order.
            up => {
                let flush = up.is_some();
                p.stream.keep(parts);
                if flush {
                    self.flush_peer(peer, false);
                }
                return Ok(SendStatus::Sent);
            }
        };
        let fd = c.sock.as_raw_fd();
        let mut kept = false;
        let res = (|| -> std::io::Result<SendStatus> {
            if !c.tx.flush(fd)? {
                c.blocked = true;
                return Ok(SendStatus::WouldBlock);
            }
            let ack = p.stream.ack_to_tell();
            p.stream.keep(parts);
            kept = true;
            // The residual was empty, yet the socket may take nothing (its
            // buffer just filled): the frame is kept all the same and goes
            // out from the backlog when the socket is writable. Marking it
            // on the wire then lost it: the peer waited for it forever.
            if c.tx.send_frame(fd, parts, ack)? == SendStatus::Sent {
                if let Some(n) = ack {
                    p.stream.told(n);
                }
                p.stream.put_on_wire();
            } else {
                c.blocked = true;
            }
            Ok(SendStatus::Sent)
        })()
        .and_then(|st| Self::set_writing(epoll, peer, c, p.stream.backlog()).map(|()| st));
        match res {
            Ok(st) => Ok(st),
            Err(e) => {
                // The frame is kept and goes (again) on the next connection.
                if !kept {
                    p.stream.keep(parts);
                }
                self.break_conn(peer, format!("send failed: {e}"));
                Ok(SendStatus::Sent)
            }
        }
    }

    fn poll_recv(&mut self, sink: &mut dyn FnMut(Incoming<'_>)) -> Result<usize, TransportError> {
        let mut count = 0;
        self.epoll.wait(&mut self.events, Some(Duration::ZERO))?;
        let mut ready = std::mem::take(&mut self.ready);
        ready.clear();
        ready.extend(self.events.iter());
        for &(token, ev) in &ready {
            if self.own_event(token) {
                continue;
            }
            let peer = token as PeerId;
            if ev & WRITE != 0 {
                self.flush_peer(peer, true);
            }
            if ev & !WRITE != 0 {
                count += self.drain_peer(peer, sink);
            }
        }
        self.ready = ready;
        if !self.self_queue.is_empty() {
            self.wake.clear();
            while let Some(f) = self.self_queue.pop_front() {
                sink(Incoming::Frame { peer: self.rank, channel: 0, bytes: &f });
                count += 1;
            }
        }
        self.redial.rearm_if_dirty(&self.peers, self.opts.outage_limit);
        while let Some((peer, reason)) = self.losses.pop_front() {
            sink(Incoming::PeerLost { peer, reason });
            count += 1;
        }
        Ok(count)
    }

    fn flush(&mut self) -> Result<bool, TransportError> {
        let mut pending = false;
        for peer in 0..self.peers.len() as PeerId {
            pending |= self.flush_peer(peer, false);
        }
        Ok(pending)
    }

    fn wait(&mut self, timeout: Duration) -> Result<(), TransportError> {
        if !self.self_queue.is_empty() || !self.losses.is_empty() {
            return Ok(());
        }
        // Level-triggered: readability seen here is reported again to
        // poll_recv. Writability is handled now (push residuals, let refused
        // senders retry) so that the next wait does not return at once again.
        // The transport's own events (deadlines, redials) are handled now too.
        self.epoll.wait(&mut self.events, Some(timeout))?;
        let mut ready = std::mem::take(&mut self.ready);
        ready.clear();
        ready.extend(self.events.iter());
        for &(token, ev) in &ready {
            if !self.own_event(token) && ev & WRITE != 0 {
                self.flush_peer(token as PeerId, true);
            }
        }
        self.ready = ready;
        self.redial.rearm_if_dirty(&self.peers, self.opts.outage_limit);
        Ok(())
    }

    fn readiness_fd(&self) -> Option<i32> {
        Some(self.epoll.raw_fd())
    }

    /// Segments the kernel retransmitted on the connection to `peer` now
    /// (TCP_INFO; a redialled connection starts again from zero).
    fn tally(&self, peer: PeerId, sink: &mut wanmpi_transport::TallySink<'_>) {
        if let Some(Slot::Peer(p)) = self.peers.get(peer as usize) {
            if let Some(retransmits) = p.conn.as_ref().and_then(|c| crate::path::retransmits(&c.sock)) {
                sink(self.caps.name, wanmpi_transport::Tally { retransmits, ..Default::default() });
            }
        }
    }

    fn peer_failed(&mut self, peer: PeerId) {
        self.lose(peer, "its process ended (the launcher saw it)".into());
    }

    fn shutdown(&mut self, timeout: Duration) -> Result<(), TransportError> {
        crate::shutdown::graceful(self, timeout)
    }
}
