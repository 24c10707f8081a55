//! The manager side: serves requests in arrival order, round-robin between
//! the requests waiting, one task per turn; keeps the tag-to-task
//! dictionary (`Book`); posts each result's receive before sending its task;
//! hands out copies in the end game; survives lost workers.
//!
//! With a writer rank (`FarmConfig::writer`) this is the scheduler: it
//! posts no result receives and runs no `process_result`; the workers'
//! answers go to the writer, which tells the scheduler of each in batches
//! ([`wire::Answer`]), and those feed the same bookkeeping.

use std::time::Instant;

use wanmpi::{ErrorClass, MpiError};

use crate::book::{Book, Demand, Pick, Reply};
use crate::config::FarmConfig;
use crate::error::{FarmError, FarmResult};
use crate::model::FarmModel;
use crate::progress::Progress;
use crate::raw::{Op, RawComm};
use crate::report::{FarmReport, WorkerRow};
use crate::tags::TagPool;
use crate::wire::{self, Answer, ResultHeader, ResultKind, TaskHeader, Verdict, WorkerStats, WriterStats};
use crate::Farm;

struct Manager<'c> {
    cfg: &'c FarmConfig,
    /// Worker index `w` is rank `ranks[w]` of the farm's communicators.
    ranks: Vec<i32>,
    writer: Option<i32>,
    /// The receive of the writer's next batch of answers.
    answer_recvs: Vec<(Op, ())>,
    data: RawComm,
    ctl: RawComm,
    book: Book,
    rows: Vec<WorkerRow>,
    req_recvs: Vec<(Op, usize)>,
    /// With a writer: the workers' closing statistics, awaited at the end.
    stats_recvs: Vec<(Op, usize)>,
    /// Workers that are finished, so that their leaving loses nothing: they
    /// sent their closing statistics (with a writer) or were told that
    /// every task has its result (without).
    finished_workers: Vec<bool>,
    result_recvs: Vec<(Op, (usize, i32))>,
    sends: Vec<(Op, usize)>,
    reissued: u64,
    requeued: u64,
}

fn is_proc_failed(e: &MpiError) -> bool {
    e.class == ErrorClass::ProcFailed
}

/// Runs rank 0: the manager, or with `cfg.writer` the scheduler. `ranks`
/// are the workers' ranks.
pub(crate) fn run_manager<F: Farm + ?Sized>(farm: &mut F, cfg: &FarmConfig, data: RawComm, ctl: RawComm, ranks: Vec<i32>) -> FarmResult<FarmReport> {
    let start = Instant::now();
    let total = farm.total_tasks();
    let nworkers = ranks.len();
    let mut m = Manager {
        cfg,
        writer: cfg.writer,
        answer_recvs: vec![],
        data,
        ctl,
        book: Book::new(total, TagPool::new(wire::FIRST_TASK_TAG, cfg.max_tags)),
        rows: ranks.iter().map(|&rank| WorkerRow { rank, lost: false, accepted: 0, duplicates: 0, taken_over: 0, stats: None }).collect(),
        ranks,
        req_recvs: vec![],
        stats_recvs: vec![],
        finished_workers: vec![false; nworkers],
        result_recvs: vec![],
        sends: vec![],
        reissued: 0,
        requeued: 0,
    };
    let now = Instant::now();
    for w in 0..nworkers {
        // Its first tasks go unasked: the worker posted their receives.
        m.book.demand.push_back(Demand { worker: w, left: cfg.first_demand(), seq: wire::UNASKED, since: now });
        m.post_request_recv(w)?;
        if m.writer.is_some() {
            let s = m.ctl.irecv(WorkerStats::LEN, m.ranks[w], wire::STATS_TAG)?;
            m.stats_recvs.push((s, w));
        }
    }
    if let Some(wr) = m.writer {
        let r = m.ctl.irecv(Answer::BATCH * Answer::LEN, wr, wire::ANSWERS_TAG)?;
        m.answer_recvs.push((r, ()));
    }
    let mut progress = Progress::new(cfg.progress, total, cfg.progress_interval);
    let mut rounds = crate::poll::Rounds::new(cfg.stall_timeout);
    loop {
        let mut events = m.poll(farm)?;
        events += m.serve(farm)?;
        progress.update(m.book.done);
        if m.finished() {
            break;
        }
        if m.rows.iter().all(|r| r.lost) {
            return Err(FarmError::AllWorkersLost { left: total - m.book.done, total });
        }
        rounds.end_round(events)?;
    }
    progress.finish();
    if m.writer.is_none() {
        m.tell_workers_done()?;
    }
    // Every copy is answered, so the writer has every result it will get.
    let writer_stats = match m.writer {
        Some(wr) => Some(m.end_writer(wr)?),
        None => None,
    };
    let elapsed_s = start.elapsed().as_secs_f64();
    // Every worker is done: nobody will send a request any more.
    for (op, _) in &m.req_recvs {
        op.cancel();
    }
    let mut rest: Vec<(Op, ())> = m.req_recvs.drain(..).map(|(o, _)| (o, ())).collect();
    rest.extend(m.sends.drain(..).map(|(o, _)| (o, ())));
    m.ctl.drain(&mut rest, std::time::Duration::from_secs(5));
    let model = m.model(total);
    let duplicates_discarded = m.rows.iter().map(|r| r.duplicates).sum();
    Ok(FarmReport {
        total_tasks: total,
        elapsed_s,
        workers: m.rows,
        reissued: m.reissued,
        duplicates_discarded,
        requeued: m.requeued,
        model,
        writer: m.writer,
        writer_stats,
    })
}

