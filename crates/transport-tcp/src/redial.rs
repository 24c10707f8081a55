//! Replacing a connection that broke under the job, and the deadlines of a
//! peer without one.
//!
//! Both sides redial, every target of the peer at once (the one that
//! worked at setup among them): the lower rank at once, the higher after
//! `reverse_delay`, so a rank behind a firewall that lets nothing in still
//! reconnects by dialling out; `pair`'s rule settles which connection
//! counts when both get through. While no SYN is answered, a new round
//! goes every 500 ms, each given 1 s (or 4 round trips of the broken
//! connection, if more) to be answered, so at most a few are in flight
//! and a path that comes back is found within half a second (then 3
//! round trips of handshake) without a storm of packets meanwhile. An
//! attempt that fails otherwise (refused, handshake failed) is retried
//! after 100 ms, doubling to at most 1 s. Both keep listening (the
//! listener stays open for the job's life) and take a new connection when
//! it has passed the handshake (`auth`): the old one, if still there, is
//! dropped then, so both sides noticing at once, or only one, end the
//! same way. The handshake carries each side's resume point under its
//! MACs; the stream (`stream`) resends from there.
//!
//! A peer stays unreachable at most the outage limit (`TcpOptions::
//! outage_limit`, from the break) before it is reported lost: "no answer
//! from rank N at ADDR for 600 s". A redial refused by a peer of this host
//! means nothing listens there any more: its process is gone, lost at once.
//! Across hosts a refusal can be a middlebox's, so it is retried until the
//! limit (the launcher reports a dead process sooner).
//!
//! Dropped connections are closed with a reset (SO_LINGER 0), never a FIN:
//! a FIN is how a peer says it closed on purpose (shutdown, exit), which
//! is a loss, not a break.

use crate::auth::{Acceptor, Connector};
use crate::handshake::{Admit, Done, Handshake, Step};
use crate::policy::{wants_seal, Maps, Seal};
use crate::setup;
use crate::sys::{Epoll, TimerFd, READ, WRITE};
use crate::transport::{Conn, Slot, TcpTransport};
use socket2::Socket;
use std::io;
use std::net::IpAddr;
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};
use wanmpi_transport::PeerId;

/// epoll tokens: the listener, the deadline timer, handshakes from HS_BASE
/// (above every rank, below the self-send wake-up).
pub(crate) const LISTENER: u64 = u64::MAX;
pub(crate) const TIMER: u64 = u64::MAX - 2;
pub(crate) const HS_BASE: u64 = 1 << 32;

const FIRST_BACKOFF: Duration = Duration::from_millis(100);
/// Most time between failed redials, and what a SYN is given at least.
const PROBE: Duration = Duration::from_secs(1);
/// A new SYN while the earlier ones are unanswered (a silent path).
const PROBE_EVERY: Duration = Duration::from_millis(500);
/// SYNs of one peer in flight at most.
const MAX_SYNS: usize = 3;
/// Incoming handshakes in progress at once; more callers wait in the
/// listener's backlog (a stranger cannot make a rank hold more).
const MAX_INCOMING: usize = 64;

/// Closes a socket with a reset, so the peer never takes it for a close
/// on purpose.
pub(crate) fn discard(sock: Socket) {
    let _ = sock.set_linger(Some(Duration::ZERO));
    drop(sock);
}

struct Pending {
    h: Handshake,
    /// An outgoing connect completed: the deadline was moved to the
    /// handshake's own.
    connected: bool,
}

pub(crate) struct Redial {
    /// When to look next for silent connections (`TcpTransport::check_silence`).
    next_check: Instant,
    listener: Socket,
    secret: [u8; 32],
    pending: Vec<Option<Pending>>,
    /// Per peer: when to redial next (None: not scheduled).
    next_dial: Vec<Option<Instant>>,
    backoff: Vec<Duration>,
    pub(crate) timer: TimerFd,
    /// A deadline may have changed: re-arm the timer.
    pub(crate) dirty: bool,
}

