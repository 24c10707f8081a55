//! `ShmTransport`: the rings of every local peer behind the `Transport` trait.
//!
//! Wake-up protocol (no lost wake-ups, no syscalls while both sides are busy):
//! - A reader that may sleep *arms*: sets `armed` in each incoming ring,
//!   fences (a full barrier: `barrier.rs`), then re-checks every ring; data
//!   found means it rings its own doorbell instead of sleeping on it. `wait`
//!   always arms. `prepare_sleep` arms (the runtime calls it before it
//!   sleeps on the readiness fd); so may `poll_recv` when it returns with
//!   the rings empty (`ShmOptions::arm_after`), for callers that sleep on
//!   the fd without saying so.
//! - A writer publishes `tail`, fences, and if `armed` is set swaps
//!   it to 0 and rings the reader's doorbell. Either the writer sees the flag
//!   or the reader's re-check sees the data (the two fences order them).
//! - A writer that found a ring full sets `space_wanted`, fences, retries;
//!   the reader, after freeing space, fences and rings the writer if it is set.
//! - Every ring is counted (`pokes`, `space_pokes`) before its byte is
//!   written, so a rank reads its FIFO only when the counts passed what it
//!   read: no syscall when idle or busy, and no byte left to make the fd
//!   readable for nothing (a woken reader that spun on such a byte could
//!   keep the writer that is about to count it off the CPU).
//!
//! Liveness: every `liveness_interval`, `poll_recv` checks each peer's closed
//! flags and process (`liveness.rs`); `wait` also sleeps on the pidfds. A
//! peer found gone is reported once as `PeerLost`, after its ring is drained
//! (frames it sent before leaving still count).

use crate::barrier::full_fence;
use crate::inbound::Inbound;
use crate::liveness::Watch;
use crate::options::ShmOptions;
use crate::ring::{Consumer, Producer};
use crate::slot::Slot;
use crate::wake::{Bell, Doorbell};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use wanmpi_transport::{Caps, Incoming, PathStats, PeerId, SendStatus, Transport, TransportError};

/// What the engine gets from `path`: one host, so a round trip of about a
/// microsecond and memory bandwidth. Measuring would only add noise; the
/// runtime needs just "near" (below `FAR_RTT`) to keep these peers out of
/// its WAN window and in this host's site.
const PATH_RTT: Duration = Duration::from_micros(1);
const PATH_RATE: f64 = 10e9;

enum State {
    Up,
    /// Gone (closed, exited, broke the protocol): report once the ring is drained.
    Leaving(String),
    /// Reported.
    Lost(String),
}

/// One local peer: our ring to it, its ring to us, its doorbell.
pub(crate) struct Link {
    peer: PeerId,
    tx: Producer,
    rx: Consumer,
    // The rings point into these mappings: keep them after tx/rx.
    out: Slot,
    inn: Slot,
    bell: Bell,
    watch: Watch,
    state: State,
    sent: u64,
    /// Bytes `take_next` consumed since it last looked for a writer
    /// waiting for space (`wake_writer`).
    taken_unchecked: usize,
}

/// `take_next` looks for a writer waiting for space after this share of
/// the ring at the latest (and whenever it finds the ring empty).
const TAKE_CHECK_SHARE: usize = 8;

impl Link {
    pub(crate) fn new(peer: PeerId, out: Slot, inn: Slot, bell: Bell, watch: Watch, max_frame: usize, opts: &ShmOptions) -> Link {
        let tx = Producer::new(out.ring());
        let rx = Consumer::new(inn.ring(), max_frame, opts.channels);
        Link { peer, tx, rx, out, inn, bell, watch, state: State::Up, sent: 0, taken_unchecked: 0 }
    }

    /// Rings the reader if it armed (after we published).
    fn wake_reader(&self) {
        full_fence();
        let armed = &self.out.header().reader.armed;
        if armed.load(Ordering::Relaxed) != 0 && armed.swap(0, Ordering::AcqRel) != 0 {
            ring_counted(&self.bell, &self.out.header().writer.pokes);
        }
    }

