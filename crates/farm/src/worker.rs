//! The worker side (paper 000, Figure 6, plus adaptive depth and end game).
//!
//! A worker keeps tasks requested ahead with a receive posted for each
//! (ANY_TAG from the manager: whichever task completes first is taken, so a
//! lost packet on one task does not hold up the others), asks for a new
//! request the moment its backlog falls below its depth, computes, and
//! sends each result with MPI_Isend. Every task copy it receives gets one
//! answer: its result, or "dropped" when the manager cancelled it. With a
//! writer rank the answers go there instead of to the manager (then the
//! scheduler); requests and statistics still go to rank 0. Every answer
//! carries the worker's statistics so far; without a writer that is all
//! the manager gets, so the worker's end (the first NO_TASK: every task has
//! its result) costs no further round trip.

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

use crate::config::FarmConfig;
use crate::depth::DepthController;
use crate::error::{FarmError, FarmResult};
use crate::raw::{Op, RawComm};
use crate::wire::{self, ResultHeader, ResultKind, TaskHeader, WorkerStats};
use crate::Farm;

const MANAGER: i32 = 0;

/// What a worker reports about its own run.
#[derive(Debug, Clone)]
pub struct WorkerReport {
    pub stats: WorkerStats,
}

struct Buffered {
    tag: i32,
    id: u64,
    body: Vec<u8>,
}

struct Worker<'c> {
    cfg: &'c FarmConfig,
    data: RawComm,
    ctl: RawComm,
    /// Where answers (results, "dropped") go: the writer, or the manager.
    results_to: i32,
    task_recvs: Vec<(Op, ())>,
    ctl_recv: Vec<(Op, ())>,
    /// Sends in flight, with their destination.
    sends: Vec<(Op, i32)>,
    buffered: VecDeque<Buffered>,
    /// Request seq -> when it left (removed at its first task).
    pending_reqs: HashMap<u32, Instant>,
    next_seq: u32,
    depth: DepthController,
    /// Manager's latest view: tasks not handed out, workers alive.
    remaining: u64,
    alive: u32,
    finished: bool,
    /// How long an arrival seen now may have waited unseen: 0 while
    /// waiting idle (arrivals are seen as they happen), the computation
    /// just done right after a task (its RTT sample is then an upper
    /// bound, and the sample minus this a lower bound).
    late_by: f64,
    stats: WorkerStats,
}

pub(crate) fn run_worker<F: Farm + ?Sized>(farm: &mut F, cfg: &FarmConfig, data: RawComm, ctl: RawComm) -> FarmResult<WorkerReport> {
    let mut w = Worker {
        cfg,
        data,
        ctl,
        results_to: cfg.results_rank(),
        task_recvs: vec![],
        ctl_recv: vec![],
        sends: vec![],
        buffered: VecDeque::new(),
        pending_reqs: HashMap::new(),
        next_seq: 0,
        depth: DepthController::new(1, cfg.max_depth()),
        remaining: u64::MAX,
        alive: 1,
        finished: false,
        late_by: 0.0,
        stats: WorkerStats::default(),
    };
    // The manager sends the first tasks unasked (`FarmConfig::first_demand`).
    for _ in 0..cfg.first_demand() {
        let r = w.data.irecv(cfg.max_task_bytes + TaskHeader::LEN, MANAGER, wanmpi::ANY_TAG)?;
        w.task_recvs.push((r, ()));
    }
    let cancel = w.ctl.irecv(8, MANAGER, wire::CANCEL_TAG)?;
    w.ctl_recv.push((cancel, ()));
    let mut last_event = Instant::now();
    let mut backoff = crate::poll::Backoff::new();
    let mut idle_since: Option<Instant> = None;
    loop {
        let events = w.poll()?;
        if !w.finished {
            w.maybe_request()?;
        }
        if events > 0 {
            last_event = Instant::now();
        }
        if let Some(t) = w.buffered.pop_front() {
            if let Some(s) = idle_since.take() {
                w.stats.idle_s += s.elapsed().as_secs_f64();
            }
            // The next request leaves before the computation (Figure 6).
            if !w.finished {
                w.maybe_request()?;
            }
            w.late_by = w.compute(farm, t)?;
            last_event = Instant::now();
            backoff.reset();
            continue;
        }
        if w.finished && w.task_recvs.is_empty() {
            break;
        }
        w.late_by = 0.0;
        if !w.finished && idle_since.is_none() {
            idle_since = Some(Instant::now());
        }
        if last_event.elapsed() > cfg.stall_timeout {
            return Err(FarmError::Stalled(cfg.stall_timeout));
        }
        if events > 0 {
            backoff.reset()
        } else {
            backoff.snooze()
        }
    }
    w.finish()
}

