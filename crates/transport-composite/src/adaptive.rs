//! The adaptive choice between tcp and wamp, as the WAMP paper proposes: per
//! peer, from what the path measures. The rule comes from the ping-pong
//! grids in docs/benchmarks.md "Ping-pong across the emulator" (the
//! earlier grids: its sections 11, 13 and 25 at commit 52d70dc):
//!
//! - across the emulator wamp won every cell with a round trip of 40 ms or
//!   more, lossy or not (no slow start per message, losses repaired without
//!   a round trip): a far peer goes over wamp;
//! - on a sub-millisecond path without loss tcp is faster (its kernel path
//!   moves bulk data faster than wamp's one datagram per system call): a
//!   near clean peer goes over tcp;
//! - on a sub-millisecond path *with* loss tcp pays a probe or a
//!   retransmission timeout for every tail loss, and means over 200 round
//!   trips were 4-10x wamp's (section 25): a near peer starts on trial, its
//!   frames over tcp and a copy of each over wamp (the receiver takes
//!   whichever comes first), until wamp's own loss figure, over enough
//!   packets, says the path is clean (then tcp alone) or tcp retransmits
//!   (then wamp alone, until wamp finds the path clean again). The trial is
//!   what makes the choice cheap: neither a tcp tail loss nor wamp's slower
//!   start is paid while the path is being measured, only the copies.
//!
//! Loss figures are counted over the recent past, not since the connection
//! began: tcp's counters (cumulative in TCP_INFO) are read against a
//! baseline taken whenever the peer comes back to tcp, so an old loss does
//! not send it away again at once.

use crate::route::{Pick, Route};
use std::collections::HashMap;
use std::time::Duration;
use wanmpi_transport::{PathStats, PeerId};

/// Round trip from which a peer counts as far.
pub use wanmpi_transport::FAR_RTT as FAR;
/// Packets a loss figure must rest on before it is shown.
const MIN_SAMPLE: u64 = 100;
/// Hysteresis: leaving the current choice needs the round trip this far
/// past the threshold.
const MARGIN: f64 = 1.25;
/// A near peer whose tcp retransmits at least this share of its segments
/// goes over wamp.
pub const LOSSY: f64 = 0.003;
/// A near peer on wamp goes to tcp once wamp has sent `CLEAN_PROOF` packets
/// and loses less than this share of them.
pub const CLEAN: f64 = 0.001;
/// Packets that must have crossed the path to call it clean: at 1 % loss,
/// 100 packets show no loss a third of the time, 300 one time in twenty,
/// 500 one in 150 (and then tcp's first retransmission sends the peer
/// back). On trial both parts carry every frame, so their packets count
/// together: 500 packets are 12 round trips of 30 KiB, 1 of 300 KiB.
pub const CLEAN_PROOF: u64 = 500;

/// Which side of `FAR` a peer is on: the near part (tcp) or the far one
/// (wamp, or whatever carries WAN traffic); for the adaptive rule also a
/// near peer on trial (tcp, with a copy of every frame over wamp).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    Near,
    Far,
    Trial,
}

fn rtt_of(near: Option<&PathStats>, far: Option<&PathStats>) -> Option<Duration> {
    // Each transport's smallest round trip; wamp's handshake gives one from
    // the start, tcp's from its first segments.
    [near, far].into_iter().flatten().map(|p| p.min_rtt).filter(|d| !d.is_zero()).min()
}

fn loss_of(near: Option<&PathStats>, far: Option<&PathStats>) -> Option<f64> {
    [near, far].into_iter().flatten().filter(|p| p.sent >= MIN_SAMPLE).map(|p| p.loss).reduce(f64::max)
}

/// One part's loss share, when it rests on enough packets.
fn measured_loss(p: Option<&PathStats>) -> Option<f64> {
    p.filter(|p| p.sent >= MIN_SAMPLE).map(|p| p.loss)
}

/// Did these parts' packets together, `CLEAN_PROOF` or more, lose less
/// than `CLEAN` of them? (tcp's share is its retransmitted data segments.)
fn clean(parts: &[Option<&PathStats>]) -> bool {
    let (sent, lost) = parts.iter().flatten().fold((0u64, 0.0), |(s, l), p| (s + p.sent, l + p.loss * p.sent as f64));
    sent >= CLEAN_PROOF && lost < CLEAN * sent as f64
}

/// Near or far by round trip alone (None: nothing measured yet), with the
/// hysteresis around `FAR`.
pub fn by_distance(current: Choice, near: Option<&PathStats>, far: Option<&PathStats>) -> Option<(Choice, String)> {
    let threshold = if current == Choice::Far { FAR.div_f64(MARGIN) } else { FAR.mul_f64(MARGIN) };
    let loss = loss_of(near, far).map_or(String::new(), |l| format!(", {:.2} % lost", l * 100.0));
    let r = rtt_of(near, far)?;
    Some(if r >= threshold {
        (Choice::Far, format!("far (round trip {:.1} ms{loss})", r.as_secs_f64() * 1e3))
    } else {
        (Choice::Near, format!("near (round trip {:.2} ms{loss})", r.as_secs_f64() * 1e3))
    })
}