    /// Asks the reader to ring us once `bytes` are free. Half the ring at
    /// least, so a blocked writer wakes once per half-ring rather than once
    /// per frame the reader takes.
    fn want_space(&self, bytes: usize) {
        let bytes = bytes.max(self.tx.capacity() / 2).min(self.tx.capacity());
        self.out.header().writer.space_wanted.store(bytes as u64, Ordering::Relaxed);
        full_fence();
    }

    /// Rings the writer if it waits for space and enough is free now.
    fn wake_writer(&self) {
        full_fence();
        let wanted = &self.inn.header().writer.space_wanted;
        let w = wanted.load(Ordering::Relaxed);
        // A corrupt count reads as "not enough": the writer's own checks catch it.
        if w == 0 || self.rx.free_bytes().map_or(true, |free| (free as u64) < w) {
            return;
        }
        if wanted.swap(0, Ordering::AcqRel) != 0 {
            ring_counted(&self.bell, &self.inn.header().reader.space_pokes);
        }
    }

    /// Offers the next frame to `take` (see `Transport::take_next_from`).
    /// None when the link is going or broken: `receive` reports that.
    ///
    /// A taken frame does not look for a writer waiting for space at once
    /// (a full barrier and a load, on the path of a one-byte message from
    /// its arrival to the receive's return): that waits for the next poll
    /// that finds the ring empty (the express receive's next wait), for an
    /// eighth of the ring taken, or for `receive`/`arm`. A writer blocked
    /// on a full ring asks for half of it free, so it is woken at most an
    /// eighth of the ring late; meanwhile the runtime retries a blocked
    /// send every 200 us anyway.
    fn take_next(&mut self, take: &mut dyn FnMut(&[u8]) -> bool) -> Option<bool> {
        if !matches!(self.state, State::Up) {
            return None;
        }
        let mut offered = 0;
        let taken = self
            .rx
            .pop_if(|_, bytes| {
                offered = bytes.len();
                take(bytes)
            })
            .ok()?;
        if taken {
            self.taken_unchecked += offered.max(1);
            if self.taken_unchecked >= self.rx.capacity() / TAKE_CHECK_SHARE {
                self.check_writer();
            }
        } else if self.taken_unchecked > 0 && offered == 0 {
            // The ring is empty: a waiting writer can have all of it.
            self.check_writer();
        }
        Some(taken)
    }

    /// `wake_writer` for what `take_next` took so far.
    fn check_writer(&mut self) {
        self.taken_unchecked = 0;
        self.wake_writer();
    }

    /// Rings this link's peer has given us so far (data and space).
    fn rings_in(&self) -> u64 {
        let data = self.inn.header().writer.pokes.load(Ordering::Acquire);
        data.wrapping_add(self.out.header().reader.space_pokes.load(Ordering::Acquire))
    }

    /// Marks the peer gone if it closed or its process exited.
    fn check_alive(&mut self) {
        if !matches!(self.state, State::Up) {
            return;
        }
        let closed =
            self.inn.header().meta.writer_closed.load(Ordering::Acquire) != 0 || self.out.header().meta.reader_closed.load(Ordering::Acquire) != 0;
        if closed {
            self.state = State::Leaving(format!("rank {} closed its shared-memory link (shut down)", self.peer));
        } else if self.watch.exited() {
            self.state = State::Leaving(format!("process {} (rank {}) exited", self.watch.pid(), self.peer));
        }
    }