impl Redial {
    pub(crate) fn new(listener: Socket, secret: [u8; 32], peers: usize, epoll: &Epoll) -> io::Result<Redial> {
        let timer = TimerFd::new()?;
        epoll.add(timer.raw_fd(), TIMER, READ)?;
        epoll.add(listener.as_raw_fd(), LISTENER, READ)?;
        Ok(Redial {
            next_check: Instant::now() + PROBE,
            listener,
            secret,
            pending: vec![],
            next_dial: vec![None; peers],
            backoff: vec![Duration::ZERO; peers],
            timer,
            dirty: true,
        })
    }

    pub(crate) fn port(&self) -> Option<u16> {
        self.listener.local_addr().ok()?.as_socket().map(|a| a.port())
    }

    /// Redial `peer` at `when` (if not already sooner).
    pub(crate) fn schedule(&mut self, peer: PeerId, when: Instant) {
        let slot = &mut self.next_dial[peer as usize];
        *slot = Some(slot.map_or(when, |t| t.min(when)));
        self.dirty = true;
    }

    /// Redial `peer` after a failed attempt: backing off to `PROBE`.
    fn retry(&mut self, peer: PeerId, now: Instant) {
        let b = &mut self.backoff[peer as usize];
        *b = (*b * 2).clamp(FIRST_BACKOFF, PROBE);
        let when = now + *b;
        self.schedule(peer, when);
    }

    /// Stops everything under way for `peer` (it is lost).
    pub(crate) fn forget(&mut self, peer: PeerId, epoll: &Epoll) {
        self.next_dial[peer as usize] = None;
        for slot in &mut self.pending {
            if slot.as_ref().is_some_and(|p| p.h.dialled() == Some(peer)) {
                if let Some(p) = slot.take() {
                    let _ = epoll.delete(p.h.sock.as_raw_fd());
                }
            }
        }
        self.dirty = true;
    }

    /// Ends every redial and handshake, and stops listening (shutdown).
    pub(crate) fn close(&mut self, epoll: &Epoll) {
        for p in self.pending.iter_mut().filter_map(Option::take) {
            let _ = epoll.delete(p.h.sock.as_raw_fd());
        }
        let _ = epoll.delete(self.listener.as_raw_fd());
        self.next_dial.iter_mut().for_each(|d| *d = None);
        self.timer.set(None);
    }

    /// (attempts of `peer` waiting for their SYN's answer, attempts past it)
    fn dialling(&self, peer: PeerId) -> (usize, usize) {
        let mine = self.pending.iter().flatten().filter(|p| p.h.dialled() == Some(peer));
        mine.fold((0, 0), |(syn, on), p| if p.connected { (syn, on + 1) } else { (syn + 1, on) })
    }

    fn insert(&mut self, p: Pending) -> usize {
        let idx = self.pending.iter().position(Option::is_none).unwrap_or_else(|| {
            self.pending.push(None);
            self.pending.len() - 1
        });
        self.pending[idx] = Some(p);
        idx
    }

    /// Arms the timer at the earliest deadline: a redial, a handshake's, a
    /// peer's outage limit. Disarmed when none.
    pub(crate) fn rearm_if_dirty(&mut self, peers: &[Slot], limit: Duration) {
        if !self.dirty {
            return;
        }
        self.dirty = false;
        let dials = self.next_dial.iter().flatten().copied();
        let handshakes = self.pending.iter().flatten().map(|p| p.h.deadline);
        let limits = peers.iter().filter_map(|s| match s {
            Slot::Peer(p) if p.lost.is_none() => p.down.as_ref().map(|d| d.0 + limit),
            _ => None,
        });
        let check = std::iter::once(self.next_check);
        let next = dials.chain(handshakes).chain(limits).chain(check).min();
        self.timer.set(next.map(|t| t.saturating_duration_since(Instant::now())));
    }
}

