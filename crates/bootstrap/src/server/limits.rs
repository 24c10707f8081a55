//! What a stranger can cost the key/value service before proving the job
//! secret: a bounded number of connections and threads, and a bounded
//! number of lines in the launcher's log.
//!
//! - At most `max_handshakes` connections are proving the secret at once.
//!   A new one past that cuts the oldest short (a rank's handshake takes one
//!   round trip, so the oldest is the likeliest stranger; a rank cut short
//!   connects again, see `Client`). A flood therefore cannot hold the door:
//!   every connection gets at least `max_handshakes` arrivals' time.
//! - Handshake threads, counting those cut short and still winding down,
//!   never exceed twice that: past it, the accept loop waits for one to end.
//! - Proven connections are not limited here: a peer holding the secret is
//!   the job (one per rank).
//! - Refusals are reported one by one up to `REPORT_EACH`, then as a count
//!   at most every `SUMMARY_EVERY`.

use super::{ServerEvent, Sink};
use crate::addr::Stream;
use std::collections::VecDeque;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Refusals reported one by one before they are only counted.
pub const REPORT_EACH: u64 = 10;
/// How often a count of unreported refusals is reported.
pub const SUMMARY_EVERY: Duration = Duration::from_secs(5);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Connections still proving the secret, oldest first, and the threads
/// serving them.
pub struct Handshakes {
    max: usize,
    inner: Mutex<Slots>,
    ended: Condvar,
}

#[derive(Default)]
struct Slots {
    next_id: u64,
    /// (id, a clone of the stream to cut it short), oldest first.
    waiting: VecDeque<(u64, Stream)>,
    /// Handshake threads alive, including those cut short.
    threads: usize,
    cut: u64,
}

/// A place for one new connection, given by [`Handshakes::admit`].
pub struct Ticket {
    pub id: u64,
}

impl Handshakes {
    pub fn new(max: usize) -> Handshakes {
        Handshakes { max: max.max(1), inner: Mutex::new(Slots::default()), ended: Condvar::new() }
    }

    /// Makes room for `s` (cutting the oldest waiting handshake if full)
    /// and counts its thread. `None` if no thread could end within `wait`:
    /// the caller drops the connection.
    pub fn admit(&self, s: &Stream, wait: Duration) -> Option<Ticket> {
        let deadline = Instant::now() + wait;
        let mut g = lock(&self.inner);
        while g.threads >= 2 * self.max {
            let now = Instant::now();
            if now >= deadline {
                return None;
            }
            g = self.ended.wait_timeout(g, deadline - now).map(|(g, _)| g).unwrap_or_else(|p| p.into_inner().0);
        }
        while g.waiting.len() >= self.max {
            if let Some((_, oldest)) = g.waiting.pop_front() {
                let _ = oldest.shutdown();
                g.cut += 1;
            }
        }
        let id = g.next_id;
        g.next_id += 1;
        if let Ok(clone) = s.try_clone() {
            g.waiting.push_back((id, clone));
        }
        g.threads += 1;
        Some(Ticket { id })
    }

    /// The handshake of `t` is over. `false` if it had been cut short.
    pub fn finished(&self, t: &Ticket) -> bool {
        let mut g = lock(&self.inner);
        match g.waiting.iter().position(|(id, _)| *id == t.id) {
            Some(i) => {
                g.waiting.remove(i);
                true
            }
            None => false,
        }
    }

    /// The thread of a ticket ended (or never started).
    pub fn thread_ended(&self) {
        let mut g = lock(&self.inner);
        g.threads = g.threads.saturating_sub(1);
        self.ended.notify_all();
    }

    /// Handshake threads alive now.
    pub fn threads(&self) -> usize {
        lock(&self.inner).threads
    }

    /// Handshakes cut short so far.
    pub fn cut(&self) -> u64 {
        lock(&self.inner).cut
    }

    /// Cuts every waiting handshake (the job is ending).
    pub fn cut_all(&self) {
        let mut g = lock(&self.inner);
        for (_, s) in g.waiting.drain(..) {
            let _ = s.shutdown();
        }
    }

    pub fn max(&self) -> usize {
        self.max
    }
}

