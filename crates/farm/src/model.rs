//! The execution-time model of the latency-tolerant farm (paper 000, §3,
//! Figure 5) and its buffered form.
//!
//! Paper form, one worker doing `n` tasks with one request outstanding:
//! `T = RTT + n*T(do_task) + max((n-1)*(RTT - T(do_task)), 0)`.
//! Each task's request leaves when the previous task starts, so the worker
//! idles `RTT - T(do_task)` per task when that is positive.
//!
//! Buffered form (ours): with `b` tasks requested ahead (MAXREQS requests of
//! k tasks each, b = MAXREQS*k), the replacement for a task started now is
//! the task started b tasks later, so the worker idles `RTT - b*T(do_task)`
//! per group of b tasks when positive:
//! `T_b = RTT + n*T(do_task) + max((ceil(n/b)-1) * (RTT - b*T(do_task)), 0)`.
//! With b = 1 this is the paper's formula. The farm takes the slowest worker,
//! plus returning and processing the last result, and cannot beat the
//! manager's link or its per-task service time. Our farm sends each
//! worker's first tasks unasked, so its first tasks arrive after a one-way
//! trip rather than the formula's first RTT (`FarmModel::first_fill`).

/// Inputs of the farm model. Times in seconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FarmModel {
    /// Round trip of a request and its task (network plus manager service).
    pub rtt: f64,
    /// Until a worker's first task arrives: `rtt` in the paper's form (it
    /// asks first), half of it when the manager sends the first tasks unasked.
    pub first_fill: f64,
    /// T(do_task).
    pub task_time: f64,
    /// Tasks requested ahead per worker (MAXREQS * k); 1 in the paper's form.
    pub buffered: u32,
    pub workers: u32,
    pub tasks: u64,
    /// C(result) + T(process_results) for the last result.
    pub result_tail: f64,
    /// Manager time per task (create + send + process); bounds throughput.
    pub manager_per_task: f64,
    /// Bytes per task on the manager's link (task + result), with its
    /// bandwidth in bytes/s (0 = unlimited).
    pub bytes_per_task: f64,
    pub bandwidth: f64,
}

/// The paper's formula (Figure 5): one worker, `n` tasks, one request at a time.
pub fn worker_time(rtt: f64, task_time: f64, n: u64) -> f64 {
    let n = n as f64;
    rtt + n * task_time + ((n - 1.0) * (rtt - task_time)).max(0.0)
}

/// The buffered form: `b` tasks requested ahead.
pub fn worker_time_buffered(rtt: f64, task_time: f64, n: u64, b: u32) -> f64 {
    if n == 0 {
        return 0.0;
    }
    let b = b.max(1) as u64;
    let groups = n.div_ceil(b) as f64;
    rtt + n as f64 * task_time + ((groups - 1.0) * (rtt - b as f64 * task_time)).max(0.0)
}

/// Tasks a worker must request ahead so that its requests cover the RTT:
/// the smallest b with `b*T(do_task) >= RTT`, at least 1.
pub fn depth_to_cover(rtt: f64, task_time: f64) -> u32 {
    if task_time <= 0.0 {
        return u32::MAX;
    }
    ((rtt / task_time).ceil() as u32).max(1)
}

impl FarmModel {
    /// A model with no manager or link limit and no result tail.
    pub fn new(rtt: f64, task_time: f64, buffered: u32, workers: u32, tasks: u64) -> FarmModel {
        FarmModel {
            rtt,
            first_fill: rtt,
            task_time,
            buffered,
            workers,
            tasks,
            result_tail: 0.0,
            manager_per_task: 0.0,
            bytes_per_task: 0.0,
            bandwidth: 0.0,
        }
    }

    /// Tasks of the busiest worker under an even split.
    pub fn tasks_per_worker(&self) -> u64 {
        self.tasks.div_ceil(self.workers.max(1) as u64)
    }

    /// The time with no latency at all: the compute bound.
    pub fn compute_bound(&self) -> f64 {
        self.tasks_per_worker() as f64 * self.task_time
    }

    /// Predicted run time of the farm.
    pub fn predict(&self) -> f64 {
        let worker =
            worker_time_buffered(self.rtt, self.task_time, self.tasks_per_worker(), self.buffered) - self.rtt + self.first_fill + self.result_tail;
        let manager = self.tasks as f64 * self.manager_per_task;
        let link = if self.bandwidth > 0.0 { self.tasks as f64 * self.bytes_per_task / self.bandwidth } else { 0.0 };
        worker.max(manager).max(link)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn paper_formula_hides_rtt_below_task_time() {
        // RTT 10 ms < task 24 ms: only the first RTT shows.
        assert!(close(worker_time(0.010, 0.024, 100), 0.010 + 2.4));
    }

    #[test]
    fn paper_formula_idles_when_rtt_exceeds_task_time() {
        // RTT 80 ms, task 24 ms, 10 tasks: 0.08 + 0.24 + 9*0.056.
        assert!(close(worker_time(0.080, 0.024, 10), 0.08 + 0.24 + 9.0 * 0.056));
    }

    #[test]
    fn buffered_form_with_one_buffer_is_the_paper_formula() {
        for &(rtt, t, n) in &[(0.08, 0.024, 10u64), (0.001, 0.024, 714), (0.2, 0.001, 5000)] {
            assert!(close(worker_time_buffered(rtt, t, n, 1), worker_time(rtt, t, n)));
        }
    }

    #[test]
    fn buffering_enough_hides_the_rtt() {
        let b = depth_to_cover(0.080, 0.024);
        assert_eq!(b, 4);
        assert!(close(worker_time_buffered(0.080, 0.024, 714, b), 0.080 + 714.0 * 0.024));
        // One fewer buffer leaves idle time.
        assert!(worker_time_buffered(0.080, 0.024, 714, b - 1) > 0.080 + 714.0 * 0.024 + 1.0);
    }

    #[test]
    fn farm_prediction_takes_the_tightest_bound() {
        let mut m = FarmModel::new(0.0, 0.024, 10, 7, 5000);
        assert_eq!(m.tasks_per_worker(), 715);
        assert!(close(m.predict(), 715.0 * 0.024));
        m.bandwidth = 1e6;
        m.bytes_per_task = 2.0 * 131072.0;
        assert!(close(m.predict(), 5000.0 * 262144.0 / 1e6));
        m.bandwidth = 0.0;
        m.manager_per_task = 0.01;
        assert!(close(m.predict(), 50.0));
    }

    #[test]
    fn zero_tasks_take_no_time() {
        assert_eq!(worker_time_buffered(0.1, 0.1, 0, 3), 0.0);
    }
}
