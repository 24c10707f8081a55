//! The model of one direction of one link, as a pure state machine: it is
//! given the time and a packet length and says when the packet leaves or why
//! it is dropped. No I/O, no clock reads, so it is tested on a virtual clock.
//!
//! Order of effects for a packet offered at `now`:
//! 1. link down -> drop (`drop_down`);
//! 2. loss draw (Bernoulli, or Gilbert-Elliott when `burst` is set) -> drop (`drop_loss`);
//!    a draw is made for every offered packet of an up link, so the sequence
//!    of losses depends only on the seed and the packet count;
//! 3. bandwidth: the packet waits behind the bytes already queued and is then
//!    serialised at `rate`; if the waiting bytes plus this packet exceed the
//!    queue bound -> drop (`drop_queue`);
//! 4. propagation: `delay` plus a jitter draw in `[-jitter, +jitter]`; without
//!    `reorder` a packet never leaves before the one ahead of it.

use crate::counters::LinkCounters;
use crate::profile::{LinkProfile, QueueLimit};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Why a packet was dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DropReason {
    Down,
    Loss,
    Queue,
}

/// What happens to an offered packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Write it to the destination at this time (ns, same clock as `now`).
    Deliver {
        at: u64,
    },
    Drop(DropReason),
}

const NS_PER_S: u128 = 1_000_000_000;

/// One direction of one link.
pub struct Link {
    profile: LinkProfile,
    /// Queue bound expressed in nanoseconds of serialisation.
    queue_limit_ns: u64,
    rng: ChaCha8Rng,
    bad_state: bool,
    up: bool,
    /// When the bottleneck finishes sending the last admitted packet.
    tx_free_at: u64,
    /// Departure time of the last admitted packet (for no-reorder).
    last_release: u64,
    pub counters: LinkCounters,
}

impl Link {
    /// A link with its own random stream, derived from the emulation seed and
    /// the link's index so that links do not disturb each other's draws.
    pub fn new(profile: LinkProfile, seed: u64, index: u64) -> Self {
        let queue_limit_ns = match profile.queue {
            QueueLimit::Time { ns } => ns,
            QueueLimit::Bytes(b) if profile.rate_bps > 0 => (b as u128 * 8 * NS_PER_S / profile.rate_bps as u128).min(u64::MAX as u128) as u64,
            QueueLimit::Bytes(_) => u64::MAX,
        };
        let stream = seed ^ index.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        Link {
            profile,
            queue_limit_ns,
            rng: ChaCha8Rng::seed_from_u64(stream),
            bad_state: false,
            up: true,
            tx_free_at: 0,
            last_release: 0,
            counters: LinkCounters::default(),
        }
    }

    pub fn is_up(&self) -> bool {
        self.up
    }

    pub fn set_up(&mut self, up: bool) {
        self.up = up;
    }

    /// Serialisation time of `len` bytes at the link's rate (0 if unlimited).
    fn tx_ns(&self, len: usize) -> u64 {
        if self.profile.rate_bps == 0 {
            0
        } else {
            (len as u128 * 8 * NS_PER_S / self.profile.rate_bps as u128) as u64
        }
    }

    fn lost(&mut self) -> bool {
        match self.profile.burst {
            Some(ge) if ge.p_good_to_bad > 0.0 => {
                let flip = if self.bad_state { ge.p_bad_to_good } else { ge.p_good_to_bad };
                if self.rng.gen_bool(flip) {
                    self.bad_state = !self.bad_state;
                }
                let p = if self.bad_state { ge.bad_loss } else { self.profile.loss };
                self.rng.gen_bool(p)
            }
            _ => self.profile.loss > 0.0 && self.rng.gen_bool(self.profile.loss),
        }
    }

