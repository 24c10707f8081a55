//! Where a finished collective's bytes go: a user buffer seen through its
//! datatype (contiguous: written in place; otherwise unpacked).

use crate::staged::{Staged, StagedBlocks};

pub enum Sink {
    Whole(Staged),
    Blocks(StagedBlocks),
}

// The pointers are the user's buffers, which MPI keeps reserved for the
// collective until it completes; only the completing thread writes them,
// under the runtime lock.
unsafe impl Send for Sink {}

impl Sink {
    /// The user buffer's current bytes (MPI_IN_PLACE input, gaps to keep).
    pub fn current(&self) -> Vec<u8> {
        match self {
            Sink::Whole(s) => s.bytes().to_vec(),
            Sink::Blocks(b) => b.bytes().to_vec(),
        }
    }

    pub fn fill(self, bytes: &[u8]) {
        fn copy(to: &mut [u8], from: &[u8]) {
            let n = to.len().min(from.len());
            to[..n].copy_from_slice(&from[..n]);
        }
        match self {
            Sink::Whole(mut s) => {
                copy(s.bytes_mut(), bytes);
                s.finish();
            }
            Sink::Blocks(mut b) => {
                copy(b.bytes_mut(), bytes);
                b.finish();
            }
        }
    }
}