impl Worker<'_> {
    /// Tasks requested and not arrived, plus buffered and not started.
    fn outstanding(&self) -> u32 {
        (self.task_recvs.len() + self.buffered.len()) as u32
    }

    /// How many tasks to hold now: the adaptive depth (or MAXREQS*k), and
    /// in the end game no more than this worker's share of what is left,
    /// but at least one so it can take over a straggler's task.
    fn target(&self) -> u32 {
        let mut t = if self.cfg.adaptive { self.depth.depth() } else { self.cfg.max_depth() };
        if self.cfg.end_game && self.remaining != u64::MAX {
            let share = self.remaining.div_ceil(self.alive.max(1) as u64).max(1);
            t = t.min(share.min(u32::MAX as u64) as u32);
        }
        t.max(1)
    }

    fn maybe_request(&mut self) -> FarmResult<()> {
        loop {
            let target = self.target();
            let have = self.outstanding();
            if have >= target {
                return Ok(());
            }
            let deficit = target - have;
            // Ask for k at a time; ask for less only when k is more than the
            // whole target (end game) or when nothing at all is on its way.
            let k = self.cfg.fanout;
            if deficit < k.min(target) && have > 0 {
                return Ok(());
            }
            let count = deficit.min(k);
            for _ in 0..count {
                let r = self.data.irecv(self.cfg.max_task_bytes + TaskHeader::LEN, MANAGER, wanmpi::ANY_TAG)?;
                self.task_recvs.push((r, ()));
            }
            let seq = self.next_seq;
            self.next_seq = self.next_seq.wrapping_add(1);
            let req = wire::Request { count, seq };
            self.sends.push((self.ctl.isend(req.emit(), MANAGER, wire::REQUEST_TAG)?, MANAGER));
            self.pending_reqs.insert(seq, Instant::now());
            self.stats.requests += 1;
        }
    }

    /// Takes whatever has completed; returns how many things happened.
    fn poll(&mut self) -> FarmResult<usize> {
        let mut n = 0;
        let done = self.data.test_some(&mut self.task_recvs)?;
        // A manager that has every result may leave once it told us so: its
        // leaving then fails our other receives, maybe in this same batch.
        if done.iter().any(|(d, ())| d.error.is_none() && !d.cancelled && d.tag == wire::NO_TASK_TAG) {
            self.end();
        }
        for (d, ()) in done {
            n += 1;
            if let Some(e) = d.error {
                if self.finished {
                    continue;
                }
                return Err(e.into());
            }
            if d.cancelled {
                continue;
            }
            let Some((h, body)) = TaskHeader::parse(&d.buf) else {
                return Err(FarmError::Protocol { from: d.source, why: format!("task message of {} bytes", d.buf.len()) });
            };
            self.remaining = h.remaining;
            self.alive = h.alive;
            if d.tag == wire::NO_TASK_TAG {
                continue;
            }
            if let Some(sent) = self.pending_reqs.remove(&h.req_seq) {
                let rtt = (sent.elapsed().as_secs_f64() - h.queued_us as f64 * 1e-6).max(0.0);
                // The stall window takes every turnaround: a stall the
                // depth covered is seen only after a computation, and must
                // still count, or the depth would fall and the next stall
                // run the worker dry. The lower bound: no stall is made up.
                self.depth.on_turnaround((rtt - self.late_by).max(0.0));
                // For the smoothed RTT an upper bound still helps when it
                // is below the estimate; when the depth is too small the
                // worker idles and gets precise samples.
                if self.late_by == 0.0 || self.depth.srtt().is_none_or(|s| rtt < s) {
                    self.depth.on_rtt(rtt);
                    self.stats.rtt_sum_s += rtt;
                    self.stats.rtt_samples += 1;
                }
            }
            self.buffered.push_back(Buffered { tag: d.tag, id: h.task_id, body: body.to_vec() });
        }
        // Several cancels may be waiting: take them all now, not one per task.
        loop {
            let got = self.ctl.test_some(&mut self.ctl_recv)?;
            if got.is_empty() {
                break;
            }
            for (d, ()) in got {
                n += 1;
                if let Some(e) = d.error {
                    if self.finished {
                        continue; // the manager may have left
                    }
                    return Err(e.into());
                }
                if d.cancelled {
                    continue;
                }
                if let Some(id) = wire::parse_cancel(&d.buf) {
                    self.drop_buffered(|b| b.id == id)?;
                }
                let again = self.ctl.irecv(8, MANAGER, wire::CANCEL_TAG)?;
                self.ctl_recv.push((again, ()));
            }
        }
        if self.finished {
            // The manager has every result: what is still buffered is a copy.
            self.drop_buffered(|_| true)?;
        }
        for (d, dest) in self.data.test_some(&mut self.sends)? {
            if let Some(e) = d.error {
                if self.finished && dest == MANAGER {
                    continue; // it has every result, and may have left
                }
                return Err(self.lost(dest, e));
            }
        }
        Ok(n)
    }

    /// The manager has every result: nothing else will come (it answers no
    /// more requests), so the receives still posted are cancelled.
    fn end(&mut self) {
        if !self.finished {
            for (op, ()) in &self.task_recvs {
                op.cancel();
            }
        }
        self.finished = true;
    }

    /// The error for a failed operation with `peer`: a lost writer or
    /// scheduler is named as such (the farm cannot go on without either).
    fn lost(&self, peer: i32, e: wanmpi::MpiError) -> FarmError {
        if e.class != wanmpi::ErrorClass::ProcFailed {
            return e.into();
        }
        if peer == MANAGER {
            FarmError::SchedulerLost(e.to_string())
        } else if Some(peer) == self.cfg.writer {
            FarmError::WriterLost { rank: peer, why: e.to_string() }
        } else {
            e.into()
        }
    }

    /// Sends a task's answer to where results go.
    fn answer(&mut self, tag: i32, h: ResultHeader, body: &[u8]) -> FarmResult<()> {
        let op = self.data.isend(h.emit_with(body), self.results_to, tag).map_err(|e| self.lost(self.results_to, e))?;
        self.sends.push((op, self.results_to));
        Ok(())
    }

    fn drop_buffered(&mut self, which: impl Fn(&Buffered) -> bool) -> FarmResult<()> {
        let (gone, keep): (Vec<_>, Vec<_>) = self.buffered.drain(..).partition(|b| which(b));
        self.buffered = keep.into();
        for b in gone {
            self.stats.tasks_dropped += 1;
            let h = ResultHeader { task_id: b.id, kind: ResultKind::Dropped, task_ns: 0, stats: self.stats };
            self.answer(b.tag, h, &[])?;
        }
        Ok(())
    }

    /// Runs one task and sends its result; returns how long it ran, in seconds.
    fn compute<F: Farm + ?Sized>(&mut self, farm: &mut F, t: Buffered) -> FarmResult<f64> {
        let start = Instant::now();
        let result = farm.do_task(t.id, &t.body);
        let took = start.elapsed();
        if result.len() > self.cfg.max_result_bytes {
            return Err(FarmError::ResultTooLarge { id: t.id, len: result.len(), max: self.cfg.max_result_bytes });
        }
        self.depth.on_task(took.as_secs_f64());
        self.stats.busy_s += took.as_secs_f64();
        self.stats.tasks_done += 1;
        let d = self.target() as u64;
        self.stats.final_depth = d;
        if !self.cfg.adaptive || self.depth.srtt().is_some() {
            self.stats.max_depth = self.stats.max_depth.max(d);
            self.stats.depth_sum = self.stats.depth_sum.saturating_add(d);
            self.stats.depth_samples += 1;
        }
        let h = ResultHeader { task_id: t.id, kind: ResultKind::Done, task_ns: took.as_nanos().min(u64::MAX as u128) as u64, stats: self.stats };
        self.answer(t.tag, h, &result)?;
        Ok(took.as_secs_f64())
    }

    fn finish(mut self) -> FarmResult<WorkerReport> {
        let mut sends: Vec<(Op, ())> = self.sends.drain(..).map(|(o, _)| (o, ())).collect();
        let left = self.data.drain(&mut sends, self.cfg.stall_timeout);
        if left > 0 {
            return Err(FarmError::Stalled(self.cfg.stall_timeout));
        }
        for (op, ()) in &self.ctl_recv {
            op.cancel();
        }
        self.ctl.drain(&mut self.ctl_recv, Duration::from_secs(5));
        if self.cfg.writer.is_none() {
            // The manager has our statistics from our answers.
            return Ok(WorkerReport { stats: self.stats });
        }
        // Synchronous: the worker may exit right after, and its last words
        // must have been taken, not just queued.
        let mut stats_send = vec![(self.ctl.issend(self.stats.emit(), MANAGER, wire::STATS_TAG)?, ())];
        if self.ctl.drain(&mut stats_send, self.cfg.stall_timeout) > 0 {
            return Err(FarmError::Stalled(self.cfg.stall_timeout));
        }
        Ok(WorkerReport { stats: self.stats })
    }
}
