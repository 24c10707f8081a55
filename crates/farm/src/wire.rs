//! The farm's messages: fixed little-endian headers in front of user bytes.
//!
//! Communicator `data` (allow overtaking) carries tasks and results, each
//! under its task's tag, and NO_TASK answers. Every result carries its
//! worker's statistics so far, so the manager has them when the last result
//! is in and need not wait a round trip for a closing report. Communicator
//! `ctl` carries requests and cancels; with a writer rank
//! (`FarmConfig::writer`) also the workers' final statistics (their results
//! go to the writer), the writer's batches of answers to the scheduler, the
//! scheduler's "end" and the writer's final counts.

/// Tags on `data` at or above this name tasks; below are the farm's own.
pub const NO_TASK_TAG: i32 = 0;
pub const FIRST_TASK_TAG: i32 = 1;

/// Tags on `ctl`.
pub const REQUEST_TAG: i32 = 1;
pub const CANCEL_TAG: i32 = 2;
pub const STATS_TAG: i32 = 3;
/// Writer -> scheduler: a batch of [`Answer`]s.
pub const ANSWERS_TAG: i32 = 4;
/// Scheduler -> writer: every copy is answered, stop (8 bytes, unused).
pub const WRITER_END_TAG: i32 = 5;
/// Writer -> scheduler, after the end: [`WriterStats`].
pub const WRITER_DONE_TAG: i32 = 6;

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    b.get(at..at + 8).map(|s| u64::from_le_bytes(s.try_into().unwrap_or([0; 8])))
}
fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    b.get(at..at + 4).map(|s| u32::from_le_bytes(s.try_into().unwrap_or([0; 4])))
}

/// Worker -> manager: "send me `count` more tasks".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    pub count: u32,
    pub seq: u32,
}

impl Request {
    pub const LEN: usize = 8;
    pub fn emit(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(Self::LEN);
        v.extend_from_slice(&self.count.to_le_bytes());
        v.extend_from_slice(&self.seq.to_le_bytes());
        v
    }
    pub fn parse(b: &[u8]) -> Option<Request> {
        Some(Request { count: u32_at(b, 0)?, seq: u32_at(b, 4)? })
    }
}

/// `TaskHeader::req_seq` of tasks that answer no request: the first tasks,
/// which the manager sends every worker unasked (as many as the worker
/// would ask for at once, `FarmConfig::first_demand`), and the final NO_TASK.
pub const UNASKED: u32 = u32::MAX;

/// Manager -> worker, in front of a task's bytes (and alone in NO_TASK).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskHeader {
    pub task_id: u64,
    /// The request this task answers (for the worker's RTT sample).
    pub req_seq: u32,
    /// Workers still alive (for the end game).
    pub alive: u32,
    /// Tasks not yet handed out (for the end game).
    pub remaining: u64,
    /// Time the request waited at the manager for a task, in microseconds:
    /// the worker subtracts it so its RTT sample is the round trip.
    pub queued_us: u64,
}

