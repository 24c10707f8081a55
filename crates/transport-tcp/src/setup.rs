//! Job setup: listen on the wildcard, publish the port as `tcp-ep-<rank>`
//! and this rank's candidate addresses (`targets`), fence, then build one
//! authenticated connection per pair of ranks.
//!
//! Both ranks of a pair dial: the lower at once, the higher after
//! `reverse_delay`, each every candidate of the other in parallel, while
//! both accept. The first connection to pass the handshake counts; `pair`
//! holds the rule by which both sides keep the same one with no round trip
//! of its own (the lower rank's dial wins when both were under way), and
//! every other attempt toward that peer is dropped. So a rank behind a
//! firewall that lets nothing in is still reached: it dials out. Every
//! handshake runs concurrently in one epoll loop, so a silent or hostile
//! caller never delays the real peers: it is dropped when it fails or
//! times out (logged when it failed the proof), and setup goes on.
//!
//! A peer that answered none of this rank's dials and did not dial in
//! within `path_timeout` (10 s) ends setup with an error naming both ranks
//! and every candidate tried, each with what became of it; otherwise setup
//! waits for its slowest peer until `setup_timeout`. The listener stays
//! open after setup for redials (`redial`); a stray that calls later must
//! pass the same handshake. Each handshake also settles whether its
//! connection is sealed (`policy`).

use crate::auth::{Acceptor, Connector};
use crate::handshake::{Admit, Done, Handshake, Step};
use crate::options::TcpOptions;
use crate::pair;
use crate::policy::{wants_seal, Maps, Seal};
use crate::seal::Keys;
use crate::sys::{Epoll, Events, READ, WRITE};
use crate::targets::{self, Target};
use socket2::{Domain, Protocol, SockAddr, Socket, Type};
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};
use wanmpi_bootstrap::{CandidateKind, Candidates, KeyValue};
use wanmpi_transport::TransportError;

const LISTENER: u64 = u64::MAX;
/// Tokens of handshakes in progress start here (above every rank).
const HS_BASE: u64 = 1 << 32;
const FIRST_BACKOFF: Duration = Duration::from_millis(50);
const MAX_BACKOFF: Duration = Duration::from_secs(2);

fn setup_err(what: &str, e: impl std::fmt::Display) -> TransportError {
    TransportError::Setup(format!("{what}: {e}"))
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

/// Opens a nonblocking socket and starts connecting it to `addr`.
pub(crate) fn start_connect(addr: SocketAddr, opts: &TcpOptions) -> io::Result<Socket> {
    let sock = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    // Buffers before connect: the window scale is fixed by the SYN.
    tune(&sock, opts)?;
    sock.set_nonblocking(true)?;
    match sock.connect(&SockAddr::from(addr)) {
        Ok(()) => Ok(sock),
        Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => Ok(sock),
        Err(e) => Err(e),
    }
}

/// Who has connected (or been claimed) so far, from this rank's view.
pub(crate) struct Ranks {
    me: u32,
    claimed: Vec<bool>,
    /// Per peer: one of our dials to it has sent its proof (`pair`).
    proving: Vec<bool>,
    seal: Seal,
    maps: Maps,
}

impl Admit for Ranks {
    fn may_claim(&self, rank: u32) -> Result<(), String> {
        let (Some(&have), Some(&proving)) = (self.claimed.get(rank as usize), self.proving.get(rank as usize)) else {
            return Err(format!("claims rank {rank}, not in a job of {}", self.claimed.len()));
        };
        pair::admit(self.me, rank, have, proving)
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
/// listener (still open, for redials), every peer's targets, and how each
/// peer was reached (for `WANMPI_STATS`, and the first target of redials).
pub(crate) struct Established {
    pub(crate) conns: Vec<Option<Connected>>,
    pub(crate) listener: Socket,
    pub(crate) targets: Vec<Vec<Target>>,
    pub(crate) paths: Vec<Option<Path>>,
    /// This rank is behind NAT (its given address is on no interface, or
    /// the key/value service saw it at one it has not): the NAT may let
    /// nothing in, so it dials its lower peers at once too.
    pub(crate) behind_nat: bool,
}

/// How a peer was reached at setup.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Path {
    /// This rank dialled the peer at this target.
    Dialled(Target),
    /// The peer dialled in, from this address.
    Accepted(Option<SocketAddr>),
}

impl std::fmt::Display for Path {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Path::Dialled(t) => write!(f, "dialled {t}"),
            Path::Accepted(Some(a)) => write!(f, "accepted from {a}"),
            Path::Accepted(None) => write!(f, "accepted"),
        }
    }
}

