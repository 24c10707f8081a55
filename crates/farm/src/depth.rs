//! Adaptive request depth: how many tasks a worker keeps requested ahead.
//!
//! The paper fixed MAXREQS and left adapting it open. The rule here is the
//! buffered model's: a worker needs `b` tasks ahead with `b*T(do_task)`
//! covering the time a request takes to come back as a task, plus one for
//! the task being computed. That time is covered twice over:
//!
//! - **RTT**: a smoothed request round trip plus two deviations (as TCP's
//!   retransmission timer does). It grows at once when RTT rises and
//!   shrinks as RTT falls.
//! - **Stalls**: the 98th percentile (nearest rank) of the last 128
//!   turnarounds (request sent -> its task arrived). A lost packet holds a
//!   task back by a retransmission (one RTT for a fast retransmit, 200 ms
//!   or more for a timeout) and, on tcp, every task behind it on the
//!   connection, so a worker covering only the smoothed RTT runs dry at
//!   every stall. The smoothed RTT jumps at such a sample and forgets it
//!   within a few samples (and a stall seen only after a computation is
//!   not fed to it at all); the percentile keeps the depth up to them as long as they keep
//!   coming (3 in 128 are enough), ignores one or two outliers (a scheduling
//!   hiccup, one backed-off timeout), and falls back to the RTT rule 128
//!   samples after the stalls stop.
//!
//! depth = ceil(max(srtt + 2 rttvar, p98 of recent turnarounds) / T) + 1,
//! within `[min, max]`. Pure: callers feed samples.

use std::collections::VecDeque;

/// Exponentially weighted RTT and task-time estimates, recent turnarounds,
/// and the depth they imply.
#[derive(Debug, Clone)]
pub struct DepthController {
    srtt: Option<f64>,
    rttvar: f64,
    task: Option<f64>,
    /// The last `WINDOW` turnarounds, oldest first.
    recent: VecDeque<f64>,
    /// `PERCENTILE` of `recent` (0 while empty).
    stall_cover: f64,
    min: u32,
    max: u32,
}

/// Weight of a new sample (TCP uses 1/8 for srtt; the farm sees fewer samples).
const ALPHA: f64 = 0.25;
const BETA: f64 = 0.25;
/// Turnarounds remembered for the stall cover: about 3 s of a worker's
/// requests with 24 ms tasks.
pub const WINDOW: usize = 128;
/// The stall cover is this percentile of the window: the third-longest of
/// 128, so two outliers do not count but a loss rate that stalls a few
/// tasks in a window does.
pub const PERCENTILE: f64 = 0.98;

impl DepthController {
    pub fn new(min: u32, max: u32) -> DepthController {
        let min = min.max(1);
        DepthController { srtt: None, rttvar: 0.0, task: None, recent: VecDeque::with_capacity(WINDOW), stall_cover: 0.0, min, max: max.max(min) }
    }

    /// A measured request round trip, in seconds (smoothed: the RTT rule).
    pub fn on_rtt(&mut self, rtt: f64) {
        if !rtt.is_finite() || rtt < 0.0 {
            return;
        }
        match self.srtt {
            None => {
                self.srtt = Some(rtt);
                self.rttvar = rtt / 2.0;
            }
            Some(s) => {
                self.rttvar = (1.0 - BETA) * self.rttvar + BETA * (s - rtt).abs();
                self.srtt = Some((1.0 - ALPHA) * s + ALPHA * rtt);
            }
        }
    }

    /// A turnaround (request sent -> its task arrived), in seconds, for the
    /// stall cover. Every request's, including the long ones the RTT
    /// filter leaves out; an arrival seen late gives a lower bound.
    pub fn on_turnaround(&mut self, t: f64) {
        if !t.is_finite() || t < 0.0 {
            return;
        }
        if self.recent.len() == WINDOW {
            self.recent.pop_front();
        }
        self.recent.push_back(t);
        let mut v: Vec<f64> = self.recent.iter().copied().collect();
        v.sort_by(f64::total_cmp);
        let rank = ((PERCENTILE * v.len() as f64).ceil() as usize).clamp(1, v.len());
        self.stall_cover = v[rank - 1];
    }

    /// A measured T(do_task), in seconds.
    pub fn on_task(&mut self, t: f64) {
        if !t.is_finite() || t < 0.0 {
            return;
        }
        self.task = Some(match self.task {
            None => t,
            Some(s) => (1.0 - ALPHA) * s + ALPHA * t,
        });
    }

    pub fn srtt(&self) -> Option<f64> {
        self.srtt
    }

    /// The turnaround the stall rule covers now (0 before any sample).
    pub fn stall_cover(&self) -> f64 {
        self.stall_cover
    }

