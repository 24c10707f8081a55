//! The adaptive choice between tcp and wamp, as the WAMP paper proposes: per
//! peer, from what the path measures. The threshold comes from the ping-pong
//! grids in docs/benchmarks.md sections 11 and 13: across the emulator wamp
//! won every cell with a round trip of 40 ms or more, lossy or not (no slow
//! start per message, losses repaired without a round trip), while on a
//! sub-millisecond path tcp was as fast or faster in every cell, lossy or
//! not (a loss costs tcp little there, and its kernel path moves bulk data
//! faster than wamp's one datagram per system call). So a peer goes over
//! wamp when it is far, over tcp when it is near. The loss figure is kept in
//! the reason, for the stats.

use crate::route::{Pick, Route};
use std::time::Duration;
use wanmpi_transport::{PathStats, PeerId};

/// Round trip from which a peer counts as far.
pub use wanmpi_transport::FAR_RTT as FAR;
/// Packets a loss figure must rest on before it is shown.
const MIN_SAMPLE: u64 = 100;
/// Hysteresis: leaving the current choice needs the round trip this far
/// past the threshold.
const MARGIN: f64 = 1.25;

/// Which side of `FAR` a peer is on: the near part (tcp) or the far one
/// (wamp, or whatever carries WAN traffic).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    Near,
    Far,
}

fn rtt_of(near: Option<&PathStats>, far: Option<&PathStats>) -> Option<Duration> {
    // Each transport's smallest round trip; wamp's handshake gives one from
    // the start, tcp's from its first segments.
    [near, far].into_iter().flatten().map(|p| p.min_rtt).filter(|d| !d.is_zero()).min()
}

fn loss_of(near: Option<&PathStats>, far: Option<&PathStats>) -> Option<f64> {
    [near, far].into_iter().flatten().filter(|p| p.sent >= MIN_SAMPLE).map(|p| p.loss).reduce(f64::max)
}

/// The rule, as a pure function of what the near and far parts measured
/// and the current choice.
pub fn decide(current: Choice, near: Option<&PathStats>, far: Option<&PathStats>) -> (Choice, String) {
    let threshold = if current == Choice::Far { FAR.div_f64(MARGIN) } else { FAR.mul_f64(MARGIN) };
    let rtt = rtt_of(near, far);
    let loss = loss_of(near, far).map_or(String::new(), |l| format!(", {:.2} % lost", l * 100.0));
    match rtt {
        Some(r) if r >= threshold => (Choice::Far, format!("far (round trip {:.1} ms{loss})", r.as_secs_f64() * 1e3)),
        Some(r) => (Choice::Near, format!("near (round trip {:.2} ms{loss})", r.as_secs_f64() * 1e3)),
        None => (Choice::Near, "no round trip measured yet".into()),
    }
}

/// `decide` for a composite whose part `tcp` is tcp and part `wamp` is wamp.
pub struct AdaptiveRoute {
    pub tcp: usize,
    pub wamp: usize,
}

impl Route for AdaptiveRoute {
    fn choose(&mut self, _peer: PeerId, current: &Pick, paths: &[Option<PathStats>]) -> Pick {
        let cur = if current.small == self.wamp { Choice::Far } else { Choice::Near };
        let (c, why) = decide(cur, paths[self.tcp].as_ref(), paths[self.wamp].as_ref());
        Pick::all(if c == Choice::Far { self.wamp } else { self.tcp }, why)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(rtt_ms: f64, loss: f64, sent: u64) -> PathStats {
        let d = Duration::from_secs_f64(rtt_ms / 1e3);
        PathStats { srtt: d, min_rtt: d, loss, sent, delivery_rate: 0.0 }
    }

    #[test]
    fn the_rule_as_a_table() {
        use Choice::*;
        let rows: &[(Choice, Option<PathStats>, Option<PathStats>, Choice)] = &[
            // near: tcp, lossy or not
            (Near, Some(path(0.1, 0.0, 1000)), Some(path(0.1, 0.0, 10)), Near),
            (Far, Some(path(0.1, 0.0, 1000)), Some(path(0.1, 0.0, 1000)), Near),
            (Near, Some(path(0.2, 0.02, 1000)), Some(path(0.2, 0.02, 1000)), Near),
            // far: wamp, whatever the loss
            (Near, Some(path(40.0, 0.0, 1000)), Some(path(40.0, 0.0, 0)), Far),
            (Near, None, Some(path(20.0, 0.0, 0)), Far),
            (Near, Some(path(160.0, 0.02, 1000)), None, Far),
            // the smaller of the two round trips counts
            (Near, Some(path(0.3, 0.0, 1000)), Some(path(40.0, 0.0, 0)), Near),
            // hysteresis around the threshold
            (Far, Some(path(1.8, 0.0, 1000)), None, Far),
            (Near, Some(path(2.2, 0.0, 1000)), None, Near),
            (Near, Some(path(2.6, 0.0, 1000)), None, Far),
            (Far, Some(path(1.5, 0.0, 1000)), None, Near),
            // nothing known: tcp
            (Near, None, None, Near),
        ];
        for (i, (cur, t, w, want)) in rows.iter().enumerate() {
            let (got, why) = decide(*cur, t.as_ref(), w.as_ref());
            assert_eq!(got, *want, "row {i}: {why}");
        }
    }
}
