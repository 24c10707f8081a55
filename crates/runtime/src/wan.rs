//! Which peers are far, and the WAN window each is granted.
//!
//! A rendezvous costs a round trip per long message; across a WAN that is
//! tens of milliseconds, far more than buffering the message costs. So this
//! process grants every peer whose measured round trip reaches `FAR_RTT` a
//! window of receive buffer (the engine's `grant_window`), and that peer
//! sends long messages eagerly while the window lasts. Near peers keep the
//! rendezvous: there a round trip is cheaper than a copy through a buffer.
//! Memory stays bounded: a peer gets at most `WANMPI_WAN_WINDOW`, and all
//! peers together at most `WANMPI_WAN_BUFFER`.

use std::time::{Duration, Instant};

use wanmpi_engine::Engine;
use wanmpi_transport::{PeerId, Transport};

use crate::options::WanPeers;

/// How often peers whose path is not measured yet are looked at again.
const RECHECK: Duration = Duration::from_millis(100);
/// After this, peers still unmeasured stay without a window (a transport
/// that measures nothing, or a round trip below a millisecond that sctp
/// reports as 0) and the progress loop stops asking.
const GIVE_UP: Duration = Duration::from_secs(10);

/// What is known of each peer's distance.
pub struct WanPlan {
    /// Per peer: decided (far and granted, or near), or still unknown.
    decided: Vec<bool>,
    /// Bytes granted to each far peer (0: the window is off).
    grant: u64,
    next_check: Instant,
    give_up_at: Instant,
    /// Set once every peer is decided: nothing left to look at.
    settled: bool,
    /// Every peer gets the window, near or far (`WANMPI_WAN_PEERS=all`).
    all: bool,
}

/// The window per far peer: the per-peer ceiling, within the total budget
/// shared by every other rank; none if that leaves no more than the eager
/// limit (such a window would never carry a message).
pub fn grant_per_peer(window: u64, budget: u64, size: u32, eager_limit: usize) -> u64 {
    let others = u64::from(size.saturating_sub(1)).max(1);
    let g = window.min(budget / others);
    if g > eager_limit as u64 {
        g
    } else {
        0
    }
}

impl WanPlan {
    pub fn new(rank: PeerId, size: u32, grant: u64, peers: WanPeers) -> WanPlan {
        let grant = if peers == WanPeers::None { 0 } else { grant };
        let decided = (0..size).map(|p| p == rank || grant == 0).collect();
        let now = Instant::now();
        WanPlan { decided, grant, next_check: now, give_up_at: now + GIVE_UP, settled: grant == 0 || size < 2, all: peers == WanPeers::All }
    }

    /// Looks at the peers not decided yet (at most every `RECHECK`) and
    /// grants the far ones their window.
    pub fn refresh(&mut self, engine: &mut Engine, transport: &dyn Transport) {
        if self.settled {
            return;
        }
        let now = Instant::now();
        if now < self.next_check {
            return;
        }
        self.next_check = now + RECHECK;
        for (peer, decided) in self.decided.iter_mut().enumerate() {
            if *decided {
                continue;
            }
            let peer = peer as PeerId;
            let far = if self.all { Some(true) } else { transport.path(peer).and_then(|p| p.is_far()) };
            match far {
                Some(true) => {
                    engine.grant_window(peer, self.grant);
                    *decided = true;
                }
                Some(false) => *decided = true,
                None => {}
            }
        }
        self.settled = self.decided.iter().all(|d| *d) || now >= self.give_up_at;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_grant_respects_the_ceiling_the_budget_and_the_eager_limit() {
        let mib = 1 << 20;
        // (window, budget, size) -> grant, eager limit 64 KiB
        let rows: &[(u64, u64, u32, u64)] = &[
            (4 * mib, 64 * mib, 8, 4 * mib),
            (4 * mib, 64 * mib, 64, mib + 16 * 1024 + 256), // 64 MiB / 63
            (4 * mib, 64 * mib, 2048, 0),                   // 32 KiB each: below the eager limit
            (0, 64 * mib, 8, 0),
            (4 * mib, 0, 8, 0),
            (4 * mib, 64 * mib, 1, 4 * mib),
        ];
        for &(window, budget, size, want) in rows {
            let got = grant_per_peer(window, budget, size, 64 * 1024);
            if want == 0 {
                assert_eq!(got, 0, "{window} {budget} {size}");
            } else {
                assert!(got.abs_diff(want) < 1024, "{window} {budget} {size}: {got} vs {want}");
            }
        }
    }
}
