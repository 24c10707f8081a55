//! Progress while the farm runs: a bar on a terminal, plain periodic lines
//! otherwise (logs, CI, mpirun's forwarded output).

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

use crate::config::ProgressMode;

pub struct Progress {
    bar: Option<ProgressBar>,
    lines: bool,
    total: u64,
    start: Instant,
    last_line: Instant,
    interval: Duration,
}

impl Progress {
    pub fn new(mode: ProgressMode, total: u64, interval: Duration) -> Progress {
        let tty = std::io::stderr().is_terminal();
        let (bar, lines) = match mode {
            ProgressMode::Off => (false, false),
            ProgressMode::Bar => (true, false),
            ProgressMode::Lines => (false, true),
            ProgressMode::Auto => (tty, !tty),
        };
        let bar = bar.then(|| {
            let b = ProgressBar::new(total);
            if let Ok(s) = ProgressStyle::with_template("farm {bar:40} {pos}/{len} tasks  {per_sec}  ETA {eta}") {
                b.set_style(s);
            }
            b
        });
        let now = Instant::now();
        Progress { bar, lines, total, start: now, last_line: now, interval }
    }

    pub fn update(&mut self, done: u64) {
        if let Some(b) = &self.bar {
            b.set_position(done);
        }
        if self.lines && self.last_line.elapsed() >= self.interval {
            self.last_line = Instant::now();
            eprintln!("{}", line(done, self.total, self.start.elapsed()));
        }
    }

    pub fn finish(&mut self) {
        if let Some(b) = self.bar.take() {
            b.finish_and_clear();
        }
    }
}

/// "farm: 1200/5000 tasks (24.0%), 70.1 tasks/s, ETA 54 s".
pub fn line(done: u64, total: u64, elapsed: Duration) -> String {
    let secs = elapsed.as_secs_f64();
    let rate = if secs > 0.0 { done as f64 / secs } else { 0.0 };
    let pct = if total > 0 { 100.0 * done as f64 / total as f64 } else { 100.0 };
    let eta = if rate > 0.0 { format!("{:.0} s", (total - done.min(total)) as f64 / rate) } else { "unknown".into() };
    format!("farm: {done}/{total} tasks ({pct:.1}%), {rate:.1} tasks/s, ETA {eta}")
}

#[cfg(test)]
mod tests {
    #[test]
    fn line_reads_well() {
        let l = super::line(50, 200, std::time::Duration::from_secs(10));
        assert_eq!(l, "farm: 50/200 tasks (25.0%), 5.0 tasks/s, ETA 30 s");
        assert!(super::line(0, 10, std::time::Duration::ZERO).ends_with("ETA unknown"));
    }
}
