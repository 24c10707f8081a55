//! Job setup: listen on an ephemeral port, publish it as `tcp-ep-<rank>`,
//! fence, then build one authenticated connection per pair of ranks.
//!
//! The lower rank dials the higher one, so each pair has exactly one
//! connection and nobody races to dial both ways. Every handshake runs
//! concurrently in one epoll loop, so a silent or hostile caller never delays
//! the real peers: it is dropped (and logged) when it fails or times out,
//! and setup goes on waiting for the real peer until the setup timeout.
//! The listener stays open after setup: lower ranks redial it when a
//! connection breaks (`redial`); a stray that calls later must pass the
//! same handshake. Each handshake also settles whether its connection is
//! sealed (`policy`).

use crate::auth::{Acceptor, Connector};
use crate::handshake::{Admit, Done, Handshake, Step};
use crate::options::TcpOptions;
use crate::policy::{wants_seal, Maps, Seal};
use crate::seal::Keys;
use crate::sys::{Epoll, Events, READ, WRITE};
use socket2::{Domain, Protocol, SockAddr, Socket, Type};
use std::io;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};
use wanmpi_bootstrap::KeyValue;
use wanmpi_transport::TransportError;

const LISTENER: u64 = u64::MAX;
/// Tokens of handshakes in progress start here (above every rank).
const HS_BASE: u64 = 1 << 32;
const FIRST_BACKOFF: Duration = Duration::from_millis(50);
const MAX_BACKOFF: Duration = Duration::from_secs(2);

fn setup_err(what: &str, e: impl std::fmt::Display) -> TransportError {
    TransportError::Setup(format!("{what}: {e}"))
}

/// The key under which `rank` publishes its endpoint.
pub fn endpoint_key(rank: u32) -> String {
    format!("tcp-ep-{rank}")
}

fn endpoint(host: &str, port: u16) -> String {
    if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// Keepalive probes after 1 s idle, every second: an idle connection's
/// silence shows (as unanswered probes, `path::silent_for`), and the kernel
/// drops it after `opts.silence` of them. Not TCP_USER_TIMEOUT: since Linux
/// 5.13 it also drops a connection whose receiver merely stops reading for
/// that long (a rank computing), which is no outage.
pub(crate) fn watch_silence(sock: &Socket, opts: &TcpOptions) -> io::Result<()> {
    let idle = Duration::from_secs(1);
    let probes = opts.silence.as_secs().clamp(1, 127) as u32;
    sock.set_tcp_keepalive(&socket2::TcpKeepalive::new().with_time(idle).with_interval(idle).with_retries(probes))
}

pub(crate) fn tune(sock: &Socket, opts: &TcpOptions) -> io::Result<()> {
    sock.set_nodelay(true)?;
    // Only when asked: setting a size disables the kernel's autotuning.
    if opts.sndbuf > 0 {
        sock.set_send_buffer_size(opts.sndbuf)?;
    }
    if opts.rcvbuf > 0 {
        sock.set_recv_buffer_size(opts.rcvbuf)?;
    }
    Ok(())
}

fn listen(opts: &TcpOptions) -> io::Result<Socket> {
    let s = wanmpi_bootstrap::ports::bind_in(opts.port_range, |port| {
        let addr = SocketAddr::new(opts.listen_addr(), port);
        let s = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
        // Set on the listener so accepted sockets inherit them before the
        // SYN-ACK fixes the window scale.
        tune(&s, opts)?;
        s.bind(&addr.into())?;
        Ok(s)
    })?;
    s.listen(1024)?;
    s.set_nonblocking(true)?;
    Ok(s)
}

/// Who has connected (or been claimed) so far, from this rank's view.
pub(crate) struct Ranks {
    me: u32,
    claimed: Vec<bool>,
    seal: Seal,
    maps: Maps,
}

impl Admit for Ranks {
    fn may_claim(&self, rank: u32) -> Result<(), String> {
        if rank >= self.me {
            return Err(format!("claims rank {rank}, but only lower ranks dial rank {}", self.me));
        }
        if self.claimed[rank as usize] {
            return Err(format!("duplicate connection for rank {rank}"));
        }
        Ok(())
    }
    fn claim(&mut self, rank: u32) {
        self.claimed[rank as usize] = true;
    }
    fn wants_seal(&self, peer: u32, local: Option<IpAddr>, remote: Option<IpAddr>) -> bool {
        wants_seal(self.seal, &self.maps, self.me, peer, local, remote)
    }
    fn received(&self, _peer: u32) -> u64 {
        0 // nothing has been sent before the first connection
    }
}

/// One authenticated connection, and its keys if sealed.
pub(crate) type Connected = (Socket, Option<Box<Keys>>);

/// What setup leaves: a connection per peer (None at our own rank), the
/// listener (still open, for redials), and where each higher rank listens.
pub(crate) struct Established {
    pub(crate) conns: Vec<Option<Connected>>,
    pub(crate) listener: Socket,
    pub(crate) targets: Vec<(u32, SocketAddr)>,
}

struct Setup<'a> {
    secret: [u8; 32],
    opts: &'a TcpOptions,
    epoll: &'a Epoll,
    ranks: Ranks,
    done: Vec<Option<Connected>>,
    targets: Vec<(u32, SocketAddr)>,
    pending: Vec<Option<Handshake>>,
    /// Outgoing dials to (re)start: (when, peer).
    retries: Vec<(Instant, u32)>,
    /// Current retry delay per peer (doubles on each failure).
    backoff: Vec<Duration>,
    /// A peer runs another handshake version: setup ends with this.
    fatal: Option<String>,
    /// Retry lines, rate-limited per peer.
    log: crate::retry_log::RetryLog,
}

