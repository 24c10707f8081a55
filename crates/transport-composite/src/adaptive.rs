//! The adaptive choice between tcp and wamp, as the WAMP paper proposes: per
//! peer, from what the path measures. The thresholds come from the
//! ping-pong grids in docs/benchmarks.md section 11: across the emulator
//! wamp won every cell with a round trip of 40 ms or more, with or without
//! loss (no slow start per message, losses repaired without a round trip),
//! while on a path of well under a millisecond tcp's kernel path is faster
//! for long messages even with loss (emulator at 0 ms, 1 % loss, 300 KiB:
//! tcp 4-5 ms, wamp 9-19 ms per round trip) and slower for short ones, whose
//! tail losses wait for tcp's timers (30 KiB: tcp 11 ms, wamp 1.8 ms). So: a
//! far peer goes over wamp; a near clean one over tcp; a near lossy one gets
//! frames under `SPLIT` bytes over wamp and longer ones over tcp.

use crate::route::{Pick, Route};
use std::time::Duration;
use wanmpi_transport::{PathStats, PeerId};

/// Round trip from which a peer counts as far.
pub const FAR: Duration = Duration::from_millis(2);
/// Loss rate from which a near path counts as lossy.
pub const LOSSY: f64 = 0.002;
/// Packets a loss figure must rest on before it counts.
const MIN_SAMPLE: u64 = 100;
/// Hysteresis: leaving the current choice needs the figure this far past
/// the threshold.
const MARGIN: f64 = 1.25;
/// On a near lossy path, frames from this long go over tcp.
pub const SPLIT: usize = 64 << 10;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    Tcp,
    Wamp,
    /// Short frames over wamp, long ones over tcp.
    Split,
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
    let far = if current == Choice::Wamp { FAR.div_f64(MARGIN) } else { FAR.mul_f64(MARGIN) };
    let lossy = if current == Choice::Tcp { LOSSY * MARGIN } else { LOSSY / MARGIN };
    let rtt = rtt_of(tcp, wamp);
    let loss = loss_of(tcp, wamp);
    if let Some(r) = rtt.filter(|&r| r >= far) {
        return (Choice::Wamp, format!("far (round trip {:.1} ms)", r.as_secs_f64() * 1e3));
    }
    if let Some(l) = loss.filter(|&l| l >= lossy) {
        return (Choice::Split, format!("near but lossy ({:.2} % lost): short frames over wamp, long over tcp", l * 100.0));
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
    fn choose(&mut self, _peer: PeerId, current: &Pick, paths: &[Option<PathStats>]) -> Pick {
        let cur = match (current.small == self.wamp, current.large == self.wamp) {
            (true, true) => Choice::Wamp,
            (true, false) => Choice::Split,
            _ => Choice::Tcp,
        };
        let (c, why) = decide(cur, paths[self.tcp].as_ref(), paths[self.wamp].as_ref());
        match c {
            Choice::Wamp => Pick::all(self.wamp, why),
            Choice::Tcp => Pick::all(self.tcp, why),
            Choice::Split => Pick { small: self.wamp, large: self.tcp, large_from: SPLIT, why },
        }
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
            // near but lossy: split, once the figure rests on enough packets
            (Tcp, Some(path(0.2, 0.01, 1000)), Some(path(0.2, 0.0, 0)), Split),
            (Tcp, Some(path(0.2, 0.01, 50)), Some(path(0.2, 0.0, 0)), Tcp),
            (Tcp, Some(path(0.2, 0.01, 150)), Some(path(0.2, 0.0, 0)), Split),
            // hysteresis around the thresholds
            (Wamp, Some(path(1.8, 0.0, 1000)), None, Wamp),
            (Tcp, Some(path(2.2, 0.0, 1000)), None, Tcp),
            (Tcp, Some(path(2.6, 0.0, 1000)), None, Wamp),
            (Split, Some(path(0.2, 0.0019, 1000)), Some(path(0.2, 0.0019, 1000)), Split),
            (Wamp, Some(path(1.0, 0.0, 1000)), None, Tcp),
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
