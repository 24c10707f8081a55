//! The manager's bookkeeping, without MPI: the tag-to-task dictionary, the
//! queue of workers' requests, tasks to hand out again, and the choice of
//! what a request gets. Time comes in as an argument.

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

use crate::tags::TagPool;

/// One copy of a task at a worker.
#[derive(Debug, Clone)]
pub struct Copy {
    pub worker: usize,
    pub issued: Instant,
}

/// A task in flight, keyed by its tag.
#[derive(Debug)]
pub struct InFlight {
    pub id: u64,
    /// Kept until the result is in, to hand the task out again.
    pub body: Vec<u8>,
    pub copies: Vec<Copy>,
    pub has_result: bool,
    first_issued: Instant,
}

/// A request's slots not yet answered.
#[derive(Debug, Clone)]
pub struct Demand {
    pub worker: usize,
    pub left: u32,
    pub seq: u32,
    pub since: Instant,
}

/// What to send for a request.
#[derive(Debug, PartialEq, Eq)]
pub enum Pick {
    /// A task never handed out: create it and send under `tag`.
    Fresh { id: u64, tag: i32 },
    /// A task whose worker was lost, again under a new `tag`.
    Requeued { id: u64, tag: i32 },
    /// Another copy of the task in flight under `tag` (end game).
    Reissue { tag: i32 },
}

/// The outcome of a worker's answer for a task copy.
#[derive(Debug, PartialEq, Eq)]
pub enum Reply {
    /// The first result for task `id`: process it; `cancel` lists workers
    /// holding other copies.
    First { id: u64, cancel: Vec<usize> },
    /// A later result of a task that already has one: discard it.
    Duplicate { id: u64 },
    /// A copy dropped unstarted.
    Dropped { id: u64 },
    /// No such copy: a protocol error.
    Unknown,
}

pub struct Book {
    total: u64,
    next_fresh: u64,
    requeue: VecDeque<(u64, Vec<u8>)>,
    pub inflight: HashMap<i32, InFlight>,
    tags: TagPool,
    pub demand: VecDeque<Demand>,
    pub done: u64,
    turnaround_sum: f64,
    turnaround_n: u64,
}

impl Book {
    pub fn new(total: u64, tags: TagPool) -> Book {
        Book {
            total,
            next_fresh: 0,
            requeue: VecDeque::new(),
            inflight: HashMap::new(),
            tags,
            demand: VecDeque::new(),
            done: 0,
            turnaround_sum: 0.0,
            turnaround_n: 0,
        }
    }

    pub fn total(&self) -> u64 {
        self.total
    }
    pub fn all_done(&self) -> bool {
        self.done >= self.total
    }
    /// Tasks not handed out yet (fresh or waiting to be handed out again).
    pub fn remaining(&self) -> u64 {
        self.total - self.next_fresh + self.requeue.len() as u64
    }
    pub fn tags_in_use(&self) -> usize {
        self.tags.in_use()
    }

    /// Mean time from a task's first issue to its first result.
    pub fn mean_turnaround(&self) -> Option<f64> {
        (self.turnaround_n > 0).then(|| self.turnaround_sum / self.turnaround_n as f64)
    }

    /// Chooses a task for `worker`: tasks of lost workers first, then fresh
    /// ones (both need a free tag), then, in the end game, a copy of the
    /// longest-waiting task held by another worker for longer than
    /// `reissue_factor` mean turnarounds.
    pub fn pick_for(&mut self, worker: usize, now: Instant, end_game: bool, reissue_factor: f64) -> Option<Pick> {
        if !self.requeue.is_empty() {
            let tag = self.tags.take()?;
            let (id, body) = self.requeue.pop_front()?;
            self.inflight.insert(tag, InFlight { id, body, copies: vec![], has_result: false, first_issued: now });
            return Some(Pick::Requeued { id, tag });
        }
        if self.next_fresh < self.total {
            let tag = self.tags.take()?;
            let id = self.next_fresh;
            self.next_fresh += 1;
            self.inflight.insert(tag, InFlight { id, body: vec![], copies: vec![], has_result: false, first_issued: now });
            return Some(Pick::Fresh { id, tag });
        }
        if !end_game {
            return None;
        }
        let limit = Duration::from_secs_f64(self.mean_turnaround()? * reissue_factor);
        self.inflight
            .iter()
            .filter(|(_, f)| !f.has_result && f.copies.len() == 1 && f.copies.iter().all(|c| c.worker != worker))
            .filter_map(|(tag, f)| f.copies.iter().map(|c| c.issued).max().map(|t| (*tag, t)))
            .filter(|(_, t)| now.saturating_duration_since(*t) > limit)
            .min_by_key(|(_, t)| *t)
            .map(|(tag, _)| Pick::Reissue { tag })
    }

