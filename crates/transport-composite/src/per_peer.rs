//! The transport per peer: shared memory to ranks on this host, the LAN
//! transport inside this site, the WAN transport to other sites. Where the
//! launcher said which site a peer is in, its part is fixed; where it did
//! not, the peer goes near or far by measured round trip, with the same
//! threshold as the adaptive transport (`adaptive::by_distance`; loss does
//! not move it: the WAN part may be sctp or tcp).

use crate::adaptive::{by_distance, Choice};
use crate::route::{Pick, Route};
use wanmpi_transport::{PathStats, PeerId};

/// How one peer is reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// Always over this part, for the reason given.
    Fixed(usize, &'static str),
    /// Over `near` or `far` by the measured round trip.
    ByDistance { near: usize, far: usize },
}

pub struct PerPeerRoute {
    reach: Vec<Reach>,
}

impl PerPeerRoute {
    /// `reach[p]` for every world rank `p` (this rank included: a frame to
    /// oneself takes the part named there).
    pub fn new(reach: Vec<Reach>) -> PerPeerRoute {
        PerPeerRoute { reach }
    }
}

impl Route for PerPeerRoute {
    fn choose(&mut self, peer: PeerId, current: &Pick, paths: &[Option<PathStats>]) -> Pick {
        match self.reach.get(peer as usize).copied() {
            Some(Reach::Fixed(part, why)) => Pick::all(part, why),
            Some(Reach::ByDistance { near, far }) => {
                let cur = if current.small == far { Choice::Far } else { Choice::Near };
                let (c, why) = by_distance(cur, paths.get(near).and_then(|p| p.as_ref()), paths.get(far).and_then(|p| p.as_ref()))
                    .unwrap_or((Choice::Near, "no round trip measured yet".into()));
                Pick::all(if c == Choice::Far { far } else { near }, why)
            }
            None => Pick::all(0, "a rank outside the job"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn path(rtt_ms: f64) -> Option<PathStats> {
        let d = Duration::from_secs_f64(rtt_ms / 1e3);
        Some(PathStats { srtt: d, min_rtt: d, loss: 0.0, sent: 1000, delivery_rate: 0.0 })
    }

    #[test]
    fn fixed_peers_stay_put_and_unknown_sites_go_by_distance() {
        let mut r = PerPeerRoute::new(vec![
            Reach::Fixed(0, "same host"),
            Reach::Fixed(1, "same site"),
            Reach::ByDistance { near: 1, far: 2 },
            Reach::ByDistance { near: 1, far: 2 },
        ]);
        let start = Pick::all(0, "start");
        // Whatever was measured, a fixed peer keeps its part.
        assert_eq!(r.choose(0, &start, &[path(0.001), path(80.0), path(80.0)]).small, 0);
        assert_eq!(r.choose(1, &start, &[None, path(80.0), None]).small, 1);
        // Unmeasured: near; 40 ms measured: far; 0.2 ms: near.
        assert_eq!(r.choose(2, &start, &[None, None, None]).small, 1);
        assert_eq!(r.choose(2, &start, &[None, path(40.0), path(40.0)]).small, 2);
        assert_eq!(r.choose(3, &start, &[None, path(0.2), path(0.3)]).small, 1);
        assert_eq!(r.choose(9, &start, &[None, None, None]).small, 0);
    }
}
