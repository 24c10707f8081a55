//! Bounded back-off for the farm's polling loops.
//!
//! The farm must both wait for messages and act on time (re-issue a
//! straggler's task, print progress), and MPI has no wait-with-timeout, so
//! its loops test and then back off from 20 µs up to 1 ms: quick answers
//! when busy, little CPU when idle (8 ranks share 2 cores here).

use std::time::Duration;

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
