//! Bounded back-off for the farm's polling loops.
//!
//! The farm must both wait for messages and act on time (re-issue a
//! straggler's task, print progress), and MPI has no wait-with-timeout, so
//! its loops test and then back off from 20 µs up to 1 ms: quick answers
//! when busy, little CPU when idle (8 ranks share 2 cores here).

use std::time::{Duration, Instant};

pub struct Backoff {
    us: u64,
}

impl Backoff {
    pub fn new() -> Backoff {
        Backoff { us: 0 }
    }
    pub fn reset(&mut self) {
        self.us = 0;
    }
    pub fn snooze(&mut self) {
        if self.us == 0 {
            self.us = 20;
            std::thread::yield_now();
            return;
        }
        std::thread::sleep(Duration::from_micros(self.us));
        self.us = (self.us * 2).min(1000);
    }
}

impl Default for Backoff {
    fn default() -> Self {
        Self::new()
    }
}

/// The end of one round of a polling loop: back off when nothing happened,
/// and fail once nothing has happened for `limit` (the farm's stall timeout).
pub struct Rounds {
    backoff: Backoff,
    last_event: Instant,
    limit: Duration,
}

impl Rounds {
    pub fn new(limit: Duration) -> Rounds {
        Rounds { backoff: Backoff::new(), last_event: Instant::now(), limit }
    }

    pub fn end_round(&mut self, events: usize) -> Result<(), crate::FarmError> {
        if events > 0 {
            self.last_event = Instant::now();
            self.backoff.reset();
        } else {
            if self.last_event.elapsed() > self.limit {
                return Err(crate::FarmError::Stalled(self.limit));
            }
            self.backoff.snooze();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_fail_only_after_a_quiet_limit() {
        let mut r = Rounds::new(Duration::from_millis(30));
        assert!(r.end_round(0).is_ok());
        std::thread::sleep(Duration::from_millis(40));
        assert!(r.end_round(1).is_ok(), "an event resets the clock");
        assert!(r.end_round(0).is_ok());
        std::thread::sleep(Duration::from_millis(40));
        assert!(matches!(r.end_round(0), Err(crate::FarmError::Stalled(_))));
    }
}
