//! `Composite`: the `Transport` trait over several connected transports, a
//! route per peer, and per-(peer, channel) order kept across them.

use crate::route::{Pick, Route, EVALUATE_EVERY};
use std::collections::BTreeMap;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};
use wanmpi_transport::{Caps, Incoming, PathStats, PeerId, SendStatus, Tally, TallySink, Transport, TransportError};

/// Bytes in front of every frame: channel u16, sequence u32 (big-endian).
pub const PREFIX_LEN: usize = 6;

/// How long a loss reported by one part waits while another part still
/// reaches the peer: a peer that finished closes its tcp connection while
/// its last frames (its goodbye) may still be on their way over wamp.
const LOSS_GRACE: Duration = Duration::from_secs(2);

/// A part that no peer's pick uses is polled once in this many calls: a
/// frame can still come that way (the peer's own choice may differ, a copy
/// or an acknowledgement may be late), but a receive syscall on every round
/// of a spinning rank cost a near tcp round trip a fifth of its time across
/// the emulator (docs/benchmarks.md at commit 52d70dc, section 31).
const IDLE_POLL_EVERY: u32 = 16;

/// While a pick sends copies, the route is asked this many times as often.
const TRIAL_EVALUATE_FACTOR: u32 = 5;

/// Frames of one (peer, channel) that arrived ahead of their turn.
#[derive(Default)]
struct Reorder {
    next: u32,
    held: BTreeMap<u32, Vec<u8>>,
}

struct PeerState {
    pick: Pick,
    decided: Option<Instant>,
    /// Frames and bytes sent over each part.
    sent: Vec<(u64, u64)>,
    /// Frames and bytes received over each part (copies included; bytes
    /// of the engine's frames, without the prefix, as `sent` counts them).
    received: Vec<(u64, u64)>,
    switches: u64,
    send_seq: Vec<u32>,
    recv: Vec<Reorder>,
    /// Parts that reported the peer lost.
    lost_parts: Vec<bool>,
    /// The first such report, held for `LOSS_GRACE` (or until every part
    /// agrees) before the engine hears of it.
    pending_loss: Option<(Instant, String)>,
    lost_reported: bool,
}

pub struct Composite {
    parts: Vec<Box<dyn Transport>>,
    caps: Caps,
    route: Box<dyn Route>,
    peers: Vec<PeerState>,
    epoll: OwnedFd,
    /// Some part has no readiness fd: `wait` must poll.
    blind: bool,
    evaluate_every: Duration,
    /// Per part: does some peer's pick send over it?
    in_use: Vec<bool>,
    polls: u32,
    /// Frames with a bad prefix (a part's bug, never a stranger: every part
    /// authenticates its peers).
    pub bad_frames: u64,
    /// Frames that came a second time (a route's copy, `Pick::copy`, or a
    /// part delivering twice), dropped.
    pub duplicates: u64,
}

pub(crate) fn epoll_of(parts: &[Box<dyn Transport>]) -> Result<(OwnedFd, bool), TransportError> {
    // SAFETY: plain syscalls; the new fd is owned at once.
    let ep = unsafe {
        let fd = libc::epoll_create1(libc::EPOLL_CLOEXEC);
        if fd < 0 {
            return Err(std::io::Error::last_os_error().into());
        }
        OwnedFd::from_raw_fd(fd)
    };
    let mut blind = false;
    for p in parts {
        match p.readiness_fd() {
            Some(fd) => {
                let mut ev = libc::epoll_event { events: libc::EPOLLIN as u32, u64: fd as u64 };
                // SAFETY: adding a live fd of a part we own to our epoll set.
                if unsafe { libc::epoll_ctl(ep.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, &mut ev) } != 0 {
                    return Err(std::io::Error::last_os_error().into());
                }
            }
            None => blind = true,
        }
    }
    Ok((ep, blind))
}

/// Sleeps until something in `epoll` is ready or `t` passes (a signal
/// ends it early: spurious returns are allowed).
pub(crate) fn epoll_wait(epoll: &OwnedFd, t: Duration) -> Result<(), TransportError> {
    let mut ev = [libc::epoll_event { events: 0, u64: 0 }; 4];
    let ms = t.as_micros().div_ceil(1000).min(i32::MAX as u128) as libc::c_int;
    // SAFETY: ev is a live array of the length passed.
    let r = unsafe { libc::epoll_wait(epoll.as_raw_fd(), ev.as_mut_ptr(), ev.len() as libc::c_int, ms) };
    if r < 0 {
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e.into());
        }
    }
    Ok(())
}

