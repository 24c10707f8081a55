//! Adaptive request depth: how many tasks a worker keeps requested ahead.
//!
//! The paper fixed MAXREQS and left adapting it open. The rule here is the
//! buffered model's: a worker needs `b` tasks ahead with `b*T(do_task)`
//! covering the request round trip, plus one for the task being computed.
//! Round trips vary, so it covers a smoothed RTT plus two deviations (as
//! TCP's retransmission timer does). It grows at once when RTT rises and
//! shrinks as RTT falls, within `[min, max]`. Pure: callers feed samples.

/// Exponentially weighted RTT and task-time estimates and the depth they imply.
#[derive(Debug, Clone)]
pub struct DepthController {
    srtt: Option<f64>,
    rttvar: f64,
    task: Option<f64>,
    min: u32,
    max: u32,
}

/// Weight of a new sample (TCP uses 1/8 for srtt; the farm sees fewer samples).
const ALPHA: f64 = 0.25;
const BETA: f64 = 0.25;

impl DepthController {
    pub fn new(min: u32, max: u32) -> DepthController {
        let min = min.max(1);
        DepthController { srtt: None, rttvar: 0.0, task: None, min, max: max.max(min) }
    }

    /// A measured request round trip, in seconds.
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

    /// Tasks to keep requested or buffered. Before any measurement: `max`,
    /// so a slow start never idles a worker on a long link.
    pub fn depth(&self) -> u32 {
        let (Some(rtt), Some(task)) = (self.srtt, self.task) else { return self.max };
        if task <= 0.0 {
            return self.max;
        }
        let cover = ((rtt + 2.0 * self.rttvar) / task).ceil();
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
}
