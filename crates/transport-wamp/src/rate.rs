//! How much a connection may have in flight and how fast it sends.
//!
//! - `Paper`: the WAMP paper's protocol has no congestion response at all:
//!   the window is the receiver's whole buffer (our credit), no pacing, a
//!   near-constant flow whatever the loss. Kept for the reproduction only.
//! - `Model` (default): a bottleneck-bandwidth and round-trip model in the
//!   spirit of BBR (Cardwell et al., 2016). It paces at the highest delivery
//!   rate measured over the last ten round trips and keeps about two
//!   bandwidth-delay products in flight, so an isolated random loss changes
//!   nothing. Unlike BBR v1 it does back off on loss that says the path is
//!   congested: a round trip that lost more than `HEAVY_LOSS` of its bytes
//!   (a drop-tail queue overflowing, not 1-2 % random loss) cuts the
//!   bandwidth estimate to 85 %, once per loss epoch (the losses of packets
//!   sent before a reaction do not cause another). Startup ends, as in
//!   BBRv2, when the bandwidth stops growing, when a round trip's smallest
//!   RTT says a queue is building, or when a round lost more than
//!   `STARTUP_LOSS` of its bytes; the losses of its overshoot do not cut the
//!   estimate (the delivery rate measured meanwhile is the link's).
//!   Probe-RTT is left out: min RTT is kept for the whole connection (a
//!   job's paths do not move).

use std::collections::VecDeque;
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Paper,
    Model,
}

const STARTUP_GAIN: f64 = 2.885;
/// Window in probe-bw, in bandwidth-delay products (BBR's 2, see below).
const PROBE_BW_CWND_GAIN: f64 = 2.5;
const CYCLE: [f64; 8] = [1.25, 0.75, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0];
const BW_WINDOW_ROUNDS: u64 = 10;
/// Fraction of a round's bytes lost that counts as congestion.
const HEAVY_LOSS: f64 = 0.15;
/// Fraction of a round's bytes lost that ends startup (BBRv2's 2 %), when
/// at least `STARTUP_LOSS_PACKETS` were lost in it (BBRv2's 8): a round of
/// a hundred packets on a path with 1 % random loss may lose three.
const STARTUP_LOSS: f64 = 0.02;
const STARTUP_LOSS_PACKETS: u64 = 8;
/// A probe-bw cycle whose estimate grew this much (of the 1.25x it probed
/// with) found a path far from full (startup ended early, or others left
/// it): startup again, since probing at 1.25x one round in eight climbs
/// only ~3 % per round trip.
const REGROW: f64 = 1.15;

/// How far above the path's minimum a round's smallest RTT must rise to
/// say startup filled a queue (HyStart++'s bounds: 1/8 of the minimum,
/// within 4-16 ms).
fn queue_signal(min_rtt: Duration) -> Duration {
    (min_rtt / 8).clamp(Duration::from_millis(4), Duration::from_millis(16))
}

/// What one ACK delivered, as the rate model needs it.
#[derive(Debug, Clone, Copy)]
pub struct Acked {
    /// Bytes newly acknowledged.
    pub bytes: u64,
    pub sample: Option<Sample>,
    pub min_rtt: Duration,
    /// Round trips counted so far, and whether this ACK began a new one.
    pub round: u64,
    pub new_round: bool,
    /// Bytes still in flight after it.
    pub inflight: u64,
    /// The round-trip sample this ACK gave, if any.
    pub rtt: Option<Duration>,
}

/// One delivery-rate sample, taken when a packet is acknowledged.
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    /// Bytes per second.
    pub rate: f64,
    pub app_limited: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Startup,
    Drain,
    ProbeBw { index: usize, since: Instant },
}

pub struct Rate {
    mode: Mode,
    mss: u64,
    phase: Phase,
    /// (round, highest rate seen in it), newest last.
    bw_rounds: VecDeque<(u64, f64)>,
    btl_bw: f64,
    min_rtt: Duration,
    ack_delay: Duration,
    full_bw: f64,
    full_bw_rounds: u32,
    round_lost: u64,
    round_delivered: u64,
    /// Smallest RTT sample of the current round.
    round_min_rtt: Option<Duration>,
    /// Set when the model reacted to loss or left startup; the connection
    /// then starts a new loss epoch (`take_reaction`).
    reacted: bool,
    /// The estimate when the current probe-bw cycle began.
    cycle_bw: f64,
}

