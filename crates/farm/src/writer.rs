//! The writer rank of the split manager (mpiBLAST's structure): it keeps
//! receives posted for any worker's answer (results and "dropped" notes,
//! each under its task's tag, with the task id in its header), runs
//! `process_result` on the first result of each task and discards later
//! ones ([`Ledger`]), and tells the scheduler (rank 0) of every answer in
//! batches, so the scheduler's end game and tag reuse work as without a
//! writer. It stops when the scheduler says every copy is answered, and
//! sends back its counts.

use std::time::Instant;

use crate::config::FarmConfig;
use crate::error::{FarmError, FarmResult};
use crate::ledger::Ledger;
use crate::raw::{Op, RawComm};
use crate::wire::{self, Answer, ResultHeader, ResultKind, WriterStats};
use crate::Farm;

const SCHEDULER: i32 = 0;

/// What the writer reports about its own run.
#[derive(Debug, Clone)]
pub struct WriterReport {
    /// This process's rank (the writer).
    pub rank: i32,
    pub stats: WriterStats,
    /// From the writer's start to the scheduler's "end".
    pub elapsed_s: f64,
}

fn lost_scheduler(e: wanmpi::MpiError) -> FarmError {
    if e.class == wanmpi::ErrorClass::ProcFailed {
        FarmError::SchedulerLost(e.to_string())
    } else {
        e.into()
    }
}

/// Runs the writer; `nworkers` sizes how many receives stay posted.
pub(crate) fn run_writer<F: Farm + ?Sized>(
    farm: &mut F,
    cfg: &FarmConfig,
    rank: i32,
    data: RawComm,
    ctl: RawComm,
    nworkers: usize,
) -> FarmResult<WriterReport> {
    let start = Instant::now();
    let cap = cfg.max_result_bytes + ResultHeader::LEN;
    // Two per worker: one being received while the next waits. A result
    // that finds none waits as an unexpected message (or, if long, for its
    // clear-to-send), so this is only about speed. Untouched pages cost
    // nothing.
    let posted = (2 * nworkers).max(4);
    let mut recvs: Vec<(Op, ())> = Vec::with_capacity(posted);
    for _ in 0..posted {
        recvs.push((data.irecv(cap, wanmpi::ANY_SOURCE, wanmpi::ANY_TAG)?, ()));
    }
    let mut end: Vec<(Op, ())> = vec![(ctl.irecv(8, SCHEDULER, wire::WRITER_END_TAG).map_err(lost_scheduler)?, ())];
    let mut sends: Vec<(Op, ())> = vec![];
    let mut ledger = Ledger::new();
    let mut rounds = crate::poll::Rounds::new(cfg.stall_timeout);
    loop {
        let mut events = 0;
        for (d, ()) in data.test_some(&mut recvs)? {
            events += 1;
            if let Some(e) = d.error {
                // A wildcard receive fails only when the worker it was
                // taking a message from is lost: the scheduler hands that
                // worker's tasks out again.
                if e.class != wanmpi::ErrorClass::ProcFailed {
                    return Err(e.into());
                }
            } else if !d.cancelled {
                let Some((h, body)) = ResultHeader::parse(&d.buf) else {
                    return Err(FarmError::Protocol { from: d.source, why: format!("result of {} bytes", d.buf.len()) });
                };
                let computed = h.kind == ResultKind::Done;
                if ledger.answer(h.task_id, d.tag, d.source, computed) == wire::Verdict::First {
                    ledger.stats.bytes += body.len() as u64;
                    let t = Instant::now();
                    farm.process_result(h.task_id, body);
                    ledger.stats.process_s += t.elapsed().as_secs_f64();
                }
            }
            recvs.push((data.irecv(cap, wanmpi::ANY_SOURCE, wanmpi::ANY_TAG)?, ()));
        }
        for batch in ledger.take_batches() {
            sends.push((ctl.isend(Answer::emit_all(&batch), SCHEDULER, wire::ANSWERS_TAG).map_err(lost_scheduler)?, ()));
        }
        for (d, ()) in ctl.test_some(&mut sends)? {
            if let Some(e) = d.error {
                return Err(lost_scheduler(e));
            }
        }
        let ended = ctl.test_some(&mut end)?;
        if let Some((d, ())) = ended.into_iter().next() {
            if let Some(e) = d.error {
                return Err(lost_scheduler(e));
            }
            break;
        }
        rounds.end_round(events)?;
    }
    let elapsed_s = start.elapsed().as_secs_f64();
    // Every copy was answered: nothing more will come.
    for (op, ()) in &recvs {
        op.cancel();
    }
    data.drain(&mut recvs, std::time::Duration::from_secs(5));
    if ctl.drain(&mut sends, cfg.stall_timeout) > 0 {
        return Err(FarmError::Stalled(cfg.stall_timeout));
    }
    // Synchronous, as the workers' statistics: the scheduler has taken it
    // before this process may leave.
    let mut done = vec![(ctl.issend(ledger.stats.emit(), SCHEDULER, wire::WRITER_DONE_TAG).map_err(lost_scheduler)?, ())];
    if ctl.drain(&mut done, cfg.stall_timeout) > 0 {
        return Err(FarmError::Stalled(cfg.stall_timeout));
    }
    Ok(WriterReport { rank, stats: ledger.stats, elapsed_s })
}