/// Runs setup; returns one connected, authenticated, nonblocking socket per
/// peer (None at our own rank). Leaves `epoll` as it found it.
pub(crate) fn establish(kv: &mut dyn KeyValue, secret: &[u8; 32], opts: &TcpOptions, epoll: &Epoll) -> Result<Established, TransportError> {
    let (me, size) = (kv.rank(), kv.size());
    let listener = listen(opts).map_err(|e| setup_err("listen", e))?;
    let port = listener.local_addr().ok().and_then(|a| a.as_socket()).map(|a| a.port()).ok_or_else(|| setup_err("listen", "no port"))?;
    let host = opts.publish_addr.as_deref().unwrap_or("127.0.0.1");
    kv.put(&endpoint_key(me), &endpoint(host, port)).map_err(|e| setup_err("publish endpoint", e))?;
    kv.fence().map_err(|e| setup_err("fence", e))?;

    let mut targets = vec![];
    let keys: Vec<String> = (me + 1..size).map(endpoint_key).collect();
    let eps = kv.get_many(&keys).map_err(|e| setup_err("read endpoint", e))?;
    for (peer, ep) in (me + 1..size).zip(eps) {
        let addr = ep
            .to_socket_addrs()
            .ok()
            .and_then(|mut a| a.next())
            .ok_or_else(|| setup_err(&format!("endpoint of rank {peer}"), format!("cannot resolve {ep:?}")))?;
        targets.push((peer, addr));
    }
    let mut s = Setup {
        secret: *secret,
        opts,
        epoll,
        ranks: Ranks { me, claimed: vec![false; size as usize], seal: opts.seal, maps: opts.maps.clone() },
        done: (0..size).map(|_| None).collect(),
        targets,
        pending: vec![],
        retries: vec![],
        backoff: vec![Duration::ZERO; size as usize],
        fatal: None,
        log: Default::default(),
    };
    let now = Instant::now();
    s.retries = s.targets.iter().map(|&(p, _)| (now, p)).collect();
    let result = s.run(&listener, now + opts.setup_timeout);
    if let Some(line) = s.log.summary(me) {
        eprintln!("{line}");
    }
    // Deregister everything we added; sockets still pending close on drop.
    let _ = epoll.delete(listener.as_raw_fd());
    for h in s.pending.iter().flatten() {
        let _ = epoll.delete(h.sock.as_raw_fd());
    }
    let targets = std::mem::take(&mut s.targets);
    result.map(|()| Established { conns: s.done, listener, targets })
}