impl Rate {
    /// `initial_window` bytes per `initial_rtt` is the rate before any sample.
    pub fn new(mode: Mode, mss: usize, initial_rtt: Duration, initial_window: u64, ack_delay: Duration) -> Rate {
        let rtt = initial_rtt.max(Duration::from_micros(100));
        Rate {
            mode,
            mss: mss as u64,
            phase: Phase::Startup,
            bw_rounds: VecDeque::new(),
            btl_bw: initial_window as f64 / rtt.as_secs_f64(),
            min_rtt: rtt,
            ack_delay,
            full_bw: 0.0,
            full_bw_rounds: 0,
            round_lost: 0,
            round_delivered: 0,
            round_min_rtt: None,
            reacted: false,
            cycle_bw: 0.0,
        }
    }

    /// Whether the model reacted since the last call: losses of packets
    /// sent before now are then no news.
    pub fn take_reaction(&mut self) -> bool {
        std::mem::take(&mut self.reacted)
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }

    pub fn bandwidth(&self) -> f64 {
        self.btl_bw
    }

    /// Bytes the path holds: bandwidth x (min RTT + the receiver's longest
    /// ACK hold). Without the hold a sub-millisecond path (a LAN, the
    /// emulator at 0 ms) got a window of a few packets and stalled on every
    /// delayed ACK.
    fn bdp(&self) -> f64 {
        self.btl_bw * (self.min_rtt + self.ack_delay).as_secs_f64()
    }

    fn gains(&self) -> (f64, f64) {
        match self.phase {
            Phase::Startup => (STARTUP_GAIN, STARTUP_GAIN),
            Phase::Drain => (1.0 / STARTUP_GAIN, STARTUP_GAIN),
            Phase::ProbeBw { index, .. } => (CYCLE[index], PROBE_BW_CWND_GAIN),
        }
    }

    /// Bytes that may be in flight.
    pub fn cwnd(&self) -> u64 {
        match self.mode {
            Mode::Paper => u64::MAX,
            Mode::Model => ((self.gains().1 * self.bdp()) as u64).max(4 * self.mss),
        }
    }

    /// Bytes per second to pace at; None = do not pace.
    pub fn pacing_rate(&self) -> Option<f64> {
        match self.mode {
            Mode::Paper => None,
            Mode::Model => Some(self.gains().0 * self.btl_bw),
        }
    }

    /// Packets were acknowledged.
    pub fn on_ack(&mut self, now: Instant, a: Acked) {
        if self.mode == Mode::Paper {
            return;
        }
        let Acked { bytes, sample, min_rtt, round, new_round, inflight, rtt } = a;
        self.min_rtt = min_rtt.max(Duration::from_micros(10));
        self.round_delivered += bytes;
        if let Some(r) = rtt {
            self.round_min_rtt = Some(self.round_min_rtt.map_or(r, |m| m.min(r)));
        }
        if let Some(s) = sample {
            if !s.app_limited || s.rate >= self.btl_bw {
                match self.bw_rounds.back_mut() {
                    Some((r, v)) if *r == round => *v = v.max(s.rate),
                    _ => self.bw_rounds.push_back((round, s.rate)),
                }
                while self.bw_rounds.front().is_some_and(|&(r, _)| r + BW_WINDOW_ROUNDS < round) {
                    self.bw_rounds.pop_front();
                }
                let filtered = self.bw_rounds.iter().map(|&(_, v)| v).fold(0.0, f64::max);
                // Startup never slows down (as BBR's pacing rate before the
                // pipe is full): the first samples of a fresh connection see
                // a packet or two per round trip, far below the initial rate.
                self.btl_bw = if self.phase == Phase::Startup { self.btl_bw.max(filtered) } else { filtered };
            }
            if new_round && !s.app_limited && self.phase == Phase::Startup {
                self.check_full_bw();
            }
        }
        if new_round {
            self.end_round();
        }
        self.advance_phase(now, inflight);
    }

    fn check_full_bw(&mut self) {
        if self.btl_bw >= self.full_bw * 1.25 {
            self.full_bw = self.btl_bw;
            self.full_bw_rounds = 0;
        } else {
            self.full_bw_rounds += 1;
            if self.full_bw_rounds >= 3 {
                self.leave_startup();
            }
        }
    }

    fn leave_startup(&mut self) {
        if self.phase == Phase::Startup {
            self.phase = Phase::Drain;
            self.reacted = true;
        }
    }

