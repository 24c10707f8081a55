//! Which of a composite's transports carries the next frame to a peer.

use std::time::Duration;
use wanmpi_transport::{PathStats, PeerId};

/// A route is asked again for a peer at most this often (asking reads each
/// transport's path measurements: a system call for tcp, about a
/// microsecond; it happens only when a frame goes to that peer). Short
/// enough that on a sub-millisecond lossy path a peer leaves tcp after a few
/// round trips, not 50 ms of them (docs/benchmarks.md "Ping-pong across
/// the emulator", a sub-millisecond lossy path).
pub const EVALUATE_EVERY: Duration = Duration::from_millis(5);

/// Where frames to one peer go until the route is asked again: frames
/// shorter than `large_from` bytes over part `small`, the others over part
/// `large` (the same part for both in the common case), and with `copy` a
/// second copy of every frame over that part as well (the receiver
/// delivers whichever comes first and drops the other by its number).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pick {
    pub small: usize,
    pub large: usize,
    pub large_from: usize,
    pub copy: Option<usize>,
    pub why: String,
}

impl Pick {
    /// Every frame over `part`.
    pub fn all(part: usize, why: impl Into<String>) -> Pick {
        Pick { small: part, large: part, large_from: usize::MAX, copy: None, why: why.into() }
    }

    /// Every frame over `part`, and a copy of it over `copy`.
    pub fn with_copy(part: usize, copy: usize, why: impl Into<String>) -> Pick {
        Pick { copy: Some(copy), ..Pick::all(part, why) }
    }

    pub fn part_for(&self, len: usize) -> usize {
        if len >= self.large_from {
            self.large
        } else {
            self.small
        }
    }
}

pub trait Route: Send {
    /// Picks the transports (indices into the composite's parts) for frames
    /// to `peer`, from each part's measurements of its path there and the
    /// current pick, and says why.
    fn choose(&mut self, peer: PeerId, current: &Pick, paths: &[Option<PathStats>]) -> Pick;
}
