//! The synthetic farm of paper 000 §3.3 and the Bulk Processor Farm of
//! paper 001 §4.2.1: tasks of seeded bytes, a compute time per task (sleep
//! by default, busy as an option), results the manager checks.
//!
//! A result is `[task id][checksum of the task][seeded fill]`, so the
//! manager can tell that every task's result arrived exactly once and
//! belongs to that task; with a writer rank that check runs on the writer.
//! Test hooks: a slow worker, a rank that SIGKILLs itself after a number
//! of tasks (a worker computed, or the writer processed).

use std::time::{Duration, Instant};

use super::{fnv1a, splitmix};
use crate::Farm;

#[derive(Debug, Clone)]
pub struct Spec {
    pub tasks: u64,
    pub task_bytes: usize,
    pub result_bytes: usize,
    /// Sizes vary by up to this fraction either way (0 = all equal).
    pub size_jitter: f64,
    /// Compute time per task.
    pub task_time: Duration,
    /// Times vary by up to this fraction either way.
    pub time_jitter: f64,
    /// Compute by spinning instead of sleeping.
    pub busy: bool,
    pub seed: u64,
    /// This rank computes `slow_factor` times slower.
    pub slow_rank: Option<i32>,
    pub slow_factor: f64,
    /// This rank kills itself (SIGKILL) after `die_after` tasks.
    pub die_rank: Option<i32>,
    pub die_after: u64,
}