    fn end_round(&mut self) {
        let total = self.round_lost + self.round_delivered;
        let lost = if self.round_lost >= 3 * self.mss && total > 0 { self.round_lost as f64 / total as f64 } else { 0.0 };
        if self.phase == Phase::Startup {
            let queued = self.round_min_rtt.is_some_and(|r| r > self.min_rtt + queue_signal(self.min_rtt));
            let lossy = lost > STARTUP_LOSS && self.round_lost >= STARTUP_LOSS_PACKETS * self.mss;
            if lossy || queued {
                self.leave_startup();
            }
        } else if lost > HEAVY_LOSS {
            for (_, v) in self.bw_rounds.iter_mut() {
                *v *= 0.85;
            }
            self.btl_bw *= 0.85;
            self.reacted = true;
        }
        self.round_lost = 0;
        self.round_delivered = 0;
        self.round_min_rtt = None;
    }

    fn advance_phase(&mut self, now: Instant, inflight: u64) {
        match self.phase {
            Phase::Drain if (inflight as f64) <= self.bdp() => self.phase = Phase::ProbeBw { index: 2, since: now },
            // The 0.75 phase ends only once the queue it drains is gone.
            Phase::ProbeBw { index, since }
                if now.saturating_duration_since(since) >= self.min_rtt && (index != 1 || (inflight as f64) <= self.bdp()) =>
            {
                let next = (index + 1) % CYCLE.len();
                if next == 0 {
                    self.cycle_bw = self.btl_bw;
                }
                // The probe's samples are in once its drain phase ends.
                if next == 2 && self.cycle_bw > 0.0 && self.btl_bw >= REGROW * self.cycle_bw {
                    self.phase = Phase::Startup;
                    self.full_bw = self.btl_bw;
                    self.full_bw_rounds = 0;
                } else {
                    self.phase = Phase::ProbeBw { index: next, since: now };
                }
            }
            _ => {}
        }
    }

    pub fn on_loss(&mut self, bytes: u64) {
        self.round_lost += bytes;
    }

    /// Name of the current phase, for stats.
    pub fn phase_name(&self) -> &'static str {
        match (self.mode, self.phase) {
            (Mode::Paper, _) => "paper",
            (_, Phase::Startup) => "startup",
            (_, Phase::Drain) => "drain",
            (_, Phase::ProbeBw { .. }) => "probe_bw",
        }
    }
}

/// A token bucket at the pacing rate, allowing bursts of `quantum` bytes
/// (so a busy sender wakes once per burst, not once per packet).
pub struct Pacer {
    tokens: f64,
    last: Option<Instant>,
}

impl Default for Pacer {
    fn default() -> Self {
        Self::new()
    }
}

impl Pacer {
    pub fn new() -> Pacer {
        Pacer { tokens: 0.0, last: None }
    }

    fn quantum(rate: f64, mss: usize) -> f64 {
        (rate * 0.001).min(64.0 * 1024.0).max(2.0 * mss as f64)
    }

    fn refill(&mut self, now: Instant, rate: f64, mss: usize) {
        let q = Self::quantum(rate, mss);
        let dt = self.last.map_or(f64::MAX, |t| now.saturating_duration_since(t).as_secs_f64());
        self.tokens = (self.tokens + dt * rate).min(q);
        self.last = Some(now);
    }

    /// When a packet may go (now or later).
    pub fn next_send(&mut self, now: Instant, rate: Option<f64>, mss: usize) -> Instant {
        let Some(rate) = rate else { return now };
        self.refill(now, rate, mss);
        if self.tokens >= 0.0 {
            now
        } else {
            now + Duration::from_secs_f64(-self.tokens / rate)
        }
    }

