use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use super::SIZES;
use crate::coll::barrier;
use crate::coll::testing::run;
use crate::coll::CollComm;

#[test]
fn nobody_leaves_before_everybody_arrived() {
    for size in SIZES {
        for round in 0..3 {
            let arrived = AtomicUsize::new(0);
            let out = run(size, |c| {
                // Skew arrivals: the last rank comes late.
                if c.rank() == size - 1 {
                    std::thread::sleep(Duration::from_millis(5));
                }
                arrived.fetch_add(1, Ordering::SeqCst);
                barrier(c).unwrap();
                arrived.load(Ordering::SeqCst)
            });
            for (seen, _) in &out {
                assert_eq!(*seen, size, "size {size} round {round}");
            }
        }
    }
}

#[test]
fn takes_ceil_log2_rounds() {
    for size in SIZES {
        let out = run(size, |c| barrier(c).unwrap());
        let log = size.next_power_of_two().trailing_zeros() as usize;
        assert!(out.iter().all(|(_, ex)| *ex == log), "size {size}: {out:?}");
    }
}

#[test]
fn consecutive_barriers_stay_matched() {
    let out = run(7, |c| {
        for _ in 0..20 {
            barrier(c).unwrap();
        }
    });
    assert_eq!(out.len(), 7);
}