impl TaskHeader {
    pub const LEN: usize = 32;
    pub fn emit_with(&self, body: &[u8]) -> Vec<u8> {
        let mut v = Vec::with_capacity(Self::LEN + body.len());
        v.extend_from_slice(&self.task_id.to_le_bytes());
        v.extend_from_slice(&self.req_seq.to_le_bytes());
        v.extend_from_slice(&self.alive.to_le_bytes());
        v.extend_from_slice(&self.remaining.to_le_bytes());
        v.extend_from_slice(&self.queued_us.to_le_bytes());
        v.extend_from_slice(body);
        v
    }
    pub fn parse(b: &[u8]) -> Option<(TaskHeader, &[u8])> {
        let h = TaskHeader {
            task_id: u64_at(b, 0)?,
            req_seq: u32_at(b, 8)?,
            alive: u32_at(b, 12)?,
            remaining: u64_at(b, 16)?,
            queued_us: u64_at(b, 24)?,
        };
        Some((h, &b[Self::LEN..]))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResultKind {
    /// The task was computed; the bytes are its result.
    Done = 0,
    /// The worker dropped the task unstarted (cancelled, or the farm ended).
    Dropped = 1,
}

/// Worker -> manager (or writer), in front of a result's bytes. Every task
/// copy a worker receives gets exactly one of these back, so the manager
/// knows when a tag is free again. `stats` is the worker's tally as of this
/// answer (its tasks done plus dropped grow by one with every answer, which
/// orders answers that overtook each other).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ResultHeader {
    pub task_id: u64,
    pub kind: ResultKind,
    pub task_ns: u64,
    pub stats: WorkerStats,
}

impl ResultHeader {
    const FIXED: usize = 24;
    pub const LEN: usize = Self::FIXED + WorkerStats::LEN;
    pub fn emit_with(&self, body: &[u8]) -> Vec<u8> {
        let mut v = Vec::with_capacity(Self::LEN + body.len());
        v.extend_from_slice(&self.task_id.to_le_bytes());
        v.extend_from_slice(&(self.kind as u32).to_le_bytes());
        v.extend_from_slice(&0u32.to_le_bytes());
        v.extend_from_slice(&self.task_ns.to_le_bytes());
        v.extend_from_slice(&self.stats.emit());
        v.extend_from_slice(body);
        v
    }
    pub fn parse(b: &[u8]) -> Option<(ResultHeader, &[u8])> {
        let kind = match u32_at(b, 8)? {
            0 => ResultKind::Done,
            1 => ResultKind::Dropped,
            _ => return None,
        };
        let stats = WorkerStats::parse(b.get(Self::FIXED..Self::LEN)?)?;
        let h = ResultHeader { task_id: u64_at(b, 0)?, kind, task_ns: u64_at(b, 16)?, stats };
        Some((h, &b[Self::LEN..]))
    }
}

/// Manager -> worker on `ctl`: another copy of this task has its result.
pub fn emit_cancel(task_id: u64) -> Vec<u8> {
    task_id.to_le_bytes().to_vec()
}
pub fn parse_cancel(b: &[u8]) -> Option<u64> {
    u64_at(b, 0)
}

/// What the writer made of a worker's answer for a task copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The task's first result: processed.
    First = 0,
    /// A result of a task processed before: discarded.
    Duplicate = 1,
    /// The copy was dropped unstarted.
    Dropped = 2,
}

/// Writer -> scheduler (in batches on `ctl`, ANSWERS_TAG): worker `rank`
/// answered for its copy of `task_id` under `tag`, and what the writer did
/// with it. The scheduler's bookkeeping learns completions only this way,
/// so a task counts as done once its result is at the writer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Answer {
    pub task_id: u64,
    pub tag: i32,
    pub rank: i32,
    pub verdict: Verdict,
}

impl Answer {
    pub const LEN: usize = 24;
    /// Answers per message at most (a batch stays far below the eager limit).
    pub const BATCH: usize = 256;
    pub fn emit_all(answers: &[Answer]) -> Vec<u8> {
        let mut v = Vec::with_capacity(Self::LEN * answers.len());
        for a in answers {
            v.extend_from_slice(&a.task_id.to_le_bytes());
            v.extend_from_slice(&a.tag.to_le_bytes());
            v.extend_from_slice(&a.rank.to_le_bytes());
            v.extend_from_slice(&(a.verdict as u32).to_le_bytes());
            v.extend_from_slice(&0u32.to_le_bytes());
        }
        v
    }
    /// `None` unless `b` is whole answers with known verdicts.
    pub fn parse_all(b: &[u8]) -> Option<Vec<Answer>> {
        let chunks = b.chunks_exact(Self::LEN);
        if !chunks.remainder().is_empty() {
            return None;
        }
        chunks
            .map(|c| {
                let verdict = match u32_at(c, 16)? {
                    0 => Verdict::First,
                    1 => Verdict::Duplicate,
                    2 => Verdict::Dropped,
                    _ => return None,
                };
                Some(Answer { task_id: u64_at(c, 0)?, tag: u32_at(c, 8)? as i32, rank: u32_at(c, 12)? as i32, verdict })
            })
            .collect()
    }
}