impl Composite {
    /// Joins connected transports of the same job (same rank and size).
    pub fn new(name: &'static str, parts: Vec<Box<dyn Transport>>, route: Box<dyn Route>) -> Result<Composite, TransportError> {
        Composite::with_limits(name, parts, route, 0, usize::MAX)
    }

    /// Like `new`, with at least `channels` channels and frames of at most
    /// `max_frame` bytes: a job whose ranks have different parts (shared
    /// memory on some hosts only) must still agree on both, since a frame's
    /// prefix names its channel.
    pub fn with_limits(
        name: &'static str,
        parts: Vec<Box<dyn Transport>>,
        route: Box<dyn Route>,
        channels: u16,
        max_frame: usize,
    ) -> Result<Composite, TransportError> {
        let first = parts.first().ok_or_else(|| TransportError::Setup("a composite transport needs at least one part".into()))?;
        let (rank, size) = (first.rank(), first.size());
        if parts.iter().any(|p| p.rank() != rank || p.size() != size) {
            return Err(TransportError::Setup("the parts of a composite transport disagree on rank or size".into()));
        }
        let channels = parts.iter().map(|p| p.caps().channels).max().unwrap_or(1).max(channels);
        let max_frame = parts.iter().map(|p| p.caps().max_frame).min().unwrap_or(0).min(max_frame).saturating_sub(PREFIX_LEN);
        let caps = Caps { name, channels, max_frame, eager_limit_hint: first.caps().eager_limit_hint, reliable: true };
        let mut route = route;
        let peers: Vec<PeerState> = (0..size)
            .map(|peer| PeerState {
                pick: first_pick(&parts, route.as_mut(), peer),
                decided: None,
                sent: vec![(0, 0); parts.len()],
                received: vec![(0, 0); parts.len()],
                switches: 0,
                send_seq: vec![0; channels as usize],
                recv: (0..channels).map(|_| Reorder::default()).collect(),
                lost_parts: vec![false; parts.len()],
                pending_loss: None,
                lost_reported: false,
            })
            .collect();
        let (epoll, blind) = epoll_of(&parts)?;
        let in_use = parts_in_use(parts.len(), &peers, rank);
        Ok(Composite { parts, caps, route, peers, epoll, blind, evaluate_every: EVALUATE_EVERY, in_use, polls: 0, bad_frames: 0, duplicates: 0 })
    }

    /// How often the route is asked again per peer (tests switch faster).
    pub fn set_evaluate_every(&mut self, d: Duration) {
        self.evaluate_every = d;
    }

    /// Frames and bytes sent to `peer` over each part.
    pub fn sent(&self, peer: PeerId) -> Option<&[(u64, u64)]> {
        self.peers.get(peer as usize).map(|p| &p.sent[..])
    }

    /// Part `i` unless it does not reach `peer`; then the first that does.
    fn serving(&self, peer: PeerId, i: usize) -> usize {
        serving(&self.parts, peer, i)
    }

    /// The part for a frame of `len` bytes to `peer`, and the part that
    /// carries a copy of it, if any.
    fn pick(&mut self, peer: PeerId, len: usize) -> (usize, Option<usize>) {
        let now = Instant::now();
        let st = &self.peers[peer as usize];
        // Copies cost both parts' work on every frame: while they go, the
        // route is asked more often, so a trial ends soon after it is decided.
        let every = if st.pick.copy.is_some() { self.evaluate_every / TRIAL_EVALUATE_FACTOR } else { self.evaluate_every };
        if st.decided.is_some_and(|t| now.saturating_duration_since(t) < every) {
            return (st.pick.part_for(len), st.pick.copy);
        }
        let paths: Vec<Option<PathStats>> = self.parts.iter().map(|p| p.path(peer)).collect();
        let mut pick = self.route.choose(peer, &st.pick, &paths);
        (pick.small, pick.large) = (self.serving(peer, pick.small), self.serving(peer, pick.large));
        pick.copy = pick.copy.filter(|&c| self.parts.get(c).is_some_and(|p| p.serves(peer)));
        let st = &mut self.peers[peer as usize];
        if st.decided.is_some() && (pick.small, pick.large) != (st.pick.small, st.pick.large) {
            st.switches += 1;
        }
        let parts_changed = (pick.small, pick.large, pick.copy) != (st.pick.small, st.pick.large, st.pick.copy);
        st.pick = pick;
        st.decided = Some(now);
        let chosen = (st.pick.part_for(len), st.pick.copy);
        if parts_changed {
            self.in_use = parts_in_use(self.parts.len(), &self.peers, self.rank());
        }
        chosen
    }

