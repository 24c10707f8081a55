//! Two `Conn`s on a virtual clock joined by a simulated link (one-way delay,
//! seeded random loss, optional bottleneck rate with a drop-tail queue):
//! quinn's "pair" idea. No sockets, no sleeping, deterministic.
#![allow(dead_code)]

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::BinaryHeap;
use std::time::{Duration, Instant};
use wanmpi_transport_wamp::conn::{Conn, ConnConfig};
use wanmpi_transport_wamp::rate::Mode;
use wanmpi_transport_wamp::Fec;

pub fn config(mode: Mode, fec: Fec, rtt: Duration) -> ConnConfig {
    ConnConfig {
        mode,
        channels: 8,
        max_payload: 1472 - 20 - 16,
        max_frame: 1 << 20,
        window: 16 << 20,
        send_queue: 8 << 20,
        ack_every: 2,
        ack_delay: Duration::from_millis(1),
        ack_freq: 0.1,
        xmt_timeout: Duration::from_millis(50),
        initial_rtt: rtt,
        initial_window: 32,
        keepalive: Duration::from_secs(5),
        peer_timeout: Duration::from_secs(60),
        fec,
    }
}

#[derive(PartialEq, Eq)]
struct InFlight {
    at: Instant,
    seq: u64,
    to: usize,
    pn: u64,
    payload: Vec<u8>,
}

impl Ord for InFlight {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (o.at, o.seq).cmp(&(self.at, self.seq))
    }
}
impl PartialOrd for InFlight {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}

pub struct Pair {
    pub conns: [Conn; 2],
    pub now: Instant,
    pub delay: Duration,
    /// Extra random delay per datagram, up to this: reorders them.
    pub jitter: Duration,
    /// Fraction of datagrams delivered twice.
    pub duplicate: f64,
    pub loss: f64,
    /// Bytes per second of the bottleneck, each direction (None = unlimited).
    pub rate: Option<f64>,
    pub queue_limit: usize,
    link_free: [Instant; 2],
    rng: ChaCha8Rng,
    wire: BinaryHeap<InFlight>,
    seq: u64,
    /// Drop exactly these (direction, nth datagram) once.
    pub drop_nth: Vec<(usize, u64)>,
    sent_count: [u64; 2],
    pub dropped: u64,
    pub received: [Vec<(u16, Vec<u8>)>; 2],
}

impl Pair {
    pub fn new(cfg: ConnConfig, delay: Duration, loss: f64, seed: u64) -> Pair {
        let now = Instant::now();
        Pair {
            conns: [Conn::new(cfg.clone(), now), Conn::new(cfg, now)],
            now,
            delay,
            jitter: Duration::ZERO,
            duplicate: 0.0,
            loss,
            rate: None,
            queue_limit: usize::MAX,
            link_free: [now, now],
            rng: ChaCha8Rng::seed_from_u64(seed),
            wire: BinaryHeap::new(),
            seq: 0,
            drop_nth: vec![],
            sent_count: [0, 0],
            dropped: 0,
            received: [vec![], vec![]],
        }
    }

    /// Datagrams sent so far from side `from`.
    pub fn sent(&self, from: usize) -> u64 {
        self.sent_count[from]
    }

    fn transmit(&mut self) {
        for from in 0..2 {
            loop {
                let pn = self.conns[from].next_pn();
                let mut out = vec![];
                if !self.conns[from].poll_transmit(self.now, &mut out) {
                    break;
                }
                let n = self.sent_count[from];
                self.sent_count[from] += 1;
                if let Some(i) = self.drop_nth.iter().position(|&d| d == (from, n)) {
                    self.drop_nth.remove(i);
                    self.dropped += 1;
                    continue;
                }
                if self.loss > 0.0 && self.rng.gen::<f64>() < self.loss {
                    self.dropped += 1;
                    continue;
                }
                let mut at = self.now + self.delay + self.jitter.mul_f64(self.rng.gen::<f64>());
                if let Some(rate) = self.rate {
                    let start = self.link_free[from].max(self.now);
                    let backlog = start.saturating_duration_since(self.now).as_secs_f64() * rate;
                    if backlog as usize > self.queue_limit {
                        self.dropped += 1;
                        continue;
                    }
                    let done = start + Duration::from_secs_f64((out.len() + 48) as f64 / rate);
                    self.link_free[from] = done;
                    at = done + self.delay;
                }
                if self.duplicate > 0.0 && self.rng.gen::<f64>() < self.duplicate {
                    self.seq += 1;
                    let later = at + self.jitter.mul_f64(self.rng.gen::<f64>());
                    self.wire.push(InFlight { at: later, seq: self.seq, to: 1 - from, pn, payload: out.clone() });
                }
                self.seq += 1;
                self.wire.push(InFlight { at, seq: self.seq, to: 1 - from, pn, payload: out });
            }
            while let Some(f) = self.conns[1 - from].pop_frame() {
                self.received[1 - from].push(f);
            }
        }
    }

    /// Runs until `done(self)` or the virtual `limit` passes; returns
    /// whether `done` became true.
    pub fn run_until(&mut self, limit: Duration, mut done: impl FnMut(&mut Pair) -> bool) -> bool {
        let end = self.now + limit;
        loop {
            self.transmit();
            for i in 0..2 {
                while let Some(f) = self.conns[i].pop_frame() {
                    self.received[i].push(f);
                }
            }
            if done(self) {
                return true;
            }
            // What `done` may have offered goes out now.
            self.transmit();
            let mut next = self.wire.peek().map(|f| f.at);
            for i in 0..2 {
                if let Some(t) = self.conns[i].deadline(self.now) {
                    next = Some(next.map_or(t, |n| n.min(t)));
                }
            }
            let Some(next) = next else { return false };
            if next > end {
                return false;
            }
            self.now = self.now.max(next);
            while self.wire.peek().is_some_and(|f| f.at <= self.now) {
                let f = self.wire.pop().expect("peeked");
                let _ = self.conns[f.to].on_datagram(self.now, f.pn, &f.payload);
            }
            for c in &mut self.conns {
                c.on_timeout(self.now);
            }
        }
    }

    /// Sends `msg` from `from` and runs until the other side has it; the
    /// virtual time it took.
    pub fn one_way(&mut self, from: usize, channel: u16, msg: &[u8], limit: Duration) -> Option<Duration> {
        let t0 = self.now;
        let chunks: Vec<&[u8]> = msg.chunks(1 << 20).collect();
        let want = self.received[1 - from].len() + chunks.len();
        // Frames are offered as the send queue takes them, as the engine does.
        let mut next = 0;
        self.run_until(limit, |p| {
            while next < chunks.len() && p.conns[from].offer(channel, &[chunks[next]]) {
                next += 1;
            }
            p.received[1 - from].len() >= want
        })
        .then(|| self.now - t0)
    }
}