struct Setup<'a> {
    secret: [u8; 32],
    opts: &'a TcpOptions,
    epoll: &'a Epoll,
    ranks: Ranks,
    done: Vec<Option<Connected>>,
    paths: Vec<Option<Path>>,
    targets: Vec<Vec<Target>>,
    pending: Vec<Option<Handshake>>,
    /// Per peer: when to dial all its targets next (None: not scheduled).
    next_dial: Vec<Option<Instant>>,
    /// Current retry delay per peer (doubles on each failure).
    backoff: Vec<Duration>,
    /// Per peer: a dial of ours got as far as a TCP connection.
    heard: Vec<bool>,
    /// Per peer: what became of each target's last attempt (for the error).
    tried: Vec<Vec<(Target, String)>>,
    /// This rank's own candidates and port (for the error).
    mine: (Candidates, u16),
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
    let mine = targets::publish(kv, opts, port)?;
    kv.fence().map_err(|e| setup_err("fence", e))?;
    let targets = targets::read(kv, opts)?;
    let n = size as usize;
    let mut s = Setup {
        secret: *secret,
        opts,
        epoll,
        ranks: Ranks { me, claimed: vec![false; n], proving: vec![false; n], seal: opts.seal, maps: opts.maps.clone() },
        done: (0..size).map(|_| None).collect(),
        paths: vec![None; n],
        targets,
        pending: vec![],
        next_dial: vec![None; n],
        backoff: vec![Duration::ZERO; n],
        heard: vec![false; n],
        tried: vec![vec![]; n],
        mine: (mine, port),
        fatal: None,
        log: Default::default(),
    };
    // A public candidate is one given for the host but on no interface
    // here, a reflexive one is published only when it differs from every
    // other (`candidates::gather`): either way this rank is behind NAT.
    let behind_nat = s.mine.0 .0.iter().any(|c| matches!(c.kind, CandidateKind::Reflexive | CandidateKind::Public));
    let reverse = if behind_nat { Duration::ZERO } else { opts.reverse_delay };
    let now = Instant::now();
    for peer in (0..size).filter(|&p| p != me) {
        s.next_dial[peer as usize] = Some(now + pair::dial_delay(me, peer, reverse));
    }
    let result = s.run(&listener, now);
    if let Some(line) = s.log.summary(me) {
        eprintln!("{line}");
    }
    // Deregister everything we added; sockets still pending close on drop.
    let _ = epoll.delete(listener.as_raw_fd());
    for h in s.pending.iter().flatten() {
        let _ = epoll.delete(h.sock.as_raw_fd());
    }
    let targets = std::mem::take(&mut s.targets);
    let paths = std::mem::take(&mut s.paths);
    result.map(|()| Established { conns: s.done, listener, targets, paths, behind_nat })
}