    /// Per peer, what went where and why (WANMPI_STATS=1).
    pub fn report(&self) -> String {
        let mut s = format!("{} rank {}:", self.caps.name, self.rank());
        for (peer, st) in self.peers.iter().enumerate() {
            if peer as u32 == self.rank() {
                continue;
            }
            let per: Vec<String> = self.parts.iter().zip(&st.sent).map(|(p, (f, b))| format!("{} {f} frames / {b} B", p.caps().name)).collect();
            let name = |i: usize| self.parts[i].caps().name;
            let mut now = if st.pick.small == st.pick.large {
                name(st.pick.small).to_string()
            } else {
                format!("{} under {} B, {} above", name(st.pick.small), st.pick.large_from, name(st.pick.large))
            };
            if let Some(c) = st.pick.copy {
                now += &format!(" with copies over {}", name(c));
            }
            s += &format!("\n  to rank {peer}: {}; now {now} because {}; {} switches", per.join(", "), st.pick.why, st.switches);
        }
        if self.duplicates > 0 {
            s += &format!("\n  {} frames came twice (copies) and were dropped", self.duplicates);
        }
        s
    }
}

/// Part `i` if it exists and reaches `peer`, else the first part that does
/// (else part 0, whose `try_send` will say the peer is not served).
fn serving(parts: &[Box<dyn Transport>], peer: PeerId, i: usize) -> usize {
    if parts.get(i).is_some_and(|p| p.serves(peer)) {
        return i;
    }
    parts.iter().position(|p| p.serves(peer)).unwrap_or(0)
}

/// Per part, whether some other peer's pick sends over it (our own entry
/// carries nothing: the engine keeps messages to itself).
fn parts_in_use(parts: usize, peers: &[PeerState], rank: PeerId) -> Vec<bool> {
    let mut used = vec![false; parts];
    let others = peers.iter().enumerate().filter(|&(p, _)| p != rank as usize).map(|(_, st)| st);
    for st in others {
        for i in [Some(st.pick.small), Some(st.pick.large), st.pick.copy].into_iter().flatten() {
            if let Some(u) = used.get_mut(i) {
                *u = true;
            }
        }
    }
    used
}

/// The route's first word on `peer`, before anything was measured, so that
/// `path` answers for the right part before the first frame goes.
fn first_pick(parts: &[Box<dyn Transport>], route: &mut dyn Route, peer: PeerId) -> Pick {
    let paths: Vec<Option<PathStats>> = parts.iter().map(|p| p.path(peer)).collect();
    let mut pick = route.choose(peer, &Pick::all(serving(parts, peer, 0), "not decided yet"), &paths);
    (pick.small, pick.large) = (serving(parts, peer, pick.small), serving(parts, peer, pick.large));
    pick
}

