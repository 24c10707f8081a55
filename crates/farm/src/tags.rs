//! A bounded pool of reusable MPI tags that name tasks in flight (paper 000
//! §3.2): an arbitrary number of tasks reuse a reserved range of tags, so
//! each task in flight travels under its own tag (its own stream on SCTP).

use std::collections::VecDeque;

#[derive(Debug)]
pub struct TagPool {
    free: VecDeque<i32>,
    capacity: usize,
}

impl TagPool {
    /// Tags `base .. base + count`.
    pub fn new(base: i32, count: usize) -> TagPool {
        let count = count.min((i32::MAX - base.max(0)) as usize);
        TagPool { free: (0..count as i32).map(|i| base + i).collect(), capacity: count }
    }
    /// A free tag, least recently used first (so a tag's old messages are long gone).
    pub fn take(&mut self) -> Option<i32> {
        self.free.pop_front()
    }
    pub fn give_back(&mut self, tag: i32) {
        debug_assert!(!self.free.contains(&tag), "tag {tag} returned twice");
        self.free.push_back(tag);
    }
    pub fn in_use(&self) -> usize {
        self.capacity - self.free.len()
    }
    pub fn capacity(&self) -> usize {
        self.capacity
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounded_and_reused_in_fifo_order() {
        let mut p = TagPool::new(10, 3);
        let a = p.take().unwrap();
        let b = p.take().unwrap();
        let c = p.take().unwrap();
        assert_eq!((a, b, c), (10, 11, 12));
        assert_eq!(p.take(), None);
        assert_eq!(p.in_use(), 3);
        p.give_back(b);
        p.give_back(a);
        assert_eq!(p.take(), Some(11));
        assert_eq!(p.take(), Some(10));
    }
}