    /// Delivers up to `batch` frames; reports the peer lost when it is
    /// leaving and its ring is empty. Returns (events, frames left behind).
    fn receive(&mut self, batch: usize, sink: &mut dyn FnMut(Incoming<'_>)) -> (usize, bool) {
        if matches!(self.state, State::Lost(_)) {
            return (0, false);
        }
        let peer = self.peer;
        let mut n = 0;
        let mut broken = None;
        while n < batch {
            match self.rx.pop(|channel, bytes| sink(Incoming::Frame { peer, channel, bytes })) {
                Ok(true) => n += 1,
                Ok(false) => break,
                Err(e) => {
                    broken = Some(format!("rank {peer} wrote a corrupt shared-memory ring: {e}"));
                    break;
                }
            }
        }
        if n > 0 || self.taken_unchecked > 0 {
            self.check_writer();
        }
        let reason = match (broken, &mut self.state) {
            (Some(r), _) => r,
            (None, _) if n == batch => return (n, true),
            (None, State::Leaving(r)) => std::mem::take(r),
            (None, _) => return (n, false),
        };
        sink(Incoming::PeerLost { peer, reason: reason.clone() });
        self.state = State::Lost(reason);
        (n + 1, false)
    }
}

/// The shared-memory transport of one rank. Made by [`crate::setup`].
pub struct ShmTransport {
    rank: PeerId,
    size: u32,
    caps: Caps,
    opts: ShmOptions,
    links: Vec<Link>,
    /// World rank -> index in `links` (None: not served here).
    index: Vec<Option<usize>>,
    self_queue: VecDeque<(u16, Vec<u8>)>,
    doorbell: Doorbell,
    /// Our inbound memory: its fd stays open for the job's life, so a peer
    /// may open it by /proc however late (None: no local peer).
    _inbound: Option<Inbound>,
    /// Bytes read from the doorbell so far (each is one ring).
    rings_read: u64,
    /// Rings we gave ourselves.
    self_rings: u64,
    /// When `poll_recv` next looks at the peers' liveness, on the coarse
    /// clock (`coarse_now`): the fine one costs every busy poll a clock read.
    next_check: Duration,
    /// `poll_recv`s since the last clock read (see `CLOCK_EVERY`).
    polls_unclocked: u32,
    /// First link served by the next `poll_recv` (round robin).
    start: usize,
    pollfds: Vec<libc::pollfd>,
    /// `arm` ran since the last `poll_recv`: the caller may be asleep on the fd.
    armed: bool,
    /// Empty `poll_recv`s in a row (`ShmOptions::arm_after`).
    idle_polls: u32,
    closed: bool,
}

impl ShmTransport {
    pub(crate) fn new(
        rank: PeerId,
        size: u32,
        opts: ShmOptions,
        max_frame: usize,
        doorbell: Doorbell,
        inbound: Option<Inbound>,
        links: Vec<Link>,
    ) -> ShmTransport {
        let caps = Caps { name: "shm", channels: opts.channels, max_frame, eager_limit_hint: 64 << 10, reliable: true };
        let mut index = vec![None; size as usize];
        for (i, l) in links.iter().enumerate() {
            index[l.peer as usize] = Some(i);
        }
        ShmTransport {
            rank,
            size,
            caps,
            next_check: coarse_now() + opts.liveness_interval,
            opts,
            links,
            index,
            self_queue: VecDeque::new(),
            doorbell,
            _inbound: inbound,
            rings_read: 0,
            self_rings: 0,
            polls_unclocked: 0,
            start: 0,
            pollfds: Vec::new(),
            armed: false,
            idle_polls: 0,
            closed: false,
        }
    }

    /// The ranks this transport serves (the local ranks but this one).
    pub fn peers(&self) -> impl Iterator<Item = PeerId> + '_ {
        self.links.iter().map(|l| l.peer)
    }

    fn link(&mut self, peer: PeerId) -> Option<&mut Link> {
        let i = (*self.index.get(peer as usize)?)?;
        Some(&mut self.links[i])
    }

    fn ring_self(&mut self) {
        self.self_rings += 1;
        if !self.doorbell.ring_self() {
            self.self_rings -= 1;
        }
    }

    /// Reads the doorbell if rings were counted that we have not read.
    /// Every ring is counted before its byte is written, so a byte in the
    /// FIFO is always due: the fd never stays readable for nothing.
    fn drain_doorbell(&mut self) {
        let due = self.links.iter().fold(self.self_rings, |a, l| a.wrapping_add(l.rings_in()));
        if due != self.rings_read {
            self.rings_read = self.rings_read.wrapping_add(self.doorbell.drain());
        }
    }

    /// Arms every incoming ring, then re-checks them; rings our own
    /// doorbell if something is (or may be) there. True if so.
    fn arm(&mut self) -> bool {
        self.armed = true;
        for l in self.links.iter_mut().filter(|l| l.taken_unchecked > 0) {
            l.check_writer();
        }
        for l in &self.links {
            let armed = &l.inn.header().reader.armed;
            if armed.load(Ordering::Relaxed) == 0 {
                armed.store(1, Ordering::Relaxed);
            }
        }
        full_fence();
        let pending = self.links.iter_mut().any(|l| match l.state {
            State::Lost(_) => false,
            State::Leaving(_) => true,
            State::Up => l.rx.has_data().unwrap_or(true),
        });
        if pending {
            self.ring_self();
        }
        pending
    }