/// Writer -> scheduler on `ctl` at the end: what the writer did.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct WriterStats {
    /// Results processed (process_result calls).
    pub processed: u64,
    /// Results discarded because their task was processed before.
    pub duplicates: u64,
    /// Copies dropped unstarted, as the workers said.
    pub dropped: u64,
    /// Bytes of the results processed (duplicates and headers not counted).
    pub bytes: u64,
    /// Time spent in process_result.
    pub process_s: f64,
}

impl WriterStats {
    pub const LEN: usize = 40;
    pub fn emit(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(Self::LEN);
        for x in [self.processed, self.duplicates, self.dropped, self.bytes, self.process_s.to_bits()] {
            v.extend_from_slice(&x.to_le_bytes());
        }
        v
    }
    pub fn parse(b: &[u8]) -> Option<WriterStats> {
        Some(WriterStats {
            processed: u64_at(b, 0)?,
            duplicates: u64_at(b, 8)?,
            dropped: u64_at(b, 16)?,
            bytes: u64_at(b, 24)?,
            process_s: f64::from_bits(u64_at(b, 32)?),
        })
    }
}

/// What a worker saw: on every answer, and with a writer also on `ctl` at
/// the end.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct WorkerStats {
    pub tasks_done: u64,
    pub tasks_dropped: u64,
    pub requests: u64,
    pub idle_s: f64,
    pub busy_s: f64,
    pub rtt_sum_s: f64,
    pub rtt_samples: u64,
    pub final_depth: u64,
    pub max_depth: u64,
    /// Sum over computed tasks of the depth right after each, from the
    /// first with a measured depth on (mean depth = depth_sum /
    /// depth_samples). With `adaptive`, the tasks before the first
    /// measurement ran under the unmeasured depth (the most allowed) and
    /// are not counted: they are the manager's first, unasked tasks.
    pub depth_sum: u64,
    pub depth_samples: u64,
}