/// The adaptive rule, as a pure function of what the near and far parts
/// measured (the near part's loss over the packets since it last carried
/// the peer's frames) and the current choice.
pub fn decide(current: Choice, near: Option<&PathStats>, far: Option<&PathStats>) -> (Choice, String) {
    match by_distance(current, near, far) {
        Some((Choice::Far, why)) => (Choice::Far, why),
        Some((_, why)) => {
            // Near: tcp only on a path wamp found clean, and only until tcp
            // retransmits. The gap between LOSSY and CLEAN (and wamp's slowly
            // decaying loss figure) keeps it from flapping.
            let tcp_lossy = measured_loss(near).is_some_and(|l| l >= LOSSY);
            // On wamp for loss, tcp carries nothing: wamp's own figure.
            let wamp_clean = clean(&[far]);
            match current {
                Choice::Near | Choice::Trial if tcp_lossy => (Choice::Far, format!("{why}, tcp retransmits")),
                Choice::Near => (Choice::Near, format!("{why}, clean")),
                Choice::Trial if clean(&[near, far]) => (Choice::Near, format!("{why}, found clean")),
                Choice::Trial => (Choice::Trial, format!("{why}, on trial")),
                Choice::Far if wamp_clean => (Choice::Near, format!("{why}, clean again")),
                Choice::Far => (Choice::Far, format!("{why}, lossy")),
            }
        }
        None => (Choice::Trial, "no round trip measured yet".into()),
    }
}

/// `decide` for a composite whose part `tcp` is tcp and part `wamp` is wamp.
pub struct AdaptiveRoute {
    pub tcp: usize,
    pub wamp: usize,
    /// Per peer, tcp's cumulative (segments, retransmissions) when the peer
    /// last came to tcp: its loss is counted from there.
    tcp_base: HashMap<PeerId, (u64, f64)>,
    /// The choice for each peer decided on before (a new peer starts on
    /// trial).
    state: HashMap<PeerId, Choice>,
}

impl AdaptiveRoute {
    pub fn new(tcp: usize, wamp: usize) -> AdaptiveRoute {
        AdaptiveRoute { tcp, wamp, tcp_base: HashMap::new(), state: HashMap::new() }
    }
}

/// `p` counted from `base` (segments, retransmissions) on.
fn since(p: &PathStats, base: (u64, f64)) -> PathStats {
    let sent = p.sent.saturating_sub(base.0);
    let lost = (p.loss * p.sent as f64 - base.1).max(0.0);
    PathStats { sent, loss: if sent == 0 { 0.0 } else { lost / sent as f64 }, ..*p }
}