/// Who may dial this rank after setup: any rank not lost, each time again
/// (a new connection replaces the old), under `pair`'s rule.
struct Live<'a> {
    me: u32,
    seal: Seal,
    maps: &'a Maps,
    peers: &'a [Slot],
    /// Per peer: one of our redials to it has sent its proof.
    proving: Vec<bool>,
}

impl Admit for Live<'_> {
    fn may_claim(&self, rank: u32) -> Result<(), String> {
        match self.peers.get(rank as usize) {
            Some(Slot::Peer(p)) if p.lost.is_none() => crate::pair::admit(self.me, rank, false, self.proving[rank as usize]),
            Some(Slot::Peer(_)) => Err(format!("rank {rank} is already reported lost")),
            _ => Err(format!("claims rank {rank}, not a peer of rank {}", self.me)),
        }
    }
    fn claim(&mut self, _rank: u32) {}
    fn wants_seal(&self, peer: u32, local: Option<IpAddr>, remote: Option<IpAddr>) -> bool {
        wants_seal(self.seal, self.maps, self.me, peer, local, remote)
    }
    fn received(&self, peer: u32) -> u64 {
        match self.peers.get(peer as usize) {
            Some(Slot::Peer(p)) => p.stream.received(),
            _ => 0,
        }
    }
}