    /// Decide the fate of a packet of `len` bytes offered at `now`.
    pub fn offer(&mut self, now: u64, len: usize) -> Verdict {
        self.counters.offered_pkts += 1;
        self.counters.offered_bytes += len as u64;
        if !self.up {
            self.counters.drop_down += 1;
            return Verdict::Drop(DropReason::Down);
        }
        if self.lost() {
            self.counters.drop_loss += 1;
            return Verdict::Drop(DropReason::Loss);
        }
        let tx = self.tx_ns(len);
        let backlog_ns = self.tx_free_at.saturating_sub(now);
        if tx > 0 {
            if backlog_ns.saturating_add(tx) > self.queue_limit_ns {
                self.counters.drop_queue += 1;
                return Verdict::Drop(DropReason::Queue);
            }
            let waiting = (backlog_ns as u128 * self.profile.rate_bps as u128 / 8 / NS_PER_S) as u64 + len as u64;
            self.counters.queue_hw_bytes = self.counters.queue_hw_bytes.max(waiting);
        }
        let sent = now.max(self.tx_free_at) + tx;
        self.tx_free_at = sent;
        let mut at = sent + self.profile.delay_ns;
        if self.profile.jitter_ns > 0 {
            let j = self.profile.jitter_ns as i64;
            let d = self.rng.gen_range(-j..=j);
            at = if d < 0 { at.saturating_sub(d.unsigned_abs()).max(sent) } else { at + d as u64 };
        }
        if !self.profile.reorder {
            at = at.max(self.last_release);
        }
        self.last_release = self.last_release.max(at);
        Verdict::Deliver { at }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(p: &str) -> Link {
        Link::new(LinkProfile::parse(p).unwrap(), 42, 3)
    }

    #[test]
    fn fixed_delay() {
        let mut l = link("delay=20ms");
        assert_eq!(l.offer(1_000, 100), Verdict::Deliver { at: 20_001_000 });
    }

    #[test]
    fn loss_rate_is_close_and_reproducible() {
        let run = || {
            let mut l = link("loss=1%");
            (0..100_000).filter(|i| l.offer(*i, 100) == Verdict::Drop(DropReason::Loss)).count()
        };
        let lost = run();
        assert!((900..=1100).contains(&lost), "lost {lost} of 100000 at 1%");
        assert_eq!(lost, run(), "same seed, same losses");
        let mut other = Link::new(LinkProfile::parse("loss=1%").unwrap(), 43, 3);
        let lost_other = (0..100_000).filter(|i| other.offer(*i, 100) != Verdict::Deliver { at: *i }).count();
        assert_ne!(lost, lost_other, "another seed, other losses");
    }

    #[test]
    fn burst_loss_comes_in_runs() {
        // mean burst length 1 / 0.25 = 4 packets, about 1/(1+25) of the time bad
        let mut l = link("burst_p=1%,burst_r=25%");
        let lost: Vec<bool> = (0..200_000).map(|i| l.offer(i, 100) != Verdict::Deliver { at: i }).collect();
        let n = lost.iter().filter(|x| **x).count() as f64;
        let runs = lost.windows(2).filter(|w| w[1] && !w[0]).count() as f64;
        let mean_run = n / runs;
        assert!((3.0..5.0).contains(&mean_run), "mean burst {mean_run}");
        let rate = n / 200_000.0;
        assert!((0.03..0.05).contains(&rate), "loss rate {rate}");
    }

    #[test]
    fn rate_serialises_and_queue_drops() {
        // 8 Mbit/s: 1000 bytes take 1 ms; a 5 ms queue holds 5 packets.
        let mut l = link("rate=8mbit,queue=5ms");
        let verdicts: Vec<Verdict> = (0..8).map(|_| l.offer(0, 1000)).collect();
        for (i, v) in verdicts.iter().take(5).enumerate() {
            assert_eq!(*v, Verdict::Deliver { at: (i as u64 + 1) * 1_000_000 });
        }
        assert!(verdicts[5..].iter().all(|v| *v == Verdict::Drop(DropReason::Queue)));
        assert_eq!(l.counters.queue_hw_bytes, 5000);
        // after the queue drained, packets go straight through again
        assert_eq!(l.offer(10_000_000, 1000), Verdict::Deliver { at: 11_000_000 });
    }

    #[test]
    fn queue_in_bytes() {
        let mut l = link("rate=8mbit,queue=3000");
        let ok = (0..5).filter(|_| matches!(l.offer(0, 1000), Verdict::Deliver { .. })).count();
        assert_eq!(ok, 3);
    }

    #[test]
    fn jitter_stays_in_bounds_without_reordering() {
        // Packets 100 us apart: closer than the jitter range, so keeping order
        // pushes many towards the upper bound, but never past it.
        let mut l = link("delay=10ms,jitter=5ms");
        let mut last = 0;
        for i in 0..10_000u64 {
            let now = i * 100_000;
            let Verdict::Deliver { at } = l.offer(now, 100) else { panic!("dropped") };
            let d = at - now;
            assert!((5_000_000..=15_000_000).contains(&d), "delay {d}");
            assert!(at >= last, "reordered");
            last = at;
        }
        // Packets 20 ms apart: order never binds, the whole range is used.
        let mut l = link("delay=10ms,jitter=5ms");
        let mut spread = (u64::MAX, 0);
        for i in 0..2_000u64 {
            let now = i * 20_000_000;
            let Verdict::Deliver { at } = l.offer(now, 100) else { panic!("dropped") };
            let d = at - now;
            spread = (spread.0.min(d), spread.1.max(d));
        }
        assert!(spread.0 < 5_100_000 && spread.1 > 14_900_000, "jitter barely used: {spread:?}");
    }

    #[test]
    fn reorder_when_asked() {
        let mut l = link("delay=10ms,jitter=5ms,reorder=yes");
        let ats: Vec<u64> = (0..1000u64)
            .map(|i| match l.offer(i * 10_000, 100) {
                Verdict::Deliver { at } => at,
                v => panic!("{v:?}"),
            })
            .collect();
        assert!(ats.windows(2).any(|w| w[1] < w[0]));
    }

    #[test]
    fn down_link_drops() {
        let mut l = link("delay=1ms");
        l.set_up(false);
        assert_eq!(l.offer(0, 10), Verdict::Drop(DropReason::Down));
        l.set_up(true);
        assert_eq!(l.offer(0, 10), Verdict::Deliver { at: 1_000_000 });
        assert_eq!(l.counters.drop_down, 1);
        assert_eq!(l.counters.offered_pkts, 2);
    }
}