impl Route for AdaptiveRoute {
    fn choose(&mut self, peer: PeerId, _current: &Pick, paths: &[Option<PathStats>]) -> Pick {
        let cur = self.state.get(&peer).copied().unwrap_or(Choice::Trial);
        let tcp_now = paths[self.tcp].as_ref();
        let base = self.tcp_base.get(&peer).copied().unwrap_or((0, 0.0));
        let tcp_recent = tcp_now.map(|p| since(p, base));
        let (c, why) = decide(cur, tcp_recent.as_ref(), paths[self.wamp].as_ref());
        if cur == Choice::Far && c != Choice::Far {
            // Back on tcp: its loss counts from here.
            if let Some(p) = tcp_now {
                self.tcp_base.insert(peer, (p.sent, p.loss * p.sent as f64));
            }
        }
        self.state.insert(peer, c);
        match c {
            Choice::Far => Pick::all(self.wamp, why),
            Choice::Near => Pick::all(self.tcp, why),
            Choice::Trial => Pick::with_copy(self.tcp, self.wamp, why),
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
            // near, on tcp: stays while tcp does not retransmit
            (Near, Some(path(0.1, 0.0, 1000)), Some(path(0.1, 0.0, 10)), Near),
            (Near, Some(path(0.2, 0.002, 1000)), None, Near),
            // ... not on a figure of a few packets
            (Near, Some(path(0.2, 0.05, 20)), None, Near),
            // ... and goes to wamp when it does
            (Near, Some(path(0.2, 0.02, 1000)), Some(path(0.2, 0.02, 1000)), Far),
            (Near, Some(path(0.2, 0.004, 1000)), None, Far),
            // near, on trial: to tcp once wamp found the path clean over
            // enough packets, to wamp as soon as tcp retransmits
            // (both parts' packets count together)
            (Trial, Some(path(0.1, 0.0, 250)), Some(path(0.1, 0.0, 249)), Trial),
            (Trial, Some(path(0.1, 0.0, 250)), Some(path(0.1, 0.0, 250)), Near),
            (Trial, None, Some(path(0.1, 0.0, 500)), Near),
            (Trial, Some(path(0.1, 0.002, 500)), Some(path(0.1, 0.0, 500)), Trial),
            (Trial, Some(path(0.1, 0.01, 1000)), Some(path(0.1, 0.0, 200)), Far),
            (Trial, Some(path(0.1, 0.0, 1000)), Some(path(0.1, 0.01, 5000)), Trial),
            // near, on wamp for loss: to tcp once wamp finds the path clean
            (Far, Some(path(0.1, 0.0, 1000)), Some(path(0.1, 0.0, 1000)), Near),
            (Far, None, Some(path(0.1, 0.0005, 5000)), Near),
            (Far, Some(path(0.1, 0.0, 1000)), Some(path(0.1, 0.0, 499)), Far),
            (Far, Some(path(0.2, 0.0, 1000)), Some(path(0.2, 0.005, 5000)), Far),
            (Far, Some(path(0.2, 0.0, 1000)), None, Far),
            // far: wamp, whatever the loss
            (Near, Some(path(40.0, 0.0, 1000)), Some(path(40.0, 0.0, 0)), Far),
            (Near, None, Some(path(20.0, 0.0, 0)), Far),
            (Near, Some(path(160.0, 0.02, 1000)), None, Far),
            (Trial, Some(path(40.0, 0.0, 1000)), None, Far),
            // the smaller of the two round trips counts
            (Near, Some(path(0.3, 0.0, 1000)), Some(path(40.0, 0.0, 0)), Near),
            (Far, Some(path(0.3, 0.0, 1000)), Some(path(40.0, 0.0, 2000)), Near),
            // hysteresis around the threshold
            (Far, Some(path(1.8, 0.0, 1000)), Some(path(1.8, 0.0, 5000)), Far),
            (Near, Some(path(2.2, 0.0, 1000)), None, Near),
            (Near, Some(path(2.6, 0.0, 1000)), None, Far),
            (Far, Some(path(1.5, 0.0, 1000)), Some(path(1.5, 0.0, 5000)), Near),
            // nothing known: on trial
            (Near, None, None, Trial),
        ];
        for (i, (cur, t, w, want)) in rows.iter().enumerate() {
            let (got, why) = decide(*cur, t.as_ref(), w.as_ref());
            assert_eq!(got, *want, "row {i}: {why}");
        }
    }

    /// The route counts tcp's loss from when the peer last came back to
    /// tcp: the retransmissions that sent it to wamp do not send it there
    /// again once wamp found the path clean.
    #[test]
    fn old_tcp_losses_do_not_count_after_coming_back() {
        let mut r = AdaptiveRoute::new(0, 1);
        let tcp = |loss, sent| Some(path(0.2, loss, sent));
        let wamp = |loss, sent| Some(path(0.2, loss, sent));
        // a near peer starts on trial: tcp, with copies over wamp
        let p = r.choose(3, &Pick::all(0, ""), &[tcp(0.0, 0), wamp(0.0, 10)]);
        assert_eq!((p.small, p.copy), (0, Some(1)), "{}", p.why);
        // wamp found the path clean: tcp alone
        let p = r.choose(3, &p, &[tcp(0.0, 10), wamp(0.0, 500)]);
        assert_eq!((p.small, p.copy), (0, None), "{}", p.why);
        // tcp retransmits 2 %: wamp
        let p = r.choose(3, &p, &[tcp(0.02, 1010), wamp(0.0, 1000)]);
        assert_eq!((p.small, p.copy), (1, None), "{}", p.why);
        assert!(p.why.contains("retransmits"), "{}", p.why);
        // wamp clean again: back to tcp, whose cumulative figure still shows 2 %
        let p = r.choose(3, &p, &[tcp(0.02, 1010), wamp(0.0005, 5000)]);
        assert_eq!(p.small, 0, "{}", p.why);
        // 500 more segments without a retransmission: stays on tcp
        let p = r.choose(3, &p, &[tcp(20.2 / 1510.0, 1510), wamp(0.0005, 5000)]);
        assert_eq!(p.small, 0, "{}", p.why);
        // 500 more with 5 retransmissions (1 %): wamp again
        let p = r.choose(3, &p, &[tcp(25.2 / 2010.0, 2010), wamp(0.0005, 5000)]);
        assert_eq!(p.small, 1, "{}", p.why);
        // another peer has its own history: on trial
        let q = r.choose(4, &Pick::all(1, ""), &[tcp(0.0, 100), wamp(0.0, 10)]);
        assert_eq!((q.small, q.copy), (0, Some(1)), "{}", q.why);
    }
}
