//! The writer's bookkeeping, without MPI: which tasks' results were
//! processed (the first result of a task is processed, any later one is a
//! duplicate and discarded), and the answers still to be told to the
//! scheduler, cut into batches.

use std::collections::HashSet;

use crate::wire::{Answer, Verdict, WriterStats};

#[derive(Debug, Default)]
pub struct Ledger {
    processed: HashSet<u64>,
    pending: Vec<Answer>,
    pub stats: WriterStats,
}

impl Ledger {
    pub fn new() -> Ledger {
        Ledger::default()
    }

    /// Worker `rank` answered for its copy of `task_id` under `tag`
    /// (`computed`: a result, else "dropped unstarted"). Returns what to do
    /// with it (`First`: process it) and queues the answer for the scheduler.
    pub fn answer(&mut self, task_id: u64, tag: i32, rank: i32, computed: bool) -> Verdict {
        let verdict = if !computed {
            self.stats.dropped += 1;
            Verdict::Dropped
        } else if self.processed.insert(task_id) {
            self.stats.processed += 1;
            Verdict::First
        } else {
            self.stats.duplicates += 1;
            Verdict::Duplicate
        };
        self.pending.push(Answer { task_id, tag, rank, verdict });
        verdict
    }

    pub fn is_processed(&self, task_id: u64) -> bool {
        self.processed.contains(&task_id)
    }

    /// Answers not yet sent, in the order they came, at most
    /// `Answer::BATCH` per batch; empties the queue.
    pub fn take_batches(&mut self) -> Vec<Vec<Answer>> {
        let all = std::mem::take(&mut self.pending);
        all.chunks(Answer::BATCH).map(<[Answer]>::to_vec).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_result_processed_later_ones_discarded() {
        let mut l = Ledger::new();
        assert_eq!(l.answer(7, 1, 2, true), Verdict::First);
        assert!(l.is_processed(7));
        // An end-game copy computed anyway, and one dropped unstarted.
        assert_eq!(l.answer(7, 1, 3, true), Verdict::Duplicate);
        assert_eq!(l.answer(7, 1, 4, false), Verdict::Dropped);
        // A dropped copy does not count as processed.
        assert_eq!(l.answer(8, 2, 2, false), Verdict::Dropped);
        assert!(!l.is_processed(8));
        assert_eq!(l.answer(8, 5, 3, true), Verdict::First);
        assert_eq!((l.stats.processed, l.stats.duplicates, l.stats.dropped), (2, 1, 2));
        let b = l.take_batches();
        assert_eq!(b.len(), 1);
        let order: Vec<(u64, i32, Verdict)> = b[0].iter().map(|a| (a.task_id, a.rank, a.verdict)).collect();
        assert_eq!(
            order,
            vec![(7, 2, Verdict::First), (7, 3, Verdict::Duplicate), (7, 4, Verdict::Dropped), (8, 2, Verdict::Dropped), (8, 3, Verdict::First)]
        );
        assert!(l.take_batches().is_empty());
    }

    #[test]
    fn answers_go_in_bounded_batches_in_order() {
        let mut l = Ledger::new();
        let n = 2 * Answer::BATCH + 3;
        for id in 0..n as u64 {
            l.answer(id, 1, 1, true);
        }
        let b = l.take_batches();
        assert_eq!(b.iter().map(Vec::len).collect::<Vec<_>>(), vec![Answer::BATCH, Answer::BATCH, 3]);
        let ids: Vec<u64> = b.concat().iter().map(|a| a.task_id).collect();
        assert_eq!(ids, (0..n as u64).collect::<Vec<_>>());
    }
}