impl TcpTransport {
    /// Takes the callers waiting at the listener into handshakes.
    pub(crate) fn accept_all(&mut self) {
        // Bounded: the backlog is finite and each accept empties one slot.
        for _ in 0..1024 {
            let incoming = self.redial.pending.iter().flatten().filter(|p| p.h.dialled().is_none()).count();
            if incoming >= MAX_INCOMING {
                // The rest wait in the backlog; a handshake ending lets them in.
                let _ = self.epoll.modify(self.redial.listener.as_raw_fd(), LISTENER, 0);
                return;
            }
            let (sock, addr) = match self.redial.listener.accept() {
                Ok(x) => x,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) => {
                    eprintln!("wanmpi tcp: rank {}: accept failed: {e}", self.rank);
                    return;
                }
            };
            let addr = addr.as_socket().map_or_else(|| "?".to_string(), |a| a.to_string());
            if let Err(e) = sock.set_nonblocking(true).and_then(|()| setup::tune(&sock, &self.opts)) {
                eprintln!("wanmpi tcp: rank {}: refused connection from {addr}: {e}", self.rank);
                continue;
            }
            let acc = Acceptor::new(&self.redial.secret, self.rank);
            let h = Handshake::incoming(sock, addr, acc, Instant::now() + self.opts.handshake_timeout);
            self.register(Pending { h, connected: true }, READ);
        }
    }

    fn register(&mut self, p: Pending, interest: u32) {
        let fd = p.h.sock.as_raw_fd();
        let idx = self.redial.insert(p);
        self.redial.dirty = true;
        if let Err(e) = self.epoll.add(fd, HS_BASE + idx as u64, interest) {
            self.fail(idx, &format!("epoll: {e}"));
            return;
        }
        self.drive_handshake(idx);
    }

    /// Redials `peer` now, at every target at once.
    fn dial(&mut self, peer: PeerId, now: Instant) {
        let Some(Slot::Peer(p)) = self.peers.get(peer as usize) else { return };
        if p.dial.is_empty() || p.conn.is_some() || p.lost.is_some() {
            return;
        }
        let (got, wait, targets) = (p.stream.received(), PROBE.max(4 * p.rtt), p.dial.clone());
        let mut started = 0;
        // Refused at loopback (`fail`): nothing listens any more.
        let mut refused = false;
        for t in &targets {
            let sock = match setup::start_connect(t.addr, &self.opts) {
                Ok(s) => s,
                Err(e) if e.raw_os_error() == Some(libc::ECONNREFUSED) => {
                    refused |= t.addr.ip().is_loopback();
                    continue;
                }
                Err(_) => continue,
            };
            let conn = match Connector::new(&self.redial.secret, self.rank, peer) {
                Ok(c) => c,
                Err(e) => {
                    eprintln!("wanmpi tcp: rank {}: cannot redial rank {peer}: {e}", self.rank);
                    continue;
                }
            };
            let h = Handshake::outgoing(sock, t.addr.to_string(), peer, conn, got, now + wait);
            self.register(Pending { h, connected: false }, READ | WRITE);
            started += 1;
        }
        if started == 0 {
            return if refused { self.refused(peer, now) } else { self.redial.retry(peer, now) };
        }
        // The next SYNs, should these go unanswered (a silent path).
        self.redial.schedule(peer, now + PROBE_EVERY);
    }

    /// A redial of `peer` was refused: nothing listens at its address.
    fn refused(&mut self, peer: PeerId, now: Instant) {
        let Some(Slot::Peer(p)) = self.peers.get(peer as usize) else { return };
        if p.same_host {
            let at: Vec<String> = p.dial.iter().map(|t| t.addr.to_string()).collect();
            let why = format!("rank {peer} at {} refused the reconnection: nothing listens there, its process is gone", at.join(", "));
            self.lose(peer, why);
        } else {
            self.redial.retry(peer, now);
        }
    }

    /// Drops handshake `idx`; an outgoing one is tried again.
    fn fail(&mut self, idx: usize, reason: &str) {
        let Some(p) = self.redial.pending.get_mut(idx).and_then(Option::take) else { return };
        let _ = self.epoll.delete(p.h.sock.as_raw_fd());
        // Room again for a caller waiting in the backlog.
        let _ = self.epoll.modify(self.redial.listener.as_raw_fd(), LISTENER, READ);
        self.redial.dirty = true;
        let now = Instant::now();
        match p.h.dialled() {
            // Refused at loopback, where the listener (on the wildcard)
            // always is while its process lives: the process is gone. At
            // another address it says little (a firewall's reset, another
            // host's address).
            Some(peer) if p.h.refused && p.h.addr.parse::<std::net::SocketAddr>().is_ok_and(|a| a.ip().is_loopback()) => self.refused(peer, now),
            Some(peer) if p.h.refused && self.redial.dialling(peer) == (0, 0) => self.redial.retry(peer, now),
            Some(_) if p.h.refused => {}
            // A SYN unanswered in its time: the next ones are on their way
            // (`dial` scheduled them); one goes now if none is.
            Some(peer) if !p.connected && p.h.deadline <= now => {
                if self.redial.dialling(peer) == (0, 0) {
                    self.redial.schedule(peer, now);
                }
            }
            Some(peer) if !p.connected => self.redial.retry(peer, now),
            Some(peer) => {
                eprintln!("wanmpi tcp: rank {}: redial of rank {peer} at {} failed: {reason}; retrying", self.rank, p.h.addr);
                self.redial.retry(peer, now);
            }
            None => eprintln!("wanmpi tcp: rank {}: refused connection from {}: {reason}", self.rank, p.h.addr),
        }
    }

    pub(crate) fn drive_handshake(&mut self, idx: usize) {
        let rank = self.rank;
        let mut proving = vec![false; self.peers.len()];
        for p in self.redial.pending.iter().flatten().filter(|p| p.h.proving()) {
            if let Some(peer) = p.h.dialled() {
                proving[peer as usize] = true;
            }
        }
        let Some(p) = self.redial.pending.get_mut(idx).and_then(Option::as_mut) else { return };
        let claimed_before = p.h.claimed();
        let mut live = Live { me: rank, seal: self.opts.seal, maps: &self.opts.maps, peers: &self.peers, proving };
        match p.h.drive(&mut live) {
            Ok(Step::Blocked { write }) => {
                if let (None, Some(caller)) = (claimed_before, p.h.claimed()) {
                    // A caller proved it is `caller` and is being told yes:
                    // our own redials to it must not count too (`pair`).
                    self.drop_dials(caller, Some(idx));
                }
                let Some(p) = self.redial.pending.get_mut(idx).and_then(Option::as_mut) else { return };
                if !p.connected && !p.h.connecting() {
                    p.connected = true;
                    p.h.deadline = Instant::now() + self.opts.handshake_timeout;
                    self.redial.dirty = true;
                    if let Some(peer) = p.h.dialled() {
                        // This SYN was answered: the path is back; the
                        // others (and the next) are not needed. The peer's
                        // host answered: the outage limit counts from now
                        // (a rank busy computing, its handshake not yet
                        // answered, is not an outage).
                        self.redial.next_dial[peer as usize] = None;
                        self.drop_syns(peer, idx);
                        if let Some(Slot::Peer(pp)) = self.peers.get_mut(peer as usize) {
                            if let Some(down) = pp.down.as_mut() {
                                down.0 = Instant::now();
                            }
                        }
                    }
                }
                let Some(p) = self.redial.pending.get_mut(idx).and_then(Option::as_mut) else { return };
                let interest = if write { READ | WRITE } else { READ };
                if let Err(e) = self.epoll.modify(p.h.sock.as_raw_fd(), HS_BASE + idx as u64, interest) {
                    self.fail(idx, &format!("epoll: {e}"));
                }
            }
            Ok(Step::Done(done)) => {
                let Some(p) = self.redial.pending[idx].take() else { return };
                let _ = self.epoll.delete(p.h.sock.as_raw_fd());
                let _ = self.epoll.modify(self.redial.listener.as_raw_fd(), LISTENER, READ);
                self.redial.dirty = true;
                self.adopt(p.h.sock, done);
            }
            Err(reason) => self.fail(idx, &reason),
        }
    }

    /// Drops every redial of ours to `peer` but `keep`, and the next one.
    fn drop_dials(&mut self, peer: PeerId, keep: Option<usize>) {
        for (i, slot) in self.redial.pending.iter_mut().enumerate() {
            if Some(i) != keep && slot.as_ref().is_some_and(|p| p.h.dialled() == Some(peer)) {
                if let Some(p) = slot.take() {
                    let _ = self.epoll.delete(p.h.sock.as_raw_fd());
                    discard(p.h.sock);
                }
            }
        }
        self.redial.next_dial[peer as usize] = None;
        self.redial.dirty = true;
    }

    /// Drops `peer`'s attempts still waiting for their SYN's answer, but `keep`.
    fn drop_syns(&mut self, peer: PeerId, keep: usize) {
        for (i, slot) in self.redial.pending.iter_mut().enumerate() {
            if i != keep && slot.as_ref().is_some_and(|p| p.h.dialled() == Some(peer) && !p.connected) {
                if let Some(p) = slot.take() {
                    let _ = self.epoll.delete(p.h.sock.as_raw_fd());
                }
            }
        }
    }

    /// A new authenticated connection to `done.rank`: it replaces the old
    /// one, and each direction resumes where the receiver said.
    fn adopt(&mut self, sock: Socket, done: Done) {
        let peer = done.rank;
        let rank = self.rank;
        let epoll = &self.epoll;
        let Some(Slot::Peer(p)) = self.peers.get_mut(peer as usize) else { return discard(sock) };
        if p.lost.is_some() {
            return discard(sock);
        }
        if done.our_got != p.stream.received() {
            // More arrived on the old connection after our point was named:
            // that point is stale; the peer redials.
            eprintln!("wanmpi tcp: rank {rank}: reconnection of rank {peer} raced its old connection; dropped, to be redialled");
            discard(sock);
            let delay = crate::pair::dial_delay(self.rank, peer, self.opts.reverse_delay);
            self.redial.schedule(peer, Instant::now() + delay);
            return;
        }
        if let Err(why) = p.stream.resume_at(done.peer_got) {
            discard(sock);
            return self.lose(peer, why.to_string());
        }
        if let Some(old) = p.conn.take() {
            let _ = epoll.delete(old.sock.as_raw_fd());
            discard(old.sock);
        }
        let _ = setup::watch_silence(&sock, &self.opts);
        if let Err(e) = epoll.add(sock.as_raw_fd(), peer as u64, READ) {
            discard(sock);
            return self.lose(peer, format!("epoll: {e}"));
        }
        if let Some(a) = sock.peer_addr().ok().and_then(|a| a.as_socket()) {
            p.addr = a.to_string();
        }
        p.sealed = done.keys.is_some();
        p.conn = Some(Conn::new(sock, done.keys));
        if let Some((since, why)) = p.down.take() {
            eprintln!("wanmpi tcp: rank {rank}: rank {peer} reconnected after {:.1} s ({why})", since.elapsed().as_secs_f64());
        }
        self.reconnects += 1;
        // Whichever side's connection counted, our other attempts are moot.
        self.drop_dials(peer, None);
        self.redial.backoff[peer as usize] = Duration::ZERO;
        self.redial.dirty = true;
        self.flush_peer(peer, false);
    }

    /// Breaks every connection whose path has been silent (nothing
    /// acknowledged while something waits) for `opts.silence`, so it is
    /// redialled rather than left to the kernel's retransmission timer,
    /// which backs off to two minutes. Only connections with frames not yet
    /// acknowledged are looked at (one getsockopt each).
    fn check_silence(&mut self) {
        let silence = self.opts.silence;
        let mut silent = vec![];
        for (peer, slot) in self.peers.iter().enumerate() {
            let Slot::Peer(p) = slot else { continue };
            let Some(c) = p.conn.as_ref().filter(|_| p.stream.held() > 0) else { continue };
            if let Some(quiet) = crate::path::silent_for(&c.sock).filter(|q| *q >= silence) {
                silent.push((peer as PeerId, quiet));
            }
        }
        for (peer, quiet) in silent {
            self.break_conn(peer, format!("path silent for {:.1} s", quiet.as_secs_f64()));
        }
    }

    /// Deadlines: handshakes that took too long, peers past the outage
    /// limit, redials due, the look for silent paths.
    pub(crate) fn tick(&mut self, now: Instant) {
        if self.redial.next_check <= now {
            self.check_silence();
            // A few looks per `silence`, between 0.1 and 1 s apart.
            let every = (self.opts.silence / 3).clamp(Duration::from_millis(100), PROBE);
            self.redial.next_check = now + every;
        }
        for idx in 0..self.redial.pending.len() {
            if self.redial.pending[idx].as_ref().is_some_and(|p| p.h.deadline <= now) {
                self.fail(idx, "handshake timed out");
            }
        }
        let limit = self.opts.outage_limit;
        for peer in 0..self.peers.len() as PeerId {
            let Slot::Peer(p) = &self.peers[peer as usize] else { continue };
            if let (None, Some((since, _))) = (&p.lost, &p.down) {
                if now.duration_since(*since) >= limit {
                    let why = format!("no answer from rank {peer} at {} for {} s", p.addr, secs(limit));
                    self.lose(peer, why);
                    continue;
                }
            }
            if self.redial.next_dial[peer as usize].is_some_and(|t| t <= now) {
                self.redial.next_dial[peer as usize] = None;
                let (syns, on) = self.redial.dialling(peer);
                let round = match &self.peers[peer as usize] {
                    Slot::Peer(p) => p.dial.len().max(1),
                    Slot::Me => 1,
                };
                if on == 0 && syns < MAX_SYNS * round {
                    self.dial(peer, now);
                } else if on == 0 {
                    self.redial.schedule(peer, now + PROBE_EVERY);
                }
            }
        }
        self.redial.dirty = true;
    }
}

/// Seconds for a message: whole when whole.
fn secs(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{s:.0}")
    } else {
        format!("{s:.1}")
    }
}
