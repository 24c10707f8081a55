//! Summaries of a grid's rows and the Markdown tables shaped like the
//! papers': one table per message size, rows = loss rate, columns =
//! latency, one sub-column per implementation. A cell with no good run
//! says why (FAILED, TIMEOUT, skipped), never goes blank.

use crate::grid::{fmt_num, Implementation};
use crate::record::{Row, Status};
use std::fmt::Write;

/// What the repetitions of one (implementation, latency, loss, size) gave.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Summary {
    /// Median RTT over the good runs, µs.
    pub median_us: Option<f64>,
    pub ok: usize,
    pub failed: usize,
    pub timeout: usize,
    pub skipped: usize,
    /// Good runs whose program printed its result but did not exit.
    pub hung: usize,
}

impl Summary {
    pub fn total(&self) -> usize {
        self.ok + self.failed + self.timeout + self.skipped
    }

    /// The table's text: median in ms, with `(ok/total)` when some failed.
    pub fn text(&self) -> String {
        if self.total() == 0 {
            return "not run".into();
        }
        let mark = if self.hung > 0 { " †" } else { "" };
        match self.median_us {
            Some(us) if self.ok == self.total() => format!("{:.2}{mark}", us / 1000.0),
            Some(us) => format!("{:.2} ({}/{} ok){mark}", us / 1000.0, self.ok, self.total()),
            None => {
                let mut parts = Vec::new();
                for (n, what) in [(self.timeout, "TIMEOUT"), (self.failed, "FAILED"), (self.skipped, "skipped")] {
                    if n > 0 {
                        parts.push(if n == self.total() { what.to_string() } else { format!("{what} x{n}") });
                    }
                }
                parts.join(", ")
            }
        }
    }
}

pub fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    Some(if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 })
}

pub fn summarize(rows: &[Row], imp: &Implementation, delay_ms: f64, loss_pct: f64, size: u64) -> Summary {
    let mine: Vec<&Row> = rows
        .iter()
        .filter(|r| &r.cell.implementation == imp && r.cell.net.delay_ms == delay_ms && r.cell.net.loss_pct == loss_pct && r.cell.size == size)
        .collect();
    let count = |s: Status| mine.iter().filter(|r| r.status == s).count();
    Summary {
        median_us: median(mine.iter().filter(|r| r.status == Status::Ok).filter_map(|r| r.rtt_us).collect()),
        ok: count(Status::Ok),
        failed: count(Status::Failed),
        timeout: count(Status::Timeout),
        skipped: count(Status::Skipped),
        hung: mine.iter().filter(|r| r.status == Status::Ok && r.note.starts_with(crate::cell::HUNG_NOTE)).count(),
    }
}

/// The axes of a set of rows: implementations in first-seen order, the
/// numbers sorted.
#[derive(Debug, Clone, Default)]
pub struct Axes {
    pub implementations: Vec<Implementation>,
    pub delays_ms: Vec<f64>,
    pub losses_pct: Vec<f64>,
    pub sizes: Vec<u64>,
    pub congestion_controls: Vec<String>,
}

fn push_new<T: PartialEq>(v: &mut Vec<T>, x: T) {
    if !v.contains(&x) {
        v.push(x);
    }
}

pub fn axes(rows: &[Row]) -> Axes {
    let mut a = Axes::default();
    for r in rows {
        push_new(&mut a.implementations, r.cell.implementation.clone());
        push_new(&mut a.delays_ms, r.cell.net.delay_ms);
        push_new(&mut a.losses_pct, r.cell.net.loss_pct);
        push_new(&mut a.sizes, r.cell.size);
        push_new(&mut a.congestion_controls, r.cc.clone());
    }
    a.delays_ms.sort_by(|x, y| x.total_cmp(y));
    a.losses_pct.sort_by(|x, y| x.total_cmp(y));
    a.sizes.sort();
    a
}

/// A size in the papers' style: 30 KiB, 300 KiB, 7 B.
pub fn size_label(n: u64) -> String {
    if n >= 1 << 20 && n.trailing_zeros() >= 20 {
        format!("{} MiB", n >> 20)
    } else if n >= 1024 && n.trailing_zeros() >= 10 {
        format!("{} KiB", n / 1024)
    } else {
        format!("{n} B")
    }
}

/// One Markdown table per message size.
pub fn markdown(rows: &[Row]) -> String {
    let a = axes(rows);
    let mut s = String::new();
    for &size in &a.sizes {
        let _ = writeln!(s, "#### {} messages: median time (ms): round trip, or run time for a `time_us` program\n", size_label(size));
        let mut header = String::from("| loss |");
        let mut rule = String::from("|---:|");
        for d in &a.delays_ms {
            for imp in &a.implementations {
                let _ = write!(header, " {} ms: {imp} |", fmt_num(*d));
                rule.push_str("---:|");
            }
        }
        let _ = writeln!(s, "{header}\n{rule}");
        for &loss in &a.losses_pct {
            let _ = write!(s, "| {}% |", fmt_num(loss));
            for &d in &a.delays_ms {
                for imp in &a.implementations {
                    let _ = write!(s, " {} |", summarize(rows, imp, d, loss, size).text());
                }
            }
            s.push('\n');
        }
        s.push('\n');
    }
    if rows.iter().any(|r| r.note.starts_with(crate::cell::HUNG_NOTE)) {
        let _ = writeln!(s, "† some runs printed their result but did not exit; they were killed and their result kept (see the CSV's notes).\n");
    }
    let _ = writeln!(s, "TCP congestion control in the emulated hosts: {}.", a.congestion_controls.join(", "));
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grid::{Cell, Network};

    fn row(imp: Implementation, delay: f64, loss: f64, rep: u32, status: Status, rtt: Option<f64>) -> Row {
        Row {
            cell: Cell { implementation: imp, net: Network { delay_ms: delay, loss_pct: loss }, size: 30720, rep },
            status,
            rtt_us: rtt,
            mb_per_s: None,
            cc: "bbr".into(),
            seconds: 1.0,
            note: String::new(),
        }
    }

    #[test]
    fn table_marks_failures_and_partial_cells() {
        let w = Implementation::Wanmpi("tcp".into());
        let o = Implementation::OpenMpi;
        let rows = vec![
            row(w.clone(), 20.0, 0.0, 0, Status::Ok, Some(40_000.0)),
            row(w.clone(), 20.0, 0.0, 1, Status::Ok, Some(42_000.0)),
            row(w.clone(), 20.0, 0.0, 2, Status::Ok, Some(80_000.0)),
            row(o.clone(), 20.0, 0.0, 0, Status::Timeout, None),
            row(o.clone(), 20.0, 0.0, 1, Status::Ok, Some(41_000.0)),
            row(w.clone(), 0.0, 1.0, 0, Status::Failed, None),
            row(o.clone(), 0.0, 1.0, 0, Status::Skipped, None),
        ];
        let md = markdown(&rows);
        assert!(md.contains("#### 30 KiB messages"), "{md}");
        assert!(md.contains("| loss | 0 ms: wanmpi:tcp | 0 ms: openmpi | 20 ms: wanmpi:tcp | 20 ms: openmpi |"), "{md}");
        assert!(md.contains("| 0% | not run | not run | 42.00 | 41.00 (1/2 ok) |"), "{md}");
        assert!(md.contains("| 1% | FAILED | skipped | not run | not run |"), "{md}");
        assert!(md.contains("congestion control in the emulated hosts: bbr"), "{md}");
        assert_eq!(median(vec![3.0, 1.0, 2.0, 10.0]), Some(2.5));
        assert_eq!(size_label(307200), "300 KiB");
    }
}
