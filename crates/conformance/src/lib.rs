//! Shared helpers of the conformance programs. Each program checks MPI rules
//! from inside a real multi-process job and exits non-zero, with a message
//! naming the rank and the rule, when one is broken.

use wanmpi::prelude::*;
pub use wanmpi::{ErrHandler, ErrorClass, Info};

/// Ends the job with a failure message naming the rank.
pub fn fail(rank: i32, msg: &str) -> ! {
    eprintln!("FAIL rank {rank}: {msg}");
    std::process::exit(1);
}

/// Checks a condition; on failure ends the job with the message.
#[macro_export]
macro_rules! check {
    ($rank:expr, $cond:expr, $($fmt:tt)+) => {
        if !$cond {
            $crate::fail($rank, &format!($($fmt)+));
        }
    };
}

/// A deterministic byte pattern for message `id` of `len` bytes.
pub fn pattern(id: u32, len: usize) -> Vec<u8> {
    let mut x = id.wrapping_mul(2654435761).wrapping_add(1);
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x as u8
        })
        .collect()
}

/// Sum reduction, the most used op in these programs.
pub fn sum() -> Op {
    Op::Predef(PredefOp::Sum)
}

/// Prints a success line from rank 0 (the harness looks for it).
pub fn pass(world: &Communicator, what: &str) {
    if world.rank() == 0 {
        println!("PASS {what} on {} ranks", world.size());
    }
}