impl WorkerStats {
    pub const LEN: usize = 88;
    pub fn emit(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(Self::LEN);
        for x in [self.tasks_done, self.tasks_dropped, self.requests] {
            v.extend_from_slice(&x.to_le_bytes());
        }
        for x in [self.idle_s, self.busy_s, self.rtt_sum_s] {
            v.extend_from_slice(&x.to_bits().to_le_bytes());
        }
        for x in [self.rtt_samples, self.final_depth, self.max_depth, self.depth_sum, self.depth_samples] {
            v.extend_from_slice(&x.to_le_bytes());
        }
        v
    }
    pub fn parse(b: &[u8]) -> Option<WorkerStats> {
        let f = |i| u64_at(b, i).map(f64::from_bits);
        Some(WorkerStats {
            tasks_done: u64_at(b, 0)?,
            tasks_dropped: u64_at(b, 8)?,
            requests: u64_at(b, 16)?,
            idle_s: f(24)?,
            busy_s: f(32)?,
            rtt_sum_s: f(40)?,
            rtt_samples: u64_at(b, 48)?,
            final_depth: u64_at(b, 56)?,
            max_depth: u64_at(b, 64)?,
            depth_sum: u64_at(b, 72)?,
            depth_samples: u64_at(b, 80)?,
        })
    }
    /// Answers the worker had sent when it made this tally.
    pub fn answers(&self) -> u64 {
        self.tasks_done + self.tasks_dropped
    }
    pub fn mean_rtt(&self) -> Option<f64> {
        (self.rtt_samples > 0).then(|| self.rtt_sum_s / self.rtt_samples as f64)
    }
    pub fn mean_depth(&self) -> Option<f64> {
        (self.depth_samples > 0).then(|| self.depth_sum as f64 / self.depth_samples as f64)
    }
    pub fn mean_task(&self) -> Option<f64> {
        (self.tasks_done > 0).then(|| self.busy_s / self.tasks_done as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_round_trip() {
        let h = TaskHeader { task_id: 7, req_seq: 3, alive: 5, remaining: 99, queued_us: 12 };
        let b = h.emit_with(b"abc");
        assert_eq!(b.len(), TaskHeader::LEN + 3);
        assert_eq!(TaskHeader::parse(&b), Some((h, &b"abc"[..])));
        let stats = WorkerStats { tasks_done: 4, busy_s: 0.25, ..Default::default() };
        let r = ResultHeader { task_id: u64::MAX, kind: ResultKind::Dropped, task_ns: 5, stats };
        let b = r.emit_with(&[]);
        assert_eq!(ResultHeader::parse(&b), Some((r, &[][..])));
        let b = r.emit_with(b"xyz");
        assert_eq!(b.len(), ResultHeader::LEN + 3);
        assert_eq!(ResultHeader::parse(&b), Some((r, &b"xyz"[..])));
        let q = Request { count: 10, seq: 4 };
        assert_eq!(Request::parse(&q.emit()), Some(q));
        let s = WorkerStats {
            tasks_done: 3,
            idle_s: 1.5,
            rtt_samples: 2,
            rtt_sum_s: 0.5,
            max_depth: 9,
            depth_sum: 17,
            depth_samples: 2,
            ..Default::default()
        };
        assert_eq!(s.emit().len(), WorkerStats::LEN);
        assert_eq!(WorkerStats::parse(&s.emit()), Some(s));
        assert_eq!(parse_cancel(&emit_cancel(42)), Some(42));
    }

    #[test]
    fn short_or_bad_input_is_rejected() {
        assert_eq!(TaskHeader::parse(&[0; 31]), None);
        assert_eq!(Request::parse(&[1, 2, 3]), None);
        let mut b = ResultHeader { task_id: 1, kind: ResultKind::Done, task_ns: 0, stats: WorkerStats::default() }.emit_with(&[]);
        assert_eq!(ResultHeader::parse(&b[..ResultHeader::LEN - 1]), None);
        b[8] = 9;
        assert_eq!(ResultHeader::parse(&b), None);
        assert_eq!(WorkerStats::parse(&[0; WorkerStats::LEN - 1]), None);
        assert_eq!(Answer::parse_all(&[0; 23]), None);
        let mut b = Answer::emit_all(&[Answer { task_id: 1, tag: 2, rank: 3, verdict: Verdict::First }]);
        b[16] = 7;
        assert_eq!(Answer::parse_all(&b), None);
        assert_eq!(WriterStats::parse(&[0; 39]), None);
    }

    #[test]
    fn writer_messages_round_trip() {
        let a = [
            Answer { task_id: 9, tag: 4096, rank: 7, verdict: Verdict::First },
            Answer { task_id: u64::MAX, tag: 1, rank: 2, verdict: Verdict::Duplicate },
            Answer { task_id: 0, tag: 3, rank: 1, verdict: Verdict::Dropped },
        ];
        let b = Answer::emit_all(&a);
        assert_eq!(b.len(), 3 * Answer::LEN);
        assert_eq!(Answer::parse_all(&b).as_deref(), Some(&a[..]));
        assert_eq!(Answer::parse_all(&[]), Some(vec![]));
        let s = WriterStats { processed: 5, duplicates: 1, dropped: 2, bytes: 1000, process_s: 0.25 };
        assert_eq!(s.emit().len(), WriterStats::LEN);
        assert_eq!(WriterStats::parse(&s.emit()), Some(s));
    }
}