    fn check_liveness(&mut self, now: Duration) {
        self.next_check = now + self.opts.liveness_interval;
        for l in &mut self.links {
            l.check_alive();
        }
    }

    /// Test hook: the data area of our ring to `peer`, to play a hostile writer.
    #[cfg(test)]
    pub(crate) fn out_ring_data(&self, peer: PeerId) -> *mut u8 {
        self.links.iter().find(|l| l.peer == peer).expect("a served peer").out.data_ptr()
    }

    /// Sets the closed flags (so peers tell a shutdown from a crash) and
    /// rings every peer so a sleeping one notices.
    fn mark_closed(&mut self) {
        self.closed = true;
        for l in &self.links {
            l.out.header().meta.writer_closed.store(1, Ordering::Release);
            l.inn.header().meta.reader_closed.store(1, Ordering::Release);
            ring_counted(&l.bell, &l.out.header().writer.pokes);
        }
    }

    /// Sleeps on the doorbell and the pidfds of live peers, at most `t`.
    fn sleep(&mut self, t: Duration) -> Result<(), TransportError> {
        let mut fds = std::mem::take(&mut self.pollfds);
        fds.clear();
        fds.push(libc::pollfd { fd: self.doorbell.fd(), events: libc::POLLIN, revents: 0 });
        let mut blind = false;
        for l in self.links.iter().filter(|l| matches!(l.state, State::Up)) {
            match l.watch.fd() {
                Some(fd) => fds.push(libc::pollfd { fd, events: libc::POLLIN, revents: 0 }),
                None => blind = true,
            }
        }
        // Without pidfds, deaths are found only by polling: wake to look.
        let t = if blind { t.min(self.opts.liveness_interval) } else { t };
        // Round up so a sub-millisecond timeout does not become a busy poll.
        let ms = t.as_micros().div_ceil(1000).min(i32::MAX as u128) as libc::c_int;
        // SAFETY: fds is a live array of the length passed.
        let r = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
        let err = (r < 0).then(std::io::Error::last_os_error);
        if fds[1..].iter().any(|p| p.revents != 0) {
            // A peer exited: look at once rather than at the next interval.
            self.next_check = Duration::ZERO;
        }
        self.pollfds = fds;
        match err {
            Some(e) if e.kind() != std::io::ErrorKind::Interrupted => Err(e.into()),
            _ => Ok(()),
        }
    }
}

/// `poll_recv` reads the clock on one call in this many (and at once after
/// `sleep` saw a peer exit): a busy poll loop makes millions of calls a
/// second, a sleeping one a call per sleep, so liveness is still looked at
/// every `liveness_interval` or soon after.
const CLOCK_EVERY: u32 = 64;