/// A value in [-1, 1) from a seed and a task id.
fn unit(seed: u64, id: u64, salt: u64) -> f64 {
    (splitmix(seed ^ splitmix(id ^ salt)) >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
}

fn fill(buf: &mut [u8], mut state: u64) {
    for chunk in buf.chunks_mut(8) {
        state = splitmix(state);
        let b = state.to_le_bytes();
        chunk.copy_from_slice(&b[..chunk.len()]);
    }
}

impl Spec {
    pub fn task_len(&self, id: u64) -> usize {
        let f = 1.0 + self.size_jitter * unit(self.seed, id, 1);
        ((self.task_bytes as f64 * f) as usize).max(8)
    }
    pub fn result_len(&self, id: u64) -> usize {
        let f = 1.0 + self.size_jitter * unit(self.seed, id, 2);
        ((self.result_bytes as f64 * f) as usize).max(16)
    }
    pub fn compute_time(&self, id: u64) -> Duration {
        self.task_time.mul_f64((1.0 + self.time_jitter * unit(self.seed, id, 3)).max(0.0))
    }
    pub fn max_task_len(&self) -> usize {
        (self.task_bytes as f64 * (1.0 + self.size_jitter.abs())) as usize + 8
    }
    pub fn max_result_len(&self) -> usize {
        (self.result_bytes as f64 * (1.0 + self.size_jitter.abs())) as usize + 16
    }

    pub fn make_task(&self, id: u64) -> Vec<u8> {
        let mut t = vec![0u8; self.task_len(id)];
        t[..8].copy_from_slice(&id.to_le_bytes());
        fill(&mut t[8..], self.seed ^ id);
        t
    }

    /// The result a correct worker returns for a task.
    pub fn make_result(&self, id: u64, task: &[u8]) -> Vec<u8> {
        let sum = fnv1a(task);
        let mut r = vec![0u8; self.result_len(id)];
        r[..8].copy_from_slice(&id.to_le_bytes());
        r[8..16].copy_from_slice(&sum.to_le_bytes());
        fill(&mut r[16..], sum);
        r
    }
}

/// The farm over a `Spec`, on one process.
pub struct Synthetic {
    pub spec: Spec,
    rank: i32,
    done_here: u64,
    /// Where results are processed (manager or writer): results seen per
    /// task, and results that did not match.
    pub seen: Vec<u32>,
    pub mismatched: u64,
}

impl Synthetic {
    /// `results_here`: this process runs `process_result` (rank 0, or the
    /// writer rank when there is one).
    pub fn new(spec: Spec, rank: i32, results_here: bool) -> Synthetic {
        let n = if results_here { spec.tasks as usize } else { 0 };
        Synthetic { spec, rank, done_here: 0, seen: vec![0; n], mismatched: 0 }
    }

    fn maybe_die(&self, what: &str) {
        if self.spec.die_rank == Some(self.rank) && self.done_here >= self.spec.die_after {
            eprintln!("farm-synthetic: rank {} kills itself after {} tasks {what} (test hook)", self.rank, self.done_here);
            // SAFETY: plain syscalls; the process ends here.
            unsafe {
                libc::kill(libc::getpid(), libc::SIGKILL);
            }
        }
    }

    /// Missing, duplicated and mismatched results (manager).
    pub fn check(&self) -> (u64, u64, u64) {
        let missing = self.seen.iter().filter(|&&c| c == 0).count() as u64;
        let dup = self.seen.iter().filter(|&&c| c > 1).count() as u64;
        (missing, dup, self.mismatched)
    }

    /// The line tests look for.
    pub fn summary(&self) -> String {
        let (missing, dup, bad) = self.check();
        let once = self.seen.iter().filter(|&&c| c == 1).count() as u64;
        let ok = once.saturating_sub(bad);
        format!("results: {ok}/{} ok, {missing} missing, {dup} duplicate, {bad} mismatched", self.spec.tasks)
    }

    fn compute(&self, id: u64, task: &[u8]) {
        let mut t = self.spec.compute_time(id);
        if self.spec.slow_rank == Some(self.rank) {
            t = t.mul_f64(self.spec.slow_factor.max(0.0));
        }
        if self.spec.busy {
            let start = Instant::now();
            let mut h = 0u64;
            while start.elapsed() < t {
                h = h.wrapping_add(fnv1a(&task[..task.len().min(4096)]));
            }
            std::hint::black_box(h);
        } else {
            std::thread::sleep(t);
        }
    }
}

impl Farm for Synthetic {
    fn total_tasks(&self) -> u64 {
        self.spec.tasks
    }
    fn create_task(&mut self, id: u64) -> Vec<u8> {
        self.spec.make_task(id)
    }
    fn do_task(&mut self, id: u64, task: &[u8]) -> Vec<u8> {
        self.maybe_die("computed");
        self.compute(id, task);
        self.done_here += 1;
        self.spec.make_result(id, task)
    }
    fn process_result(&mut self, id: u64, result: &[u8]) {
        self.maybe_die("processed");
        self.done_here += 1;
        let Some(slot) = self.seen.get_mut(id as usize) else {
            self.mismatched += 1;
            return;
        };
        *slot += 1;
        let want = self.spec.make_result(id, &self.spec.make_task(id));
        if want != result {
            self.mismatched += 1;
        }
    }
}

/// The whole program of a synthetic-farm binary on one process: runs the
/// farm on MPI_COMM_WORLD, and on the manager prints the result check.
/// Exit code 0 when every result arrived exactly once and matched.
pub fn run_program(spec: Spec, cfg: &crate::FarmConfig, label: &str) -> std::process::ExitCode {
    use std::process::ExitCode;
    let universe = match wanmpi::initialize() {
        Ok(u) => u,
        Err(e) => {
            eprintln!("{label}: MPI_Init failed: {e}");
            return ExitCode::from(2);
        }
    };
    let world = universe.world();
    let rank = world.rank();
    if rank == 0 {
        println!(
            "{label}: {} workers, {} tasks of {} B (results {} B, sizes ±{:.0}%), T(do_task) {:?} ±{:.0}% ({}), k={} MAXREQS={}{}{}{}",
            cfg.worker_ranks(world.size()).len(),
            spec.tasks,
            spec.task_bytes,
            spec.result_bytes,
            spec.size_jitter * 100.0,
            spec.task_time,
            spec.time_jitter * 100.0,
            if spec.busy { "busy" } else { "sleep" },
            cfg.fanout,
            cfg.max_requests,
            if cfg.adaptive { ", adaptive depth" } else { "" },
            if cfg.end_game { ", end game" } else { "" },
            match cfg.writer {
                Some(w) => format!(", writer rank {w}"),
                None => String::new(),
            },
        );
    }
    let mut farm = Synthetic::new(spec, rank, rank == cfg.results_rank());
    match crate::run(&world, cfg, &mut farm) {
        Ok(out) if out.has_results() => {
            let here = if rank == 0 { "manager".to_string() } else { format!("writer, rank {rank}") };
            println!("{} (checked on the {here})", farm.summary());
            let (missing, dup, bad) = farm.check();
            if missing + dup + bad == 0 {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            }
        }
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{label}: rank {rank}: farm failed: {e}");
            // The others may be waiting on this process: end the job.
            world.abort(2)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> Spec {
        Spec {
            tasks: 10,
            task_bytes: 1000,
            result_bytes: 500,
            size_jitter: 0.5,
            task_time: Duration::ZERO,
            time_jitter: 0.5,
            busy: false,
            seed: 7,
            slow_rank: None,
            slow_factor: 1.0,
            die_rank: None,
            die_after: 0,
        }
    }

    #[test]
    fn sizes_vary_within_bounds_and_results_check() {
        let s = spec();
        let lens: Vec<usize> = (0..10).map(|i| s.task_len(i)).collect();
        assert!(lens.iter().all(|&l| (500..=1500).contains(&l) && l <= s.max_task_len()));
        assert!(lens.windows(2).any(|w| w[0] != w[1]));
        let mut m = Synthetic::new(s.clone(), 0, true);
        let mut w = Synthetic::new(s.clone(), 1, false);
        for id in 0..10 {
            let t = m.create_task(id);
            let r = w.do_task(id, &t);
            m.process_result(id, &r);
        }
        assert_eq!(m.check(), (0, 0, 0));
        let mut bad = w.do_task(3, &m.create_task(3));
        bad[20] ^= 1;
        m.process_result(3, &bad);
        assert_eq!(m.check(), (0, 1, 1));
    }
}
