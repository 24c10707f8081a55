//! The adaptive choice between tcp and wamp, as the WAMP paper proposes: per
//! peer, from what the path measures. The thresholds come from the
//! ping-pong grids in docs/benchmarks.md section 11: across the emulator
//! wamp won every cell with a round trip of 40 ms or more, with or without
//! loss (no slow start per message, losses repaired without a round trip),
//! while on a path of well under a millisecond without loss tcp's kernel
//! path is faster (loopback 1 MiB: 1.3 against 0.55 GB/s). So: a far peer
//! goes over wamp; a near one over tcp unless tcp sees its segments lost.

use crate::route::Route;
use std::time::Duration;
use wanmpi_transport::{PathStats, PeerId};

/// Round trip from which a peer counts as far.
pub const FAR: Duration = Duration::from_millis(2);
/// Loss rate from which a near path counts as lossy.
pub const LOSSY: f64 = 0.002;
/// Packets a loss figure must rest on before it counts.
const MIN_SAMPLE: u64 = 200;
/// Hysteresis: leaving the current choice needs the figure this far past
/// the threshold.
const MARGIN: f64 = 1.25;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    Tcp,
    Wamp,
}

fn rtt_of(tcp: Option<&PathStats>, wamp: Option<&PathStats>) -> Option<Duration> {
    // Each transport's smallest round trip; wamp's handshake gives one from
    // the start, tcp's from its first segments.
    [tcp, wamp].into_iter().flatten().map(|p| p.min_rtt).filter(|d| !d.is_zero()).min()
}

fn loss_of(tcp: Option<&PathStats>, wamp: Option<&PathStats>) -> Option<f64> {
    [tcp, wamp].into_iter().flatten().filter(|p| p.sent >= MIN_SAMPLE).map(|p| p.loss).reduce(f64::max)
}

/// The rule, as a pure function of what was measured and the current choice.
pub fn decide(current: Choice, tcp: Option<&PathStats>, wamp: Option<&PathStats>) -> (Choice, String) {
    let (far, lossy) = match current {
        Choice::Wamp => (FAR.div_f64(MARGIN), LOSSY / MARGIN),
        Choice::Tcp => (FAR.mul_f64(MARGIN), LOSSY * MARGIN),
    };
    let rtt = rtt_of(tcp, wamp);
    let loss = loss_of(tcp, wamp);
    if let Some(r) = rtt.filter(|&r| r >= far) {
        return (Choice::Wamp, format!("far (round trip {:.1} ms)", r.as_secs_f64() * 1e3));
    }
    if let Some(l) = loss.filter(|&l| l >= lossy) {
        return (Choice::Wamp, format!("lossy ({:.2} % lost)", l * 100.0));
    }
    let r = rtt.map_or("unknown".into(), |r| format!("{:.2} ms", r.as_secs_f64() * 1e3));
    (Choice::Tcp, format!("near and clean (round trip {r})"))
}

/// `decide` for a composite whose part `tcp` is tcp and part `wamp` is wamp.
pub struct AdaptiveRoute {
    pub tcp: usize,
    pub wamp: usize,
}

impl Route for AdaptiveRoute {
    fn choose(&mut self, _peer: PeerId, current: usize, paths: &[Option<PathStats>]) -> (usize, String) {
        let cur = if current == self.wamp { Choice::Wamp } else { Choice::Tcp };
        let (c, why) = decide(cur, paths[self.tcp].as_ref(), paths[self.wamp].as_ref());
        (if c == Choice::Wamp { self.wamp } else { self.tcp }, why)
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
            // near and clean: tcp
            (Tcp, Some(path(0.1, 0.0, 1000)), Some(path(0.1, 0.0, 10)), Tcp),
            (Wamp, Some(path(0.1, 0.0, 1000)), Some(path(0.1, 0.0, 1000)), Tcp),
            // far: wamp, whatever the loss
            (Tcp, Some(path(40.0, 0.0, 1000)), Some(path(40.0, 0.0, 0)), Wamp),
            (Tcp, None, Some(path(20.0, 0.0, 0)), Wamp),
            // near but lossy: wamp, once the figure rests on enough packets
            (Tcp, Some(path(0.2, 0.01, 1000)), Some(path(0.2, 0.0, 0)), Wamp),
            (Tcp, Some(path(0.2, 0.01, 50)), Some(path(0.2, 0.0, 0)), Tcp),
            // hysteresis around the thresholds
            (Wamp, Some(path(1.8, 0.0, 1000)), None, Wamp),
            (Tcp, Some(path(2.2, 0.0, 1000)), None, Tcp),
            (Tcp, Some(path(2.6, 0.0, 1000)), None, Wamp),
            (Wamp, Some(path(0.2, 0.0019, 1000)), Some(path(0.2, 0.0019, 1000)), Wamp),
            (Tcp, Some(path(0.2, 0.0022, 1000)), None, Tcp),
            // nothing known: stay near
            (Tcp, None, None, Tcp),
        ];
        for (i, (cur, t, w, want)) in rows.iter().enumerate() {
            let (got, why) = decide(*cur, t.as_ref(), w.as_ref());
            assert_eq!(got, *want, "row {i}: {why}");
        }
    }
}