impl Manager<'_> {
    fn rank_of(&self, w: usize) -> i32 {
        self.ranks[w]
    }

    fn post_request_recv(&mut self, w: usize) -> FarmResult<()> {
        let r = self.ctl.irecv(wire::Request::LEN, self.rank_of(w), wire::REQUEST_TAG)?;
        self.req_recvs.push((r, w));
        Ok(())
    }

    /// Done when every task has its result, every copy was answered and,
    /// with a writer, every live worker has reported (so no request is still
    /// on its way). Without a writer the workers' statistics came with
    /// their answers, and requests still on their way are left unanswered:
    /// `tell_workers_done` ends every worker, which then cancels its
    /// receives.
    fn finished(&self) -> bool {
        self.book.all_done() && self.book.inflight.is_empty() && self.stats_recvs.is_empty()
    }

    fn lose(&mut self, w: usize, e: &MpiError) -> FarmResult<()> {
        if self.rows[w].lost {
            return Ok(());
        }
        if self.finished_workers[w] {
            // Its leaving loses nothing; copies it had not answered yet
            // are answered by nobody now.
            self.book.worker_lost(w);
            self.req_recvs.retain(|(_, x)| *x != w);
            self.result_recvs.retain(|(_, (x, _))| *x != w);
            self.sends.retain(|(_, x)| *x != w);
            return Ok(());
        }
        eprintln!("farm: worker rank {} lost ({e}); its tasks go to the others", self.rank_of(w));
        self.rows[w].lost = true;
        let back = self.book.worker_lost(w);
        self.rows[w].taken_over += back;
        self.requeued += back;
        // Its operations can never complete; dropping them cancels or frees them.
        self.req_recvs.retain(|(_, x)| *x != w);
        self.stats_recvs.retain(|(_, x)| *x != w);
        self.result_recvs.retain(|(_, (x, _))| *x != w);
        self.sends.retain(|(_, x)| *x != w);
        Ok(())
    }

    /// The writer failed us: with it went the results processed there.
    fn writer_error(&self, e: MpiError) -> FarmError {
        match self.writer {
            Some(rank) if is_proc_failed(&e) => FarmError::WriterLost { rank, why: e.to_string() },
            _ => e.into(),
        }
    }

    /// Tells the writer every copy is answered and takes its final counts.
    fn end_writer(&mut self, wr: i32) -> FarmResult<WriterStats> {
        for (op, ()) in &self.answer_recvs {
            op.cancel();
        }
        let mut ops: Vec<(Op, u8)> = vec![];
        ops.push((self.ctl.irecv(WriterStats::LEN, wr, wire::WRITER_DONE_TAG).map_err(|e| self.writer_error(e))?, 0));
        ops.push((self.ctl.isend(vec![0u8; 8], wr, wire::WRITER_END_TAG).map_err(|e| self.writer_error(e))?, 1));
        let mut stats = None;
        let start = Instant::now();
        let mut backoff = crate::poll::Backoff::new();
        while !ops.is_empty() || !self.answer_recvs.is_empty() {
            for (d, ()) in self.ctl.test_some(&mut self.answer_recvs)? {
                // Cancelled, or an empty batch: nothing is left to answer.
                if let Some(e) = d.error {
                    return Err(self.writer_error(e));
                }
            }
            let done = self.ctl.test_some(&mut ops)?;
            if done.is_empty() {
                if start.elapsed() > self.cfg.stall_timeout {
                    return Err(FarmError::Stalled(self.cfg.stall_timeout));
                }
                backoff.snooze();
                continue;
            }
            for (d, what) in done {
                if let Some(e) = d.error {
                    return Err(self.writer_error(e));
                }
                if what == 0 {
                    stats = Some(WriterStats::parse(&d.buf).ok_or_else(|| FarmError::Protocol { from: wr, why: "short writer statistics".into() })?);
                }
            }
        }
        stats.ok_or_else(|| FarmError::Protocol { from: wr, why: "no writer statistics".into() })
    }

    /// What the writer did with a worker's answer: statistics from its
    /// verdict (it is the one that processed or discarded the result), the
    /// copy's bookkeeping as for a result received here.
    fn on_answer(&mut self, a: Answer, now: Instant) -> FarmResult<()> {
        let from = self.writer.unwrap_or(0);
        let Some(w) = self.ranks.iter().position(|r| *r == a.rank) else {
            return Err(FarmError::Protocol { from, why: format!("answer from rank {}, which is not a worker", a.rank) });
        };
        match a.verdict {
            Verdict::First => self.rows[w].accepted += 1,
            Verdict::Duplicate => self.rows[w].duplicates += 1,
            Verdict::Dropped => {}
        }
        if self.rows[w].lost {
            // Its tasks went back to the queue when it was lost; a result
            // of it that reached the writer anyway makes the new copy's
            // result a duplicate there.
            return Ok(());
        }
        match self.book.reply(w, a.tag, a.verdict != Verdict::Dropped, now) {
            Reply::First { id, cancel } => self.cancel_copies(id, cancel),
            Reply::Duplicate { .. } | Reply::Dropped { .. } => Ok(()),
            Reply::Unknown => Err(FarmError::Protocol {
                from,
                why: format!("answer of rank {} for task {} under tag {}, which it does not hold", a.rank, a.task_id, a.tag),
            }),
        }
    }

    /// Another copy of task `id` has its result: the holders of the other
    /// copies drop theirs.
    fn cancel_copies(&mut self, id: u64, cancel: Vec<usize>) -> FarmResult<()> {
        for other in cancel {
            self.rows[other].taken_over += 1;
            match self.ctl.isend(wire::emit_cancel(id), self.rank_of(other), wire::CANCEL_TAG) {
                Ok(op) => self.sends.push((op, other)),
                Err(e) => self.on_error(other, e)?,
            }
        }
        Ok(())
    }

    /// An MPI error that names a lost worker is survived; others end the farm.
    fn on_error(&mut self, w: usize, e: MpiError) -> FarmResult<()> {
        if is_proc_failed(&e) {
            self.lose(w, &e)
        } else {
            Err(e.into())
        }
    }

    fn poll<F: Farm + ?Sized>(&mut self, farm: &mut F) -> FarmResult<usize> {
        let mut n = 0;
        let now = Instant::now();
        for (d, w) in self.ctl.test_some(&mut self.req_recvs)? {
            n += 1;
            if self.rows[w].lost {
                continue;
            }
            if let Some(e) = d.error {
                self.on_error(w, e)?;
                continue;
            }
            if d.cancelled {
                continue;
            }
            let Some(r) = wire::Request::parse(&d.buf) else {
                return Err(FarmError::Protocol { from: d.source, why: "short request".into() });
            };
            if r.count > 0 {
                self.book.demand.push_back(Demand { worker: w, left: r.count, seq: r.seq, since: now });
            }
            self.post_request_recv(w)?;
        }
        for (d, (w, tag)) in self.data.test_some(&mut self.result_recvs)? {
            n += 1;
            if self.rows[w].lost {
                // Its tasks went back to the queue when it was lost.
                continue;
            }
            if let Some(e) = d.error {
                self.on_error(w, e)?;
                continue;
            }
            let Some((h, body)) = ResultHeader::parse(&d.buf) else {
                return Err(FarmError::Protocol { from: d.source, why: format!("result of {} bytes", d.buf.len()) });
            };
            // Answers may overtake each other: keep the latest tally.
            if self.rows[w].stats.is_none_or(|s| h.stats.answers() > s.answers()) {
                self.rows[w].stats = Some(h.stats);
            }
            match self.book.reply(w, tag, h.kind == ResultKind::Done, Instant::now()) {
                Reply::First { id, cancel } => {
                    farm.process_result(id, body);
                    self.rows[w].accepted += 1;
                    self.cancel_copies(id, cancel)?;
                }
                Reply::Duplicate { .. } => self.rows[w].duplicates += 1,
                Reply::Dropped { .. } => {}
                Reply::Unknown => {
                    return Err(FarmError::Protocol {
                        from: d.source,
                        why: format!("answer for task {} under tag {tag}, which it does not hold", h.task_id),
                    })
                }
            }
        }
        // Several batches may be waiting: take them all.
        loop {
            let got = self.ctl.test_some(&mut self.answer_recvs)?;
            if got.is_empty() {
                break;
            }
            for (d, ()) in got {
                n += 1;
                if let Some(e) = d.error {
                    return Err(self.writer_error(e));
                }
                let from = d.source;
                let Some(answers) = Answer::parse_all(&d.buf) else {
                    return Err(FarmError::Protocol { from, why: format!("answers of {} bytes", d.buf.len()) });
                };
                let now = Instant::now();
                for a in answers {
                    self.on_answer(a, now)?;
                }
                if let Some(wr) = self.writer {
                    let r = self.ctl.irecv(Answer::BATCH * Answer::LEN, wr, wire::ANSWERS_TAG).map_err(|e| self.writer_error(e))?;
                    self.answer_recvs.push((r, ()));
                }
            }
        }
        for (d, w) in self.ctl.test_some(&mut self.stats_recvs)? {
            n += 1;
            match d.error {
                Some(e) => self.on_error(w, e)?,
                None => {
                    self.rows[w].stats = WorkerStats::parse(&d.buf);
                    self.finished_workers[w] = true;
                }
            }
        }
        for (d, w) in self.data.test_some(&mut self.sends)? {
            if let Some(e) = d.error {
                self.on_error(w, e)?;
            }
        }
        Ok(n)
    }

    /// Answers waiting requests, one task per request per turn.
    fn serve<F: Farm + ?Sized>(&mut self, farm: &mut F) -> FarmResult<usize> {
        let mut sent = 0;
        loop {
            let mut progressed = false;
            for _ in 0..self.book.demand.len() {
                let Some(mut d) = self.book.demand.pop_front() else { break };
                if self.rows[d.worker].lost {
                    continue;
                }
                if self.book.all_done() {
                    for _ in 0..d.left {
                        self.send_to(d.worker, wire::NO_TASK_TAG, u64::MAX, &d, &[])?;
                    }
                    if self.writer.is_none() {
                        self.finished_workers[d.worker] = true;
                    }
                    progressed = true;
                    continue;
                }
                let now = Instant::now();
                let Some(pick) = self.book.pick_for(d.worker, now, self.cfg.end_game, self.cfg.reissue_factor) else {
                    self.book.demand.push_back(d);
                    continue;
                };
                let (tag, id, body) = match pick {
                    Pick::Fresh { id, tag } => {
                        let body = farm.create_task(id);
                        if body.len() > self.cfg.max_task_bytes {
                            return Err(FarmError::TaskTooLarge { id, len: body.len(), max: self.cfg.max_task_bytes });
                        }
                        self.book.set_body(tag, &body);
                        (tag, id, body)
                    }
                    Pick::Requeued { id, tag } => (tag, id, self.book.inflight.get(&tag).map(|f| f.body.clone()).unwrap_or_default()),
                    Pick::Reissue { tag } => {
                        let Some(f) = self.book.inflight.get(&tag) else { continue };
                        self.reissued += 1;
                        (tag, f.id, f.body.clone())
                    }
                };
                // The result's receive is posted before its task leaves
                // (with a writer, the writer keeps receives posted).
                if self.writer.is_none() {
                    let recv = self.data.irecv(self.cfg.max_result_bytes + ResultHeader::LEN, self.rank_of(d.worker), tag)?;
                    self.result_recvs.push((recv, (d.worker, tag)));
                }
                self.book.issued(tag, d.worker, now);
                self.send_to(d.worker, tag, id, &d, &body)?;
                sent += 1;
                progressed = true;
                d.left -= 1;
                if d.left > 0 {
                    self.book.demand.push_back(d);
                }
            }
            if !progressed || self.book.demand.is_empty() {
                return Ok(sent);
            }
        }
    }

    /// One NO_TASK to every live worker: requests still on their way get no
    /// answer, and a worker whose requests all were is told all the same.
    fn tell_workers_done(&mut self) -> FarmResult<()> {
        for w in 0..self.rows.len() {
            if !self.rows[w].lost {
                self.finished_workers[w] = true;
                let d = Demand { worker: w, left: 1, seq: wire::UNASKED, since: Instant::now() };
                self.send_to(w, wire::NO_TASK_TAG, u64::MAX, &d, &[])?;
            }
        }
        Ok(())
    }

    fn send_to(&mut self, w: usize, tag: i32, id: u64, d: &Demand, body: &[u8]) -> FarmResult<()> {
        let alive = self.rows.iter().filter(|r| !r.lost).count() as u32;
        let h = TaskHeader {
            task_id: id,
            req_seq: d.seq,
            alive,
            remaining: self.book.remaining(),
            queued_us: d.since.elapsed().as_micros().min(u64::MAX as u128) as u64,
        };
        match self.data.isend(h.emit_with(body), self.rank_of(w), tag) {
            Ok(op) => {
                self.sends.push((op, w));
                Ok(())
            }
            Err(e) => self.on_error(w, e),
        }
    }

    /// The model with what the workers measured (means over live workers).
    fn model(&self, total: u64) -> Option<FarmModel> {
        let st: Vec<&WorkerStats> = self.rows.iter().filter_map(|r| r.stats.as_ref()).collect();
        let rtts: Vec<f64> = st.iter().filter_map(|s| s.mean_rtt()).collect();
        let tasks: Vec<f64> = st.iter().filter_map(|s| s.mean_task()).collect();
        if tasks.is_empty() {
            return None;
        }
        let mean = |v: &[f64]| if v.is_empty() { 0.0 } else { v.iter().sum::<f64>() / v.len() as f64 };
        let rtt = mean(&rtts);
        // Adaptive: the depth the workers held on average (their maximum
        // is a stall's, held only while stalls came).
        let depth = if self.cfg.adaptive {
            mean(&st.iter().filter_map(|s| s.mean_depth()).collect::<Vec<_>>()).round().max(1.0) as u32
        } else {
            self.cfg.max_depth()
        };
        // Workers may differ: the task time that gives the same total
        // throughput is W / sum(1/T_w).
        let rate: f64 = tasks.iter().filter(|t| **t > 0.0).map(|t| 1.0 / t).sum();
        let task = if rate > 0.0 { tasks.len() as f64 / rate } else { mean(&tasks) };
        let mut m = FarmModel::new(rtt, task, depth, self.rows.len() as u32, total);
        m.result_tail = rtt / 2.0;
        m.first_fill = rtt / 2.0; // the first tasks came unasked
        Some(m)
    }
}