    /// Tasks to keep requested or buffered. Before any measurement: `max`,
    /// so a slow start never idles a worker on a long link.
    pub fn depth(&self) -> u32 {
        let (Some(rtt), Some(task)) = (self.srtt, self.task) else { return self.max };
        if task <= 0.0 {
            return self.max;
        }
        let cover = ((rtt + 2.0 * self.rttvar).max(self.stall_cover) / task).ceil();
        let want = if cover.is_finite() { cover.min(u32::MAX as f64 / 2.0) as u32 + 1 } else { self.max };
        want.clamp(self.min, self.max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(c: &mut DepthController, rtt: f64, task: f64, n: usize) {
        for _ in 0..n {
            c.on_rtt(rtt);
            c.on_task(task);
        }
    }

    #[test]
    fn starts_at_max_until_measured() {
        assert_eq!(DepthController::new(1, 20).depth(), 20);
    }

    #[test]
    fn short_rtt_needs_little_depth() {
        let mut c = DepthController::new(1, 50);
        feed(&mut c, 0.0005, 0.024, 40);
        assert_eq!(c.depth(), 2);
    }

    #[test]
    fn grows_with_rtt_and_shrinks_when_it_falls() {
        let mut c = DepthController::new(1, 50);
        feed(&mut c, 0.001, 0.010, 40);
        let low = c.depth();
        feed(&mut c, 0.100, 0.010, 40);
        let high = c.depth();
        // 100 ms of RTT over 10 ms tasks needs at least 10 ahead + the one running.
        assert!(high >= 11, "high {high}");
        assert!(high <= 14, "converged RTT should not keep a large margin: {high}");
        feed(&mut c, 0.001, 0.010, 60);
        let back = c.depth();
        assert!(low < high && back < high && back <= low + 1, "low {low} high {high} back {back}");
    }

    #[test]
    fn jitter_adds_margin() {
        let mut steady = DepthController::new(1, 100);
        let mut jittery = DepthController::new(1, 100);
        for i in 0..100 {
            steady.on_rtt(0.05);
            jittery.on_rtt(if i % 2 == 0 { 0.02 } else { 0.08 });
            steady.on_task(0.01);
            jittery.on_task(0.01);
        }
        assert!(jittery.depth() > steady.depth());
    }

    #[test]
    fn clamped_to_bounds_and_ignores_garbage() {
        let mut c = DepthController::new(3, 8);
        feed(&mut c, 0.0, 1.0, 5);
        assert_eq!(c.depth(), 3);
        feed(&mut c, 10.0, 0.001, 5);
        assert_eq!(c.depth(), 8);
        c.on_rtt(f64::NAN);
        c.on_task(-1.0);
        assert_eq!(c.depth(), 8);
    }
    /// Feeds one request's turnaround as the worker does when it sees
    /// arrivals at once: both to the RTT filter and to the stall window.
    fn sample(c: &mut DepthController, rtt: f64, task: f64) {
        c.on_rtt(rtt);
        c.on_turnaround(rtt);
        c.on_task(task);
    }

    /// 160 ms RTT, 24 ms tasks; every `every`-th turnaround (if any) is
    /// held up by a 250 ms retransmission timeout.
    fn lossy(c: &mut DepthController, n: usize, every: Option<usize>) {
        for i in 0..n {
            let stalled = every.is_some_and(|e| i % e == e - 1);
            sample(c, if stalled { 0.160 + 0.250 } else { 0.160 }, 0.024);
        }
    }

    #[test]
    fn without_stalls_depth_is_the_rtt_rule() {
        let mut both = DepthController::new(1, 40);
        let mut rtt_only = DepthController::new(1, 40);
        for i in 0..300 {
            // Jitter of +-10 ms, no stalls.
            let rtt = 0.160 + if i % 2 == 0 { 0.010 } else { -0.010 };
            sample(&mut both, rtt, 0.024);
            rtt_only.on_rtt(rtt);
            rtt_only.on_task(0.024);
        }
        assert_eq!(both.depth(), rtt_only.depth());
        // 160 ms over 24 ms tasks: 7 ahead + margin + the running one.
        assert!((8..=11).contains(&both.depth()), "{}", both.depth());
    }

    #[test]
    fn occasional_stalls_are_covered() {
        let mut c = DepthController::new(1, 40);
        lossy(&mut c, 390, Some(20));
        // 410 ms / 24 ms = 17.1 -> 18 ahead + the running one.
        assert_eq!(c.depth(), 19);
        let mut rtt_only = DepthController::new(1, 40);
        for i in 0..390 {
            rtt_only.on_rtt(if i % 20 == 19 { 0.410 } else { 0.160 });
            rtt_only.on_task(0.024);
        }
        assert!(rtt_only.depth() < 19, "the RTT rule alone already covered the stalls: {}", rtt_only.depth());
    }

    #[test]
    fn covered_once_stalls_recur_in_the_window() {
        let mut c = DepthController::new(1, 40);
        lossy(&mut c, 200, None);
        // Two stalls in the window are outliers ...
        lossy(&mut c, WINDOW, Some(64));
        assert!((c.stall_cover() - 0.160).abs() < 1e-9);
        // ... a third is a pattern.
        lossy(&mut c, 5, Some(5));
        assert!((c.stall_cover() - 0.410).abs() < 1e-9);
        assert_eq!(c.depth(), 19);
    }

    #[test]
    fn depth_decays_when_stalls_stop() {
        let mut c = DepthController::new(1, 40);
        lossy(&mut c, 300, Some(4));
        assert!(c.depth() >= 19, "{}", c.depth());
        let mut calm = DepthController::new(1, 40);
        lossy(&mut calm, 300, None);
        // Still covered while the stalls are in the window ...
        lossy(&mut c, WINDOW - 10, None);
        assert_eq!(c.depth(), 19);
        // ... and back to the RTT rule once they have left it.
        lossy(&mut c, 20, None);
        assert_eq!(c.depth(), calm.depth());
    }

    #[test]
    fn stall_cover_never_exceeds_the_cap() {
        let mut c = DepthController::new(1, 40);
        for _ in 0..200 {
            sample(&mut c, 2.0, 0.024);
        }
        assert_eq!(c.depth(), 40);
        let mut small = DepthController::new(1, 10);
        lossy(&mut small, 300, Some(5));
        assert_eq!(small.depth(), 10);
        small.on_turnaround(f64::INFINITY);
        small.on_turnaround(-1.0);
        assert_eq!(small.depth(), 10);
    }
}