    /// Records that the task under `tag` went to `worker`.
    pub fn issued(&mut self, tag: i32, worker: usize, now: Instant) {
        if let Some(f) = self.inflight.get_mut(&tag) {
            f.copies.push(Copy { worker, issued: now });
        }
    }

    /// A worker answered for its copy under `tag`.
    pub fn reply(&mut self, worker: usize, tag: i32, computed: bool, now: Instant) -> Reply {
        let Some(f) = self.inflight.get_mut(&tag) else { return Reply::Unknown };
        let Some(pos) = f.copies.iter().position(|c| c.worker == worker) else { return Reply::Unknown };
        f.copies.remove(pos);
        let id = f.id;
        let out = if !computed {
            Reply::Dropped { id }
        } else if f.has_result {
            Reply::Duplicate { id }
        } else {
            f.has_result = true;
            f.body = vec![];
            self.done += 1;
            self.turnaround_sum += now.saturating_duration_since(f.first_issued).as_secs_f64();
            self.turnaround_n += 1;
            Reply::First { id, cancel: f.copies.iter().map(|c| c.worker).collect() }
        };
        self.settle(tag);
        out
    }

    /// Frees the tag of a task with no copies left; a task with no copies
    /// and no result goes back to be handed out again.
    fn settle(&mut self, tag: i32) {
        let Some(f) = self.inflight.get(&tag) else { return };
        if !f.copies.is_empty() {
            return;
        }
        if let Some(f) = self.inflight.remove(&tag) {
            if !f.has_result {
                self.requeue.push_back((f.id, f.body));
            }
            self.tags.give_back(tag);
        }
    }

    /// A task body to keep for re-issue (fresh tasks are created after `pick_for`).
    pub fn set_body(&mut self, tag: i32, body: &[u8]) {
        if let Some(f) = self.inflight.get_mut(&tag) {
            f.body = body.to_vec();
        }
    }

