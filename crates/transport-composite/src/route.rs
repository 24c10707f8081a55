//! Which of a composite's transports carries the next frame to a peer.

use std::time::Duration;
use wanmpi_transport::{PathStats, PeerId};

/// A route is asked again for a peer at most this often (asking reads each
/// transport's path measurements: a system call for tcp).
pub const EVALUATE_EVERY: Duration = Duration::from_millis(50);

pub trait Route: Send {
    /// Picks the transport (index into the composite's parts) for frames to
    /// `peer`, from each part's measurements of its path there, and says why.
    fn choose(&mut self, peer: PeerId, current: usize, paths: &[Option<PathStats>]) -> (usize, String);
}

/// Always the same part for every peer (tests; a single transport).
pub struct FixedRoute(pub usize);

impl Route for FixedRoute {
    fn choose(&mut self, _peer: PeerId, _current: usize, _paths: &[Option<PathStats>]) -> (usize, String) {
        (self.0, "fixed".into())
    }
}
