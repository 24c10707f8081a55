//! Round-trip time estimates (RFC 6298's smoothed RTT and variation, and
//! the minimum seen), from acknowledgements of ack-eliciting packets.

use std::time::Duration;

const PTO_MIN: Duration = Duration::from_millis(5);

#[derive(Debug, Clone)]
pub struct Rtt {
    pub srtt: Duration,
    pub rttvar: Duration,
    pub min: Duration,
    pub latest: Duration,
    sampled: bool,
}

impl Rtt {
    /// Before any sample: `initial` (the setup handshake's round trip).
    pub fn new(initial: Duration) -> Rtt {
        Rtt { srtt: initial, rttvar: initial / 2, min: initial, latest: initial, sampled: false }
    }

    /// One sample; `ack_delay` is the time the receiver held its ACK.
    pub fn sample(&mut self, rtt: Duration, ack_delay: Duration) {
        self.latest = rtt;
        if !self.sampled {
            self.sampled = true;
            self.min = rtt;
            self.srtt = rtt;
            self.rttvar = rtt / 2;
            return;
        }
        self.min = self.min.min(rtt);
        // The receiver's hold counts only as far as it cannot hide the path.
        let adjusted = if rtt >= self.min + ack_delay { rtt - ack_delay } else { rtt };
        let diff = self.srtt.abs_diff(adjusted);
        self.rttvar = (self.rttvar * 3 + diff) / 4;
        self.srtt = (self.srtt * 7 + adjusted) / 8;
    }

    /// Time after which an unacknowledged packet calls for a probe; at
    /// least `PTO_MIN`, since a loaded host delays a short path's ACKs by
    /// scheduling alone and spurious probes back the timer off.
    pub fn pto(&self, max_ack_delay: Duration) -> Duration {
        (self.srtt + (self.rttvar * 4).max(Duration::from_millis(1)) + max_ack_delay).max(PTO_MIN)
    }

    /// How long after a later packet was acknowledged an earlier one is
    /// taken as lost (RACK's reordering window: 9/8 of the round trip).
    pub fn loss_delay(&self) -> Duration {
        (self.srtt.max(self.latest) * 9 / 8).max(Duration::from_millis(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smooths_and_tracks_minimum() {
        let mut r = Rtt::new(Duration::from_millis(100));
        r.sample(Duration::from_millis(40), Duration::ZERO);
        assert_eq!(r.srtt, Duration::from_millis(40));
        r.sample(Duration::from_millis(48), Duration::ZERO);
        assert_eq!(r.srtt, Duration::from_millis(41));
        assert_eq!(r.min, Duration::from_millis(40));
        // An ack delay that would push the sample under the minimum is ignored.
        r.sample(Duration::from_millis(42), Duration::from_millis(10));
        assert!(r.srtt > Duration::from_millis(41));
        assert!(r.loss_delay() >= Duration::from_millis(46));
    }
}