    pub fn on_send(&mut self, bytes: usize) {
        self.tokens -= bytes as f64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS10: Duration = Duration::from_millis(10);

    /// An ACK that begins a round, with a rate sample and an RTT sample.
    fn round_ack(bytes: u64, rate: f64, app_limited: bool, round: u64, inflight: u64, rtt: Duration) -> Acked {
        Acked { bytes, sample: Some(Sample { rate, app_limited }), min_rtt: MS10, round, new_round: true, inflight, rtt: Some(rtt) }
    }

    #[test]
    fn paper_mode_has_no_window_and_no_pacing() {
        let r = Rate::new(Mode::Paper, 1400, Duration::from_millis(40), 14_000, Duration::ZERO);
        assert_eq!(r.cwnd(), u64::MAX);
        assert_eq!(r.pacing_rate(), None);
    }

    #[test]
    fn random_loss_does_not_cut_the_estimate_but_heavy_loss_does() {
        let t = Instant::now();
        let ack = |bytes, rate, round, app_limited| round_ack(bytes, rate, app_limited, round, 0, MS10);
        let mut r = Rate::new(Mode::Model, 1000, MS10, 10_000, Duration::ZERO);
        r.on_ack(t, ack(100_000, 10e6, 1, false));
        assert_eq!(r.bandwidth(), 10e6);
        // 2 % of a round lost: nothing changes, startup goes on.
        r.on_loss(2_000);
        r.on_ack(t, ack(98_000, 10e6, 2, false));
        assert_eq!((r.bandwidth(), r.phase_name()), (10e6, "startup"));
        // 30 % lost in startup: its overshoot; startup ends, the estimate stays.
        r.on_loss(30_000);
        r.on_ack(t, ack(70_000, 1.0, 3, true));
        assert_eq!(r.bandwidth(), 10e6);
        assert!(r.take_reaction(), "a new loss epoch begins");
        r.on_ack(t + MS10, ack(70_000, 10e6, 4, false));
        assert_eq!(r.phase_name(), "probe_bw");
        // 30 % lost once the pipe is full: the estimate drops.
        r.on_loss(30_000);
        r.on_ack(t + 2 * MS10, ack(70_000, 1.0, 5, true));
        assert!(r.bandwidth() < 9e6, "{}", r.bandwidth());
        assert!(r.take_reaction());
    }

    #[test]
    fn startup_ends_when_a_queue_builds() {
        let t = Instant::now();
        let mut r = Rate::new(Mode::Model, 1000, MS10, 10_000, Duration::ZERO);
        let mut round = 0;
        let mut ack = |r: &mut Rate, rtt, rate| {
            round += 1;
            r.on_ack(t, round_ack(10_000, rate, false, round, 1 << 20, rtt));
        };
        // The rate still doubles each round, but the round's smallest RTT
        // rose past 10 ms + 4 ms: a queue is building.
        ack(&mut r, MS10, 1e6);
        ack(&mut r, MS10 + Duration::from_millis(2), 2e6);
        assert_eq!(r.phase_name(), "startup");
        ack(&mut r, MS10 + Duration::from_millis(6), 4e6);
        ack(&mut r, MS10 + Duration::from_millis(6), 8e6);
        assert_eq!(r.phase_name(), "drain");
    }

    #[test]
    fn a_probe_that_finds_much_more_bandwidth_starts_up_again() {
        let mut r = Rate::new(Mode::Model, 1000, MS10, 10_000, Duration::ZERO);
        let mut round = 0;
        let mut now = Instant::now();
        // The path delivers what we pace, up to its rate.
        let mut ack = |r: &mut Rate, path: f64| {
            round += 1;
            now += MS10;
            let rate = path.min(r.pacing_rate().unwrap_or(f64::MAX));
            r.on_ack(now, round_ack(10_000, rate, false, round, 0, MS10));
        };
        for _ in 0..8 {
            ack(&mut r, 1e6);
        }
        assert_eq!(r.phase_name(), "probe_bw");
        // A path of the same rate: probing keeps the phase.
        for _ in 0..24 {
            ack(&mut r, 1e6);
            assert_eq!(r.phase_name(), "probe_bw");
        }
        // The path now has three times the rate: within two cycles, startup again.
        let mut phases = vec![];
        for _ in 0..16 {
            ack(&mut r, 3e6);
            phases.push(r.phase_name());
        }
        assert!(phases.contains(&"startup"), "{phases:?}");
    }

    #[test]
    fn startup_ends_when_bandwidth_stops_growing() {
        let t = Instant::now();
        let mut r = Rate::new(Mode::Model, 1000, Duration::from_millis(10), 10_000, Duration::ZERO);
        for round in 1..=6 {
            r.on_ack(
                t,
                Acked {
                    bytes: 1000,
                    sample: Some(Sample { rate: 5e6, app_limited: false }),
                    min_rtt: Duration::from_millis(10),
                    round,
                    new_round: true,
                    inflight: 1_000_000,
                    rtt: None,
                },
            );
        }
        assert_eq!(r.phase_name(), "drain");
        r.on_ack(t, Acked { bytes: 1000, sample: None, min_rtt: Duration::from_millis(10), round: 7, new_round: false, inflight: 0, rtt: None });
        assert_eq!(r.phase_name(), "probe_bw");
        assert!(r.cwnd() >= 2 * 50_000 - 1);
    }

    #[test]
    fn pacer_allows_a_quantum_then_spaces_packets() {
        let t = Instant::now();
        let mut p = Pacer::new();
        let rate = Some(1e6); // 1 MB/s: quantum = 2 x 1000 bytes
        assert_eq!(p.next_send(t, rate, 1000), t);
        p.on_send(1000);
        p.on_send(1000);
        p.on_send(1000);
        let next = p.next_send(t, rate, 1000);
        assert!(next > t && next <= t + Duration::from_millis(1), "{:?}", next - t);
    }
}