impl Setup<'_> {
    fn missing(&self) -> Vec<u32> {
        let me = self.ranks.me;
        (0..self.done.len() as u32).filter(|&r| r != me && self.done[r as usize].is_none()).collect()
    }

    fn run(&mut self, listener: &Socket, deadline: Instant) -> Result<(), TransportError> {
        let mut listening = self.ranks.me > 0;
        if listening {
            self.epoll.add(listener.as_raw_fd(), LISTENER, READ).map_err(|e| setup_err("epoll", e))?;
        }
        let mut events = Events::with_capacity(64);
        loop {
            // Dial first: a handshake on loopback can complete inside the
            // dial, and the check below must see it before sleeping.
            let now = Instant::now();
            self.start_due_dials(now);
            self.expire(now);
            if let Some(why) = self.fatal.take() {
                return Err(TransportError::Setup(format!("rank {}: {why}", self.ranks.me)));
            }
            let missing = self.missing();
            if missing.is_empty() {
                return Ok(());
            }
            if listening && !missing.iter().any(|&r| r < self.ranks.me) {
                // Every lower rank is in: stop listening (see module doc).
                let _ = self.epoll.delete(listener.as_raw_fd());
                listening = false;
            }
            if now >= deadline {
                return Err(TransportError::Setup(format!(
                    "rank {}: timed out after {:?} waiting for ranks {missing:?}",
                    self.ranks.me, self.opts.setup_timeout
                )));
            }
            let next = self.retries.iter().map(|r| r.0).chain(self.pending.iter().flatten().map(|h| h.deadline)).fold(deadline, Instant::min);
            self.epoll.wait(&mut events, Some(next.saturating_duration_since(now))).map_err(|e| setup_err("epoll", e))?;
            for (token, _) in events.iter() {
                if token == LISTENER {
                    if listening {
                        self.accept_all(listener);
                    }
                } else if let Some(idx) = token.checked_sub(HS_BASE) {
                    self.drive(idx as usize);
                }
            }
        }
    }

    fn log_drop(&mut self, h: &Handshake, reason: &str) {
        match h.dialled() {
            Some(peer) => {
                let me = self.ranks.me;
                let text = || format!("wanmpi tcp: rank {me}: connection to rank {peer} at {} failed: {reason}; retrying", h.addr);
                if let Some(line) = self.log.retry(peer, Instant::now(), text) {
                    eprintln!("{line}");
                }
            }
            None => eprintln!("wanmpi tcp: rank {}: refused connection from {}: {reason}", self.ranks.me, h.addr),
        }
    }

    fn insert(&mut self, h: Handshake) -> usize {
        let idx = match self.pending.iter().position(Option::is_none) {
            Some(i) => i,
            None => {
                self.pending.push(None);
                self.pending.len() - 1
            }
        };
        self.pending[idx] = Some(h);
        idx
    }

    fn accept_all(&mut self, listener: &Socket) {
        // Bounded: the backlog is finite and each accept empties one slot.
        for _ in 0..1024 {
            let (sock, addr) = match listener.accept() {
                Ok(x) => x,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) => {
                    eprintln!("wanmpi tcp: rank {}: accept failed: {e}", self.ranks.me);
                    return;
                }
            };
            let addr = addr.as_socket().map_or_else(|| "?".to_string(), |a| a.to_string());
            if let Err(e) = sock.set_nonblocking(true).and_then(|()| tune(&sock, self.opts)) {
                eprintln!("wanmpi tcp: rank {}: refused connection from {addr}: {e}", self.ranks.me);
                continue;
            }
            let acc = Acceptor::new(&self.secret, self.ranks.me);
            let h = Handshake::incoming(sock, addr, acc, Instant::now() + self.opts.handshake_timeout);
            self.register(h, READ);
        }
    }

    fn register(&mut self, h: Handshake, interest: u32) {
        let fd = h.sock.as_raw_fd();
        let idx = self.insert(h);
        if let Err(e) = self.epoll.add(fd, HS_BASE + idx as u64, interest) {
            self.fail(idx, &format!("epoll: {e}"));
            return;
        }
        self.drive(idx);
    }

    fn start_due_dials(&mut self, now: Instant) {
        let (due, later): (Vec<_>, Vec<_>) = self.retries.drain(..).partition(|r| r.0 <= now);
        self.retries = later;
        for (_, peer) in due {
            if let Err(reason) = self.dial(peer, now) {
                let me = self.ranks.me;
                if let Some(line) = self.log.retry(peer, now, || format!("wanmpi tcp: rank {me}: cannot dial rank {peer}: {reason}; retrying")) {
                    eprintln!("{line}");
                }
                self.schedule_retry(peer, now);
            }
        }
    }

    fn schedule_retry(&mut self, peer: u32, now: Instant) {
        let b = &mut self.backoff[peer as usize];
        *b = (*b * 2).clamp(FIRST_BACKOFF, MAX_BACKOFF);
        self.retries.push((now + *b, peer));
    }

    fn dial(&mut self, peer: u32, now: Instant) -> Result<(), String> {
        let addr = self.targets.iter().find(|t| t.0 == peer).map(|t| t.1).ok_or("no endpoint")?;
        let sock = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP)).map_err(|e| e.to_string())?;
        // Buffers before connect: the window scale is fixed by the SYN.
        tune(&sock, self.opts).and_then(|()| sock.set_nonblocking(true)).map_err(|e| e.to_string())?;
        match sock.connect(&SockAddr::from(addr)) {
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => {}
            Err(e) => return Err(format!("connect to {addr}: {e}")),
        }
        let conn = Connector::new(&self.secret, self.ranks.me, peer).map_err(|e| e.to_string())?;
        let h = Handshake::outgoing(sock, addr.to_string(), peer, conn, 0, now + self.opts.handshake_timeout);
        self.register(h, READ | WRITE);
        Ok(())
    }

    fn expire(&mut self, now: Instant) {
        for idx in 0..self.pending.len() {
            if self.pending[idx].as_ref().is_some_and(|h| h.deadline <= now) {
                self.fail(idx, "handshake timed out");
            }
        }
    }

    /// Drops handshake `idx`: logs, releases its claim, re-dials if ours.
    fn fail(&mut self, idx: usize, reason: &str) {
        let Some(h) = self.pending.get_mut(idx).and_then(Option::take) else { return };
        let _ = self.epoll.delete(h.sock.as_raw_fd());
        self.log_drop(&h, reason);
        if let Some(rank) = h.claimed() {
            self.ranks.claimed[rank as usize] = false;
        }
        if let (Some(why), Some(peer)) = (&h.fatal, h.dialled()) {
            self.fatal = Some(format!("rank {peer} at {}: {why}", h.addr));
            return;
        }
        if let Some(peer) = h.dialled() {
            self.schedule_retry(peer, Instant::now());
        }
    }

    fn drive(&mut self, idx: usize) {
        let Some(h) = self.pending.get_mut(idx).and_then(Option::as_mut) else { return };
        match h.drive(&mut self.ranks) {
            Ok(Step::Blocked { write }) => {
                let interest = if write { READ | WRITE } else { READ };
                if let Err(e) = self.epoll.modify(h.sock.as_raw_fd(), HS_BASE + idx as u64, interest) {
                    self.fail(idx, &format!("epoll: {e}"));
                }
            }
            Ok(Step::Done(Done { rank, keys, .. })) => {
                let Some(h) = self.pending[idx].take() else { return };
                let _ = self.epoll.delete(h.sock.as_raw_fd());
                self.ranks.claimed[rank as usize] = true;
                self.done[rank as usize] = Some((h.sock, keys));
            }
            Err(reason) => self.fail(idx, &reason),
        }
    }
}
