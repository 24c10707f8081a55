//! What setup says about connections it retries: at most one line per
//! peer every `EVERY` (a peer that is not there yet is retried every 50 ms
//! to 2 s, and 6 ranks that each could not reach 127.0.0.1 printed 420
//! lines in a minute), the later lines counting what was held back, and
//! one summary when setup ends. Time comes in as an argument.

use std::collections::HashMap;
use std::time::{Duration, Instant};

/// At most one retry line per peer this often.
pub(crate) const EVERY: Duration = Duration::from_secs(5);

#[derive(Debug, Default)]
pub(crate) struct RetryLog {
    /// Per peer: when its last line was printed, and lines held since.
    last: HashMap<u32, (Instant, u64)>,
    retries: u64,
    held: u64,
}

impl RetryLog {
    /// A retry toward `peer`: the line to print (from `text`), or `None`
    /// when one was printed for it less than `EVERY` ago.
    pub(crate) fn retry(&mut self, peer: u32, now: Instant, text: impl FnOnce() -> String) -> Option<String> {
        self.retries += 1;
        match self.last.get_mut(&peer) {
            Some((at, held)) if now.duration_since(*at) < EVERY => {
                *held += 1;
                self.held += 1;
                None
            }
            Some((at, held)) => {
                let n = std::mem::take(held);
                *at = now;
                Some(if n > 0 { format!("{} ({n} more like it not shown)", text()) } else { text() })
            }
            None => {
                self.last.insert(peer, (now, 0));
                Some(text())
            }
        }
    }

    /// One line for the end of setup when lines were held back.
    pub(crate) fn summary(&self, me: u32) -> Option<String> {
        (self.held > 0).then(|| {
            format!(
                "wanmpi tcp: rank {me}: {} connection attempts to {} ranks were retried during setup ({} lines not shown)",
                self.retries,
                self.last.len(),
                self.held
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_per_peer_every_few_seconds_and_a_summary() {
        let t0 = Instant::now();
        let mut log = RetryLog::default();
        let mut printed = Vec::new();
        // 60 s of retries every 100 ms toward two peers.
        for i in 0..600u64 {
            let now = t0 + Duration::from_millis(100 * i);
            for peer in [1, 2] {
                if let Some(l) = log.retry(peer, now, || format!("to rank {peer}: refused")) {
                    printed.push(l);
                }
            }
        }
        assert_eq!(printed.len(), 2 * 12, "{printed:?}");
        assert_eq!(printed[0], "to rank 1: refused");
        assert!(printed[2].ends_with("(49 more like it not shown)"), "{}", printed[2]);
        let s = log.summary(0).unwrap();
        assert!(s.contains("1200 connection attempts to 2 ranks") && s.contains("1176 lines not shown"), "{s}");
        assert_eq!(RetryLog::default().summary(0), None);
    }
}