/// The monotonic clock at tick resolution (a few ms), read without the
/// hardware counter: enough for liveness checks every `liveness_interval`.
fn coarse_now() -> Duration {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: ts is a live timespec; CLOCK_MONOTONIC_COARSE always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_COARSE, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Counts a ring, then gives it: a reader that sees a byte has always seen
/// its count (see `drain_doorbell`). A ring that could not be given is
/// uncounted.
fn ring_counted(bell: &Bell, count: &AtomicU64) {
    count.fetch_add(1, Ordering::AcqRel);
    if !bell.ring() {
        count.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Transport for ShmTransport {
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
        let len = self.caps.check_frame(channel, parts)?;
        if peer == self.rank {
            self.self_queue.push_back((channel, parts.concat()));
            if std::mem::take(&mut self.armed) {
                // A caller about to sleep on the fd must see this frame too.
                self.ring_self();
            }
            return Ok(SendStatus::Sent);
        }
        let link = self.link(peer).ok_or(TransportError::NoSuchPeer(peer))?;
        if let State::Leaving(r) | State::Lost(r) = &link.state {
            return Err(TransportError::PeerLost { peer, reason: r.clone() });
        }
        let mut pushed = link.tx.try_push(channel, parts, len);
        if let Ok(false) = pushed {
            // Ask for a ring when space frees, then look once more: the
            // reader may have freed it before seeing the request.
            link.want_space(link.tx.need_bytes(len));
            pushed = link.tx.try_push(channel, parts, len);
        }
        match pushed {
            Ok(true) => {
                link.sent += 1;
                link.wake_reader();
                Ok(SendStatus::Sent)
            }
            Ok(false) => Ok(SendStatus::WouldBlock),
            Err(e) => {
                let reason = format!("rank {peer} corrupted the shared-memory ring we write: {e}");
                link.state = State::Leaving(reason.clone());
                Err(TransportError::PeerLost { peer, reason })
            }
        }
    }

    fn poll_recv(&mut self, sink: &mut dyn FnMut(Incoming<'_>)) -> Result<usize, TransportError> {
        self.armed = false;
        self.drain_doorbell();
        let mut n = 0;
        for _ in 0..self.self_queue.len() {
            if let Some((channel, bytes)) = self.self_queue.pop_front() {
                sink(Incoming::Frame { peer: self.rank, channel, bytes: &bytes });
                n += 1;
            }
        }
        self.polls_unclocked += 1;
        if self.polls_unclocked >= CLOCK_EVERY || self.next_check.is_zero() {
            self.polls_unclocked = 0;
            let now = coarse_now();
            if now >= self.next_check {
                self.check_liveness(now);
            }
        }
        let mut behind = false;
        let count = self.links.len();
        for k in 0..count {
            let link = &mut self.links[(self.start + k) % count];
            let (got, left) = link.receive(self.opts.batch, sink);
            n += got;
            behind |= left;
        }
        self.start = (self.start + 1) % count.max(1);
        if behind {
            // Frames left for the next call: keep the fd readable meanwhile.
            self.ring_self();
        } else {
            self.idle_polls = if n > 0 { 0 } else { self.idle_polls.saturating_add(1) };
            let arm = match self.opts.arm_after {
                0 => true,
                ShmOptions::ARM_ONLY_BEFORE_SLEEP => false,
                n => self.idle_polls >= n,
            };
            if arm {
                self.arm();
            }
        }
        Ok(n)
    }

    fn take_next_from(&mut self, peer: PeerId, take: &mut dyn FnMut(&[u8]) -> bool) -> Option<bool> {
        self.link(peer)?.take_next(take)
    }

    fn flush(&mut self) -> Result<bool, TransportError> {
        // try_send writes straight into the ring: nothing is held back.
        Ok(false)
    }

    fn wait(&mut self, timeout: Duration) -> Result<(), TransportError> {
        if !self.self_queue.is_empty() || self.arm() {
            return Ok(());
        }
        self.sleep(timeout)
    }

    fn readiness_fd(&self) -> Option<i32> {
        Some(self.doorbell.fd())
    }

    fn prepare_sleep(&mut self) -> bool {
        self.self_queue.is_empty() && !self.arm()
    }

    fn serves(&self, peer: PeerId) -> bool {
        peer == self.rank || self.links.iter().any(|l| l.peer == peer)
    }

    /// The pid setup checked (`setup.rs`: the process holding the memory
    /// and doorbell the peer published, with the job's token), while the
    /// peer is up.
    fn local_process(&self, peer: PeerId) -> Option<u32> {
        let l = self.links.iter().find(|l| l.peer == peer)?;
        matches!(l.state, State::Up).then(|| l.watch.pid())
    }

    /// A fixed estimate, not a measurement: see `PATH_RTT`.
    fn path(&self, peer: PeerId) -> Option<PathStats> {
        let l = self.links.iter().find(|l| l.peer == peer)?;
        Some(PathStats { srtt: PATH_RTT, min_rtt: PATH_RTT, loss: 0.0, sent: l.sent, delivery_rate: PATH_RATE })
    }

    /// Waits (at most `timeout`) until every live reader has taken all we
    /// wrote, then marks our side closed. Frames from peers that arrive
    /// meanwhile are read and dropped.
    fn shutdown(&mut self, timeout: Duration) -> Result<(), TransportError> {
        if self.closed {
            return Ok(());
        }
        let deadline = Instant::now() + timeout;
        loop {
            self.drain_doorbell();
            let mut pending = false;
            for l in &mut self.links {
                // Frames still coming to us (a peer's goodbye) are dropped:
                // the caller needs nothing more, and a peer shutting down
                // at the same time waits for its ring to us to drain, as we
                // wait for ours; if neither read, both would wait out the
                // deadline.
                while l.receive(64, &mut |_| {}).1 {}
                l.check_alive();
                if !matches!(l.state, State::Up) {
                    continue;
                }
                if let Ok(false) = l.tx.is_drained() {
                    l.want_space(usize::MAX);
                    pending |= matches!(l.tx.is_drained(), Ok(false));
                }
            }
            let now = Instant::now();
            if !pending || now >= deadline {
                break;
            }
            // Bounded naps: a reader that stopped reading but lives is
            // noticed only by the deadline.
            self.sleep((deadline - now).min(Duration::from_millis(10)))?;
        }
        self.mark_closed();
        Ok(())
    }
}

impl Drop for ShmTransport {
    fn drop(&mut self) {
        if !self.closed {
            self.mark_closed();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ranks 0 and 1 of a two-rank job with 64 KiB rings, threads of this process.
    fn pair() -> (ShmTransport, ShmTransport) {
        let opts = ShmOptions { ring_bytes: Some(64 << 10), ..ShmOptions::default() };
        let mut kvs = wanmpi_bootstrap::local_kv_world(2);
        let (mut kv1, mut kv0) = (kvs.pop().unwrap(), kvs.pop().unwrap());
        let o = opts.clone();
        let h = std::thread::spawn(move || crate::setup(&mut kv1, &[0, 1], &o).unwrap());
        let a = crate::setup(&mut kv0, &[0, 1], &opts).unwrap();
        (a, h.join().unwrap())
    }

    /// Rank 1 turns hostile: it overwrites the length of a frame it already
    /// published. Rank 0 must report it lost, not read past the ring.
    #[test]
    fn a_corrupt_length_from_a_peer_is_a_lost_peer_not_a_crash() {
        let (mut a, mut b) = pair();
        assert_eq!(b.try_send(0, 0, &[b"honest"]).unwrap(), SendStatus::Sent);
        assert_eq!(b.try_send(0, 1, &[b"then lies"]).unwrap(), SendStatus::Sent);
        // The second record starts at 16 (8-byte header + "honest" padded to 8).
        let second = b.out_ring_data(0).wrapping_add(16) as *const AtomicU64;
        // SAFETY: inside b's mapping of the ring, 8-aligned.
        unsafe { (*second).store(u32::MAX as u64 | 1 << 48, Ordering::Relaxed) };
        let mut got = vec![];
        a.poll_recv(&mut |ev| {
            got.push(match ev {
                Incoming::Frame { bytes, .. } => String::from_utf8_lossy(bytes).into_owned(),
                Incoming::PeerLost { peer, reason } => format!("lost {peer}: {reason}"),
            })
        })
        .unwrap();
        assert_eq!(got.len(), 2, "{got:?}");
        assert_eq!(got[0], "honest");
        assert!(got[1].starts_with("lost 1:") && got[1].contains("corrupt"), "{got:?}");
        // Reported once; sending to it is refused with the reason.
        let mut more = 0;
        a.poll_recv(&mut |_| more += 1).unwrap();
        assert_eq!(more, 0);
        assert!(matches!(a.try_send(1, 0, &[b"x"]), Err(TransportError::PeerLost { peer: 1, .. })));
    }

    /// Both ranks left a frame for the other unread (their goodbyes) and
    /// shut down at the same time: each reads the other's ring dry, so
    /// neither waits out its deadline for the other.
    #[test]
    fn two_ranks_shutting_down_together_do_not_wait_for_each_other() {
        let (mut a, mut b) = pair();
        assert_eq!(a.try_send(1, 0, &[b"bye from 0"]).unwrap(), SendStatus::Sent);
        assert_eq!(b.try_send(0, 0, &[b"bye from 1"]).unwrap(), SendStatus::Sent);
        let start = Instant::now();
        let hb = std::thread::spawn(move || b.shutdown(Duration::from_secs(10)));
        a.shutdown(Duration::from_secs(10)).unwrap();
        hb.join().unwrap().unwrap();
        assert!(start.elapsed() < Duration::from_secs(5), "shutdown took {:?}", start.elapsed());
    }
}
