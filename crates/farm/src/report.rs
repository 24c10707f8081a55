//! What the manager reports at the end: per-worker statistics and the
//! model's prediction beside the measured time.

use std::fmt;

use crate::model::FarmModel;
use crate::wire::{WorkerStats, WriterStats};

#[derive(Debug, Clone)]
pub struct WorkerRow {
    /// Rank in the farm's communicator.
    pub rank: i32,
    pub lost: bool,
    /// Results the manager accepted from this worker (first of their task).
    pub accepted: u64,
    /// Results discarded because another copy was first.
    pub duplicates: u64,
    /// This worker's tasks handed to another worker (re-issued or, when
    /// it was lost, re-queued).
    pub taken_over: u64,
    /// What the worker measured itself (absent if it was lost).
    pub stats: Option<WorkerStats>,
}

#[derive(Debug, Clone)]
pub struct FarmReport {
    pub total_tasks: u64,
    pub elapsed_s: f64,
    pub workers: Vec<WorkerRow>,
    /// Copies handed out by the end game.
    pub reissued: u64,
    pub duplicates_discarded: u64,
    /// Tasks handed out again after their worker was lost.
    pub requeued: u64,
    /// The model with this run's measured RTT and task time.
    pub model: Option<FarmModel>,
    /// The writer rank, when the manager was split: results were processed
    /// there, not on rank 0.
    pub writer: Option<i32>,
    /// What the writer reported at the end (with a writer).
    pub writer_stats: Option<WriterStats>,
}

impl FarmReport {
    pub fn predicted_s(&self) -> Option<f64> {
        self.model.map(|m| m.predict())
    }
    pub fn compute_bound_s(&self) -> Option<f64> {
        self.model.map(|m| m.compute_bound())
    }
    pub fn lost_ranks(&self) -> Vec<i32> {
        self.workers.iter().filter(|w| w.lost).map(|w| w.rank).collect()
    }
}

fn ms(x: Option<f64>) -> String {
    x.map_or("-".into(), |v| format!("{:.2}", v * 1e3))
}

impl fmt::Display for FarmReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "farm workers:")?;
        writeln!(f, "  rank  tasks  dup  dropped  taken-over  idle-s  mean-rtt-ms  mean-task-ms  depth(mean/final/max)  state")?;
        for w in &self.workers {
            let s = w.stats.unwrap_or_default();
            let have = w.stats.is_some();
            writeln!(
                f,
                "  {:>4}  {:>5}  {:>3}  {:>7}  {:>10}  {:>6}  {:>11}  {:>12}  {:>21}  {}",
                w.rank,
                w.accepted,
                w.duplicates,
                if have { s.tasks_dropped.to_string() } else { "-".into() },
                w.taken_over,
                if have { format!("{:.2}", s.idle_s) } else { "-".into() },
                ms(s.mean_rtt()),
                ms(s.mean_task()),
                if have { format!("{:.1}/{}/{}", s.mean_depth().unwrap_or(0.0), s.final_depth, s.max_depth) } else { "-".into() },
                if w.lost { "LOST" } else { "ok" },
            )?;
        }
        writeln!(
            f,
            "farm: {} tasks, {} re-issued (end game), {} duplicate results discarded, {} re-queued from lost workers",
            self.total_tasks, self.reissued, self.duplicates_discarded, self.requeued
        )?;
        match (self.writer, self.writer_stats) {
            (Some(r), Some(s)) => writeln!(
                f,
                "farm: results processed on rank {r} (writer): {} processed, {} duplicates discarded, {} copies dropped unstarted, {:.1} MB of results, {:.3} s in process_result; rank 0 scheduled",
                s.processed,
                s.duplicates,
                s.dropped,
                s.bytes as f64 / 1e6,
                s.process_s
            )?,
            (Some(r), None) => writeln!(f, "farm: results processed on rank {r} (writer)")?,
            (None, _) => writeln!(f, "farm: results processed on rank 0 (manager)")?,
        }
        match self.model {
            Some(m) => {
                let p = m.predict();
                write!(
                    f,
                    "farm time: measured {:.3} s, predicted {:.3} s (model: RTT {:.2} ms, T(do_task) {:.2} ms, {} workers, {} ahead), compute bound {:.3} s, measured/bound {:.3}",
                    self.elapsed_s,
                    p,
                    m.rtt * 1e3,
                    m.task_time * 1e3,
                    m.workers,
                    m.buffered,
                    m.compute_bound(),
                    if m.compute_bound() > 0.0 { self.elapsed_s / m.compute_bound() } else { f64::NAN }
                )
            }
            None => write!(f, "farm time: measured {:.3} s (no model: no task was measured)", self.elapsed_s),
        }
    }
}