/// Hands a frame to the engine in its channel's order (holding it if it
/// came early, releasing those it was holding up); returns frames delivered.
fn deliver(st: &mut PeerState, peer: PeerId, bytes: &[u8], bad_frames: &mut u64, duplicates: &mut u64, sink: &mut dyn FnMut(Incoming<'_>)) -> usize {
    if bytes.len() < PREFIX_LEN {
        *bad_frames += 1;
        return 0;
    }
    let channel = u16::from_be_bytes([bytes[0], bytes[1]]);
    let seq = u32::from_be_bytes([bytes[2], bytes[3], bytes[4], bytes[5]]);
    let Some(r) = st.recv.get_mut(channel as usize) else {
        *bad_frames += 1;
        return 0;
    };
    let ahead = seq.wrapping_sub(r.next);
    if ahead >= u32::MAX / 2 {
        *duplicates += 1; // already delivered: a copy, or a part delivered twice
        return 0;
    }
    if ahead > 0 {
        r.held.insert(seq, bytes[PREFIX_LEN..].to_vec());
        return 0;
    }
    sink(Incoming::Frame { peer, channel, bytes: &bytes[PREFIX_LEN..] });
    let mut n = 1;
    r.next = r.next.wrapping_add(1);
    while let Some(b) = r.held.remove(&r.next) {
        sink(Incoming::Frame { peer, channel, bytes: &b });
        n += 1;
        r.next = r.next.wrapping_add(1);
    }
    n
}

fn prefix(channel: u16, seq: u32) -> [u8; PREFIX_LEN] {
    let mut h = [0u8; PREFIX_LEN];
    h[..2].copy_from_slice(&channel.to_be_bytes());
    h[2..].copy_from_slice(&seq.to_be_bytes());
    h
}

impl Transport for Composite {
    fn caps(&self) -> &Caps {
        &self.caps
    }

    fn rank(&self) -> PeerId {
        self.parts[0].rank()
    }

    fn size(&self) -> u32 {
        self.parts[0].size()
    }

    fn try_send(&mut self, peer: PeerId, channel: u16, parts: &[&[u8]]) -> Result<SendStatus, TransportError> {
        let len = self.caps.check_frame(channel, parts)?;
        if peer >= self.size() {
            return Err(TransportError::NoSuchPeer(peer));
        }
        let (part, copy) = self.pick(peer, len);
        let st = &mut self.peers[peer as usize];
        let seq = st.send_seq[channel as usize];
        let head = prefix(channel, seq);
        let mut all: Vec<&[u8]> = Vec::with_capacity(parts.len() + 1);
        all.push(&head);
        all.extend_from_slice(parts);
        let t = &mut self.parts[part];
        let sub_channel = channel % t.caps().channels;
        let r = t.try_send(peer, sub_channel, &all)?;
        if r == SendStatus::Sent {
            st.send_seq[channel as usize] = seq.wrapping_add(1);
            st.sent[part].0 += 1;
            st.sent[part].1 += len as u64;
            if let Some(c) = copy.filter(|&c| c != part) {
                // Best effort: the frame is on its way already, so a copy
                // that cannot leave now (or a part that lost the peer) is
                // simply not sent.
                let t = &mut self.parts[c];
                if let Ok(SendStatus::Sent) = t.try_send(peer, channel % t.caps().channels, &all) {
                    st.sent[c].0 += 1;
                    st.sent[c].1 += len as u64;
                }
            }
        }
        Ok(r)
    }

    fn poll_recv(&mut self, sink: &mut dyn FnMut(Incoming<'_>)) -> Result<usize, TransportError> {
        let mut n = 0;
        self.polls = self.polls.wrapping_add(1);
        let poll_idle = self.polls.is_multiple_of(IDLE_POLL_EVERY);
        let Composite { parts, peers, bad_frames, duplicates, in_use, .. } = self;
        for (i, part) in parts.iter_mut().enumerate() {
            if !in_use[i] && !poll_idle {
                continue;
            }
            part.poll_recv(&mut |ev| match ev {
                Incoming::Frame { peer, bytes, .. } => {
                    let Some(st) = peers.get_mut(peer as usize) else { return };
                    // The engine's frame, as counted on the way out (no prefix).
                    if let Some(r) = st.received.get_mut(i) {
                        r.0 += 1;
                        r.1 += bytes.len().saturating_sub(PREFIX_LEN) as u64;
                    }
                    n += deliver(st, peer, bytes, bad_frames, duplicates, sink);
                }
                Incoming::PeerLost { peer, reason } => {
                    if let Some(st) = peers.get_mut(peer as usize) {
                        st.lost_parts[i] = true;
                        st.pending_loss.get_or_insert_with(|| (Instant::now(), reason));
                    }
                }
            })?;
        }
        // The clock only when a loss waits (a read on every poll of a
        // spinning rank showed in profiles).
        let mut now = None;
        for (peer, st) in self.peers.iter_mut().enumerate() {
            let Some((since, reason)) = &st.pending_loss else { continue };
            if st.lost_reported {
                continue;
            }
            let now = *now.get_or_insert_with(Instant::now);
            let every_part = self.parts.iter().zip(&st.lost_parts).all(|(p, &lost)| lost || !p.serves(peer as u32));
            if every_part || now.saturating_duration_since(*since) >= LOSS_GRACE {
                st.lost_reported = true;
                sink(Incoming::PeerLost { peer: peer as u32, reason: reason.clone() });
                n += 1;
            }
        }
        Ok(n)
    }

    /// Looks in the part that carries our short frames to `peer` (the
    /// route is symmetric: a same-host peer's frames come by shared
    /// memory). A frame is offered only when it is next in its channel's
    /// order with none held back, so one that came by another part first
    /// is never overtaken.
    fn take_next_from(&mut self, peer: PeerId, take: &mut dyn FnMut(&[u8]) -> bool) -> Option<bool> {
        let st = self.peers.get_mut(peer as usize)?;
        let part = st.pick.small;
        if st.pending_loss.is_some() || !self.parts.get(part)?.serves(peer) {
            return None;
        }
        self.parts[part].take_next_from(peer, &mut |bytes| {
            if bytes.len() < PREFIX_LEN {
                return false;
            }
            let channel = u16::from_be_bytes([bytes[0], bytes[1]]);
            let seq = u32::from_be_bytes([bytes[2], bytes[3], bytes[4], bytes[5]]);
            match st.recv.get_mut(channel as usize) {
                Some(r) if r.next == seq && r.held.is_empty() && take(&bytes[PREFIX_LEN..]) => {
                    r.next = r.next.wrapping_add(1);
                    true
                }
                _ => false,
            }
        })
    }

    fn flush(&mut self) -> Result<bool, TransportError> {
        let mut busy = false;
        for p in &mut self.parts {
            busy |= p.flush()?;
        }
        Ok(busy)
    }

    fn wait(&mut self, timeout: Duration) -> Result<(), TransportError> {
        if !self.prepare_sleep() {
            return Ok(());
        }
        let mut t = if self.blind { timeout.min(Duration::from_millis(1)) } else { timeout };
        let now = Instant::now();
        for st in self.peers.iter().filter(|st| !st.lost_reported) {
            if let Some((since, _)) = &st.pending_loss {
                t = t.min((*since + LOSS_GRACE).saturating_duration_since(now));
            }
        }
        epoll_wait(&self.epoll, t)
    }

    fn readiness_fd(&self) -> Option<i32> {
        Some(self.epoll.as_raw_fd())
    }

    /// Every part prepares (each may arm its own wake-up).
    fn prepare_sleep(&mut self) -> bool {
        // Not `all`: every part must prepare, even after one said no.
        let mut may = true;
        for p in &mut self.parts {
            may &= p.prepare_sleep();
        }
        may
    }

    fn serves(&self, peer: PeerId) -> bool {
        self.parts.iter().any(|p| p.serves(peer))
    }

    fn path(&self, peer: PeerId) -> Option<PathStats> {
        let st = self.peers.get(peer as usize)?;
        self.parts[st.pick.large].path(peer)
    }

    /// Each part that carried something to or from `peer`: the engine's
    /// frames as counted here (without this composite's prefix), what the part repeated as it counts
    /// it. A part that counts frames itself (a composite inside) reports
    /// on its own.
    fn tally(&self, peer: PeerId, sink: &mut TallySink<'_>) {
        let Some(st) = self.peers.get(peer as usize) else { return };
        for (i, part) in self.parts.iter().enumerate() {
            let mut own = Tally::default();
            let mut nested = false;
            part.tally(peer, &mut |name, t| {
                if t.counts_frames() {
                    nested = true;
                    sink(name, t);
                } else {
                    own.add(&t);
                }
            });
            if nested {
                continue;
            }
            let ((fs, bs), (fr, br)) = (st.sent[i], st.received[i]);
            (own.frames_sent, own.bytes_sent, own.frames_received, own.bytes_received) = (fs, bs, fr, br);
            if own != Tally::default() {
                sink(part.caps().name, own);
            }
        }
    }

    /// The part that carries `peer`'s long messages knows.
    fn local_process(&self, peer: PeerId) -> Option<u32> {
        let st = self.peers.get(peer as usize)?;
        self.parts[st.pick.large].local_process(peer)
    }

    fn wants_progress_thread(&self) -> bool {
        self.parts.iter().any(|p| p.wants_progress_thread())
    }

    fn peer_failed(&mut self, peer: PeerId) {
        for p in &mut self.parts {
            p.peer_failed(peer);
        }
    }

    /// Lets every part's data leave before any part closes: a peer seeing
    /// one part close must already have what the others carried (see also
    /// `LOSS_GRACE` on the receiving side). Then the parts close, last first.
    fn shutdown(&mut self, timeout: Duration) -> Result<(), TransportError> {
        if std::env::var("WANMPI_STATS").is_ok_and(|v| v.trim() == "1") {
            eprintln!("{}", self.report());
        }
        let start = Instant::now();
        while start.elapsed() < timeout / 2 {
            let mut busy = false;
            for p in &mut self.parts {
                busy |= p.flush()?;
            }
            if !busy {
                break;
            }
            self.wait(Duration::from_millis(5))?;
        }
        let left = timeout.saturating_sub(start.elapsed());
        let mut first_err = None;
        for p in self.parts.iter_mut().rev() {
            if let Err(e) = p.shutdown(left) {
                first_err.get_or_insert(e);
            }
        }
        first_err.map_or(Ok(()), Err)
    }
}