/// Reports refusals to the launcher without letting a flood fill its log.
pub struct RefusalLog {
    inner: Mutex<LogState>,
}

struct LogState {
    reported: u64,
    unreported: u64,
    last_summary: Instant,
}

impl RefusalLog {
    pub fn new() -> RefusalLog {
        RefusalLog { inner: Mutex::new(LogState { reported: 0, unreported: 0, last_summary: Instant::now() }) }
    }

    /// Reports this refusal, or counts it (and reports the count when due).
    pub fn refused(&self, sink: &Sink, peer: String, reason: String) {
        let event = {
            let mut g = lock(&self.inner);
            if g.reported < REPORT_EACH {
                g.reported += 1;
                Some(ServerEvent::Refused { peer, reason })
            } else {
                g.unreported += 1;
                (g.last_summary.elapsed() >= SUMMARY_EVERY).then(|| summary(&mut g))
            }
        };
        if let Some(e) = event {
            sink(e);
        }
    }

    /// Reports the count not yet reported, if any (when the job ends).
    pub fn flush(&self, sink: &Sink) {
        let event = {
            let mut g = lock(&self.inner);
            (g.unreported > 0).then(|| summary(&mut g))
        };
        if let Some(e) = event {
            sink(e);
        }
    }
}

fn summary(g: &mut LogState) -> ServerEvent {
    let n = std::mem::take(&mut g.unreported);
    g.last_summary = Instant::now();
    ServerEvent::RefusedMore { count: n }
}

/// How long the accept loop sleeps after its `n`-th failure in a row:
/// 1 ms doubling to 200 ms, so a lasting error (EMFILE) costs a few wakeups
/// a second rather than a spinning core.
pub fn accept_backoff(n: u32) -> Duration {
    Duration::from_millis(1u64 << n.min(8)).min(Duration::from_millis(200))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::os::unix::net::UnixStream;
    use std::sync::Arc;

    #[test]
    fn backoff_grows_to_a_ceiling() {
        assert_eq!(accept_backoff(0), Duration::from_millis(1));
        assert_eq!(accept_backoff(3), Duration::from_millis(8));
        assert_eq!(accept_backoff(8), Duration::from_millis(200));
        assert_eq!(accept_backoff(1000), Duration::from_millis(200));
    }

    #[test]
    fn a_full_table_cuts_the_oldest_and_threads_stay_bounded() {
        let h = Handshakes::new(2);
        let pairs: Vec<(UnixStream, UnixStream)> = (0..3).map(|_| UnixStream::pair().unwrap()).collect();
        let t: Vec<Ticket> = pairs.iter().map(|(a, _)| h.admit(&Stream::Unix(a.try_clone().unwrap()), Duration::ZERO).unwrap()).collect();
        assert_eq!(h.cut(), 1);
        // The oldest was shut down: its far end reads end of file.
        let mut buf = [0u8; 1];
        assert_eq!((&pairs[0].1).read(&mut buf).unwrap(), 0);
        assert!(!h.finished(&t[0]));
        assert!(h.finished(&t[1]));
        // Three threads alive, four at most (2 x 2): one more fits, the next waits.
        assert_eq!(h.threads(), 3);
        let extra = UnixStream::pair().unwrap();
        assert!(h.admit(&Stream::Unix(extra.0.try_clone().unwrap()), Duration::ZERO).is_some());
        let started = Instant::now();
        assert!(h.admit(&Stream::Unix(extra.0.try_clone().unwrap()), Duration::from_millis(50)).is_none());
        assert!(started.elapsed() >= Duration::from_millis(50));
        h.thread_ended();
        assert!(h.admit(&Stream::Unix(extra.0), Duration::ZERO).is_some());
    }

    #[test]
    fn a_flood_of_refusals_is_reported_as_a_count() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s2 = seen.clone();
        let sink: Sink = Box::new(move |e| s2.lock().unwrap().push(e));
        let log = RefusalLog::new();
        for i in 0..1000 {
            log.refused(&sink, format!("peer{i}"), "garbage".into());
        }
        log.flush(&sink);
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len() as u64, REPORT_EACH + 1);
        assert!(matches!(&seen[REPORT_EACH as usize], ServerEvent::RefusedMore { count: 990 }), "{seen:?}");
    }
}