    /// A worker is gone: its copies are forgotten and its unfinished tasks
    /// go back to the queue; returns how many tasks went back.
    pub fn worker_lost(&mut self, worker: usize) -> u64 {
        self.demand.retain(|d| d.worker != worker);
        let tags: Vec<i32> = self.inflight.iter().filter(|(_, f)| f.copies.iter().any(|c| c.worker == worker)).map(|(t, _)| *t).collect();
        let before = self.requeue.len();
        for t in tags {
            if let Some(f) = self.inflight.get_mut(&t) {
                f.copies.retain(|c| c.worker != worker);
            }
            self.settle(t);
        }
        (self.requeue.len() - before) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn book(total: u64, tags: usize) -> Book {
        Book::new(total, TagPool::new(1, tags))
    }

    #[test]
    fn every_task_once_and_tags_reused() {
        let mut b = book(5, 2);
        let t0 = Instant::now();
        let Some(Pick::Fresh { id: 0, tag: a }) = b.pick_for(0, t0, false, 2.0) else { panic!() };
        b.issued(a, 0, t0);
        let Some(Pick::Fresh { id: 1, tag: c }) = b.pick_for(1, t0, false, 2.0) else { panic!() };
        b.issued(c, 1, t0);
        // Pool of two tags exhausted: the next request waits.
        assert_eq!(b.pick_for(0, t0, false, 2.0), None);
        assert_eq!(b.reply(0, a, true, t0), Reply::First { id: 0, cancel: vec![] });
        assert_eq!(b.pick_for(0, t0, false, 2.0), Some(Pick::Fresh { id: 2, tag: a }));
        assert_eq!(b.tags_in_use(), 2);
        assert_eq!(b.reply(1, a, true, t0), Reply::Unknown);
    }

    #[test]
    fn end_game_reissues_a_slow_copy_and_discards_the_duplicate() {
        let mut b = book(2, 8);
        let t0 = Instant::now();
        let Some(Pick::Fresh { tag: t_fast, .. }) = b.pick_for(0, t0, true, 2.0) else { panic!() };
        b.issued(t_fast, 0, t0);
        let Some(Pick::Fresh { tag: t_slow, .. }) = b.pick_for(1, t0, true, 2.0) else { panic!() };
        b.issued(t_slow, 1, t0);
        b.reply(0, t_fast, true, t0 + Duration::from_millis(10));
        // Too early to re-issue (mean turnaround 10 ms, factor 2).
        assert_eq!(b.pick_for(0, t0 + Duration::from_millis(15), true, 2.0), None);
        // Never to the worker that holds it.
        assert_eq!(b.pick_for(1, t0 + Duration::from_millis(50), true, 2.0), None);
        let t1 = t0 + Duration::from_millis(50);
        assert_eq!(b.pick_for(0, t1, true, 2.0), Some(Pick::Reissue { tag: t_slow }));
        b.issued(t_slow, 0, t1);
        // Only one extra copy.
        assert_eq!(b.pick_for(2, t1, true, 2.0), None);
        assert_eq!(b.reply(0, t_slow, true, t1), Reply::First { id: 1, cancel: vec![1] });
        assert!(b.all_done());
        assert_eq!(b.reply(1, t_slow, true, t1), Reply::Duplicate { id: 1 });
        assert!(b.inflight.is_empty());
        assert_eq!(b.tags_in_use(), 0);
    }

    #[test]
    fn lost_worker_tasks_go_back_first() {
        let mut b = book(3, 8);
        let t0 = Instant::now();
        let Some(Pick::Fresh { id: 0, tag }) = b.pick_for(1, t0, false, 2.0) else { panic!() };
        b.set_body(tag, b"zero");
        b.issued(tag, 1, t0);
        b.demand.push_back(Demand { worker: 1, left: 2, seq: 0, since: t0 });
        assert_eq!(b.worker_lost(1), 1);
        assert!(b.demand.is_empty());
        assert_eq!(b.remaining(), 3);
        let Some(Pick::Requeued { id: 0, tag: t2 }) = b.pick_for(0, t0, false, 2.0) else { panic!() };
        assert_eq!(b.inflight[&t2].body, b"zero");
    }

    #[test]
    fn late_answer_of_a_lost_worker_is_unknown_and_the_new_copy_completes() {
        // With a writer, the writer may have processed a result of worker 1
        // whose answer reaches the scheduler after it declared 1 lost: the
        // book no longer knows that copy (the scheduler skips it), and the
        // re-queued copy's answer completes the task here (at the writer
        // it is a duplicate).
        let mut b = book(1, 8);
        let t0 = Instant::now();
        let Some(Pick::Fresh { id: 0, tag }) = b.pick_for(1, t0, false, 2.0) else { panic!() };
        b.issued(tag, 1, t0);
        assert_eq!(b.worker_lost(1), 1);
        assert_eq!(b.reply(1, tag, true, t0), Reply::Unknown);
        let Some(Pick::Requeued { id: 0, tag: t2 }) = b.pick_for(0, t0, false, 2.0) else { panic!() };
        b.issued(t2, 0, t0);
        assert_eq!(b.reply(0, t2, true, t0), Reply::First { id: 0, cancel: vec![] });
        assert!(b.all_done() && b.inflight.is_empty());
    }
}