impl Setup<'_> {
    fn missing(&self) -> Vec<u32> {
        let me = self.ranks.me;
        (0..self.done.len() as u32).filter(|&r| r != me && self.done[r as usize].is_none()).collect()
    }

    fn run(&mut self, listener: &Socket, start: Instant) -> Result<(), TransportError> {
        let deadline = start + self.opts.setup_timeout;
        let path_deadline = start + self.opts.path_timeout;
        self.epoll.add(listener.as_raw_fd(), LISTENER, READ).map_err(|e| setup_err("epoll", e))?;
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
            let unheard: Vec<u32> = missing.iter().copied().filter(|&p| !self.heard[p as usize]).collect();
            if now >= path_deadline && !unheard.is_empty() {
                return Err(TransportError::Setup(self.no_path(&unheard)));
            }
            if now >= deadline {
                return Err(TransportError::Setup(format!(
                    "rank {}: timed out after {:?} waiting for ranks {missing:?}",
                    self.ranks.me, self.opts.setup_timeout
                )));
            }
            let mut next =
                self.next_dial.iter().flatten().copied().chain(self.pending.iter().flatten().map(|h| h.deadline)).fold(deadline, Instant::min);
            if !unheard.is_empty() {
                next = next.min(path_deadline);
            }
            self.epoll.wait(&mut events, Some(next.saturating_duration_since(now))).map_err(|e| setup_err("epoll", e))?;
            for (token, _) in events.iter() {
                if token == LISTENER {
                    self.accept_all(listener);
                } else if let Some(idx) = token.checked_sub(HS_BASE) {
                    self.drive(idx as usize);
                }
            }
        }
    }

    /// The error for peers nothing reached either way: both ranks, every
    /// target tried with what became of it, and this rank's own candidates.
    fn no_path(&self, peers: &[u32]) -> String {
        let me = self.ranks.me;
        let secs = self.opts.path_timeout.as_secs_f64();
        let (mine, port) = &self.mine;
        let each: Vec<String> = peers
            .iter()
            .map(|&p| {
                // What the peer could dial of ours: loopback only on one host.
                let same = self.opts.maps.host.as_ref().and_then(|h| Some(h.get(me as usize)? == h.get(p as usize)?));
                let mine: Vec<String> =
                    mine.dial_order(None, same).iter().map(|c| format!("{} ({})", SocketAddr::new(c.ip, *port), c.kind.name())).collect();
                let tried: Vec<String> = self.targets[p as usize]
                    .iter()
                    .map(|t| {
                        let what = self.tried[p as usize].iter().rev().find(|(x, _)| x == t).map_or("no answer", |(_, w)| w.as_str());
                        format!("{t}: {what}")
                    })
                    .collect();
                format!(
                    "rank {me} found no path to rank {p} in {secs:.0} s: tried {}; rank {p} did not reach rank {me} at {} either",
                    tried.join(", "),
                    mine.join(", ")
                )
            })
            .collect();
        format!(
            "{}. tcp needs one side of each pair to accept the other's connection: check the firewalls, and give each host's public address \
             (addr= in the hostfile) if it is behind a 1:1 NAT; two hosts both behind NAT that let nothing in need a relay",
            each.join("; ")
        )
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
        for peer in 0..self.next_dial.len() as u32 {
            if self.next_dial[peer as usize].is_some_and(|t| t <= now) {
                self.next_dial[peer as usize] = None;
                if self.done[peer as usize].is_none() {
                    self.dial_all(peer, now);
                }
            }
        }
    }

    fn schedule_retry(&mut self, peer: u32, now: Instant) {
        let b = &mut self.backoff[peer as usize];
        *b = (*b * 2).clamp(FIRST_BACKOFF, MAX_BACKOFF);
        let when = now + *b;
        let slot = &mut self.next_dial[peer as usize];
        *slot = Some(slot.map_or(when, |t| t.min(when)));
    }

    /// Attempts toward `peer` under way.
    fn dialling(&self, peer: u32) -> usize {
        self.pending.iter().flatten().filter(|h| h.dialled() == Some(peer)).count()
    }

    /// Dials every target of `peer` at once; the first to pass the
    /// handshake counts (`drive`), the others are dropped then.
    fn dial_all(&mut self, peer: u32, now: Instant) {
        let targets = self.targets[peer as usize].clone();
        for t in targets {
            if let Err(reason) = self.dial(peer, t, now) {
                self.tried[peer as usize].push((t, reason));
            }
        }
        if self.dialling(peer) == 0 && self.done[peer as usize].is_none() {
            let me = self.ranks.me;
            let why = self.tried[peer as usize].last().map_or_else(|| "no address published".to_string(), |(t, w)| format!("{t}: {w}"));
            if let Some(line) = self.log.retry(peer, now, || format!("wanmpi tcp: rank {me}: cannot dial rank {peer} ({why}); retrying")) {
                eprintln!("{line}");
            }
            self.schedule_retry(peer, now);
        }
    }

    fn dial(&mut self, peer: u32, t: Target, now: Instant) -> Result<(), String> {
        let sock = start_connect(t.addr, self.opts).map_err(|e| e.to_string())?;
        let conn = Connector::new(&self.secret, self.ranks.me, peer).map_err(|e| e.to_string())?;
        let h = Handshake::outgoing(sock, t.addr.to_string(), peer, conn, 0, now + self.opts.handshake_timeout);
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

    /// Drops handshake `idx`: releases its claim; the last attempt of a
    /// peer of ours that failed schedules the next round.
    fn fail(&mut self, idx: usize, reason: &str) {
        let Some(h) = self.pending.get_mut(idx).and_then(Option::take) else { return };
        let _ = self.epoll.delete(h.sock.as_raw_fd());
        if let Some(rank) = h.claimed() {
            self.ranks.claimed[rank as usize] = false;
        }
        let Some(peer) = h.dialled() else {
            // Callers that failed the proof are worth a line; one closed
            // or reset under way, or refused by the pair's rule, is how
            // two ranks dialling each other settle, not news.
            if !quiet(reason) {
                eprintln!("wanmpi tcp: rank {}: refused connection from {}: {reason}", self.ranks.me, h.addr);
            }
            return;
        };
        if let Some(why) = &h.fatal {
            self.fatal = Some(format!("rank {peer} at {}: {why}", h.addr));
            return;
        }
        let reason = if h.connecting() && reason == "handshake timed out" { "no answer" } else { reason };
        if let Some(t) = self.targets[peer as usize].iter().find(|t| t.addr.to_string() == h.addr).copied() {
            self.tried[peer as usize].push((t, reason.to_string()));
        }
        self.update_proving(peer);
        if self.dialling(peer) == 0 && self.done[peer as usize].is_none() && self.next_dial[peer as usize].is_none() {
            let me = self.ranks.me;
            let now = Instant::now();
            let text = || format!("wanmpi tcp: rank {me}: connection to rank {peer} at {} failed: {reason}; retrying", h.addr);
            if let Some(line) = self.log.retry(peer, now, text) {
                eprintln!("{line}");
            }
            self.schedule_retry(peer, now);
        }
    }

    fn update_proving(&mut self, peer: u32) {
        self.ranks.proving[peer as usize] = self.pending.iter().flatten().any(|h| h.dialled() == Some(peer) && h.proving());
    }

    /// Drops every attempt of ours toward `peer` but `keep` (one counts).
    fn drop_dials(&mut self, peer: u32, keep: Option<usize>) {
        for (i, slot) in self.pending.iter_mut().enumerate() {
            if Some(i) != keep && slot.as_ref().is_some_and(|h| h.dialled() == Some(peer)) {
                if let Some(h) = slot.take() {
                    let _ = self.epoll.delete(h.sock.as_raw_fd());
                    crate::redial::discard(h.sock);
                }
            }
        }
        self.next_dial[peer as usize] = None;
        self.ranks.proving[peer as usize] = false;
    }

    fn drive(&mut self, idx: usize) {
        let Some(h) = self.pending.get_mut(idx).and_then(Option::as_mut) else { return };
        let claimed_before = h.claimed();
        match h.drive(&mut self.ranks) {
            Ok(Step::Blocked { write }) => {
                let (fd, dialled, connecting, claimed) = (h.sock.as_raw_fd(), h.dialled(), h.connecting(), h.claimed());
                let interest = if write { READ | WRITE } else { READ };
                if let Err(e) = self.epoll.modify(fd, HS_BASE + idx as u64, interest) {
                    self.fail(idx, &format!("epoll: {e}"));
                    return;
                }
                if let Some(peer) = dialled {
                    self.heard[peer as usize] |= !connecting;
                    self.update_proving(peer);
                }
                if let (None, Some(rank)) = (claimed_before, claimed) {
                    // A caller proved it is `rank` and is being told yes:
                    // our own dials to it must not count too (`pair`).
                    self.drop_dials(rank, None);
                }
            }
            Ok(Step::Done(Done { rank, keys, .. })) => {
                let Some(h) = self.pending[idx].take() else { return };
                let _ = self.epoll.delete(h.sock.as_raw_fd());
                let path = match h.dialled() {
                    Some(_) => self.targets[rank as usize].iter().find(|t| t.addr.to_string() == h.addr).map(|t| Path::Dialled(*t)),
                    None => Some(Path::Accepted(h.sock.peer_addr().ok().and_then(|a| a.as_socket()))),
                };
                self.ranks.claimed[rank as usize] = true;
                self.drop_dials(rank, None);
                self.heard[rank as usize] = true;
                self.paths[rank as usize] = path;
                self.done[rank as usize] = Some((h.sock, keys));
            }
            Err(reason) => self.fail(idx, &reason),
        }
    }
}

/// Failures of incoming handshakes that are part of two ranks settling on
/// one connection, not worth a line.
fn quiet(reason: &str) -> bool {
    ["closed during the handshake", "reset", "duplicate connection", "lower rank's dial is kept", "Broken pipe"].iter().any(|q| reason.contains(q))
}
