//! The receiver's record of packet numbers: which arrived (the paper's ACK
//! bitmap), which are duplicates or replays (dropped), and when an ACK is
//! due. Packets below the sender's floor are forgotten: the sender resolved
//! them (acknowledged or resent their data elsewhere).

use crate::packet::{emit_ack, MAX_ACK_BITS};
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// Packets further ahead of the first missing one than this are refused
/// (an honest sender never has that many unresolved; see conn.rs).
pub const MAX_AHEAD: u64 = 1 << 16;

#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    /// Seen before, or below the floor: a network duplicate or a replay.
    Duplicate,
    /// Too far ahead of what we have.
    TooFar,
}

pub struct RecvPns {
    /// Every packet below `cum` arrived or lies below the sender's floor.
    cum: u64,
    /// `bits[i]` says whether packet cum + i arrived; bits[0] is false.
    bits: VecDeque<bool>,
    /// Ack-eliciting packets since the last ACK we sent.
    unacked: u32,
    /// Something arrived that the sender must hear about at once (a gap,
    /// or enough packets).
    ack_now: bool,
    /// When the oldest unacknowledged ack-eliciting packet arrived.
    oldest_unacked: Option<Instant>,
    /// There is news an ACK would carry (including non-eliciting packets).
    dirty: bool,
    pub ack_every: u32,
    pub ack_delay: Duration,
}

impl RecvPns {
    pub fn new(ack_every: u32, ack_delay: Duration) -> RecvPns {
        RecvPns {
            cum: 0,
            bits: VecDeque::new(),
            unacked: 0,
            ack_now: false,
            oldest_unacked: None,
            dirty: false,
            ack_every: ack_every.max(1),
            ack_delay,
        }
    }

    fn largest(&self) -> Option<u64> {
        self.bits.iter().rposition(|&b| b).map(|i| self.cum + i as u64).or(self.cum.checked_sub(1))
    }

    /// Checks a packet number without recording it.
    pub fn check(&self, pn: u64) -> Result<(), Refused> {
        if pn < self.cum {
            return Err(Refused::Duplicate);
        }
        let i = pn - self.cum;
        if i >= MAX_AHEAD {
            return Err(Refused::TooFar);
        }
        if self.bits.get(i as usize).copied().unwrap_or(false) {
            return Err(Refused::Duplicate);
        }
        Ok(())
    }

    /// Records an accepted packet (after `check`).
    pub fn record(&mut self, now: Instant, pn: u64, eliciting: bool) {
        let gap_before = self.largest().is_some_and(|l| pn != l + 1) || (self.largest().is_none() && pn != self.cum);
        let i = (pn - self.cum) as usize;
        if self.bits.len() <= i {
            self.bits.resize(i + 1, false);
        }
        self.bits[i] = true;
        self.advance();
        self.dirty = true;
        if eliciting {
            self.unacked += 1;
            self.oldest_unacked.get_or_insert(now);
            if self.unacked >= self.ack_every || gap_before {
                self.ack_now = true;
            }
        }
    }

    /// A packet of the paper's ACK cycle completed a fraction of a frame.
    pub fn request_ack(&mut self) {
        if self.unacked > 0 {
            self.ack_now = true;
        }
    }

    fn advance(&mut self) {
        while self.bits.front() == Some(&true) {
            self.bits.pop_front();
            self.cum += 1;
        }
    }

    /// The sender resolved every packet below `floor`.
    pub fn set_floor(&mut self, floor: u64) {
        if floor <= self.cum {
            return;
        }
        let drop = ((floor - self.cum) as usize).min(self.bits.len());
        self.bits.drain(..drop);
        self.cum = floor;
        self.advance();
    }

    /// When an ACK must go out even with nothing else to send.
    pub fn deadline(&self) -> Option<Instant> {
        // ack_now is only set with an unacknowledged packet, whose arrival
        // time lies in the past: due at once.
        self.oldest_unacked.map(|t| if self.ack_now { t } else { t + self.ack_delay })
    }

    /// An ACK is due at `now`.
    pub fn due(&self, now: Instant) -> bool {
        self.ack_now || self.oldest_unacked.is_some_and(|t| now >= t + self.ack_delay)
    }

    /// Something arrived since the last ACK.
    pub fn has_news(&self) -> bool {
        self.dirty
    }

    /// Appends an ACK chunk; `max_data` is our current credit for the peer.
    pub fn write_ack(&mut self, out: &mut Vec<u8>, now: Instant, max_data: u64) {
        let delay_us = self.oldest_unacked.map_or(0, |t| now.saturating_duration_since(t).as_micros().min(u32::MAX as u128) as u32);
        let end = self.bits.iter().rposition(|&b| b).map_or(0, |i| i + 1);
        let start = end.saturating_sub(MAX_ACK_BITS).max(1.min(end));
        let nbits = end - start;
        let mut bitmap = vec![0u8; nbits.div_ceil(8)];
        for (j, _) in self.bits.range(start..end).enumerate().filter(|(_, &b)| b) {
            bitmap[j / 8] |= 1 << (j % 8);
        }
        emit_ack(out, self.cum, self.cum + start as u64, delay_us, max_data, nbits as u16, &bitmap);
        self.unacked = 0;
        self.ack_now = false;
        self.oldest_unacked = None;
        self.dirty = false;
    }

    /// Bytes `write_ack` would append now.
    pub fn ack_len(&self) -> usize {
        let end = self.bits.iter().rposition(|&b| b).map_or(0, |i| i + 1);
        crate::packet::ACK_FIXED_LEN + end.min(MAX_ACK_BITS).div_ceil(8)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{parse_payload, Chunk};

    fn ack_of(r: &mut RecvPns) -> (u64, Vec<u64>) {
        let mut out = 0u64.to_be_bytes().to_vec();
        r.write_ack(&mut out, Instant::now(), 0);
        let Some(Ok(Chunk::Ack(a))) = parse_payload(&out).unwrap().1.next() else { panic!() };
        let set = (a.cum..a.cum + 100).filter(|&p| a.covers(p)).collect();
        (a.cum, set)
    }

    #[test]
    fn in_order_packets_advance_cum_only() {
        let mut r = RecvPns::new(2, Duration::from_millis(1));
        let now = Instant::now();
        for pn in 0..5 {
            r.check(pn).unwrap();
            r.record(now, pn, true);
        }
        assert_eq!(ack_of(&mut r), (5, vec![]));
        assert_eq!(r.check(3), Err(Refused::Duplicate));
    }

    #[test]
    fn a_gap_asks_for_an_ack_at_once_and_shows_in_the_bitmap() {
        let mut r = RecvPns::new(10, Duration::from_secs(1));
        let now = Instant::now();
        r.record(now, 0, true);
        assert!(!r.due(now));
        r.record(now, 2, true);
        r.record(now, 4, true);
        assert!(r.due(now));
        assert_eq!(ack_of(&mut r), (1, vec![2, 4]));
        assert_eq!(r.check(4), Err(Refused::Duplicate));
        assert!(r.check(1).is_ok());
    }

    #[test]
    fn floor_forgets_resolved_holes() {
        let mut r = RecvPns::new(1, Duration::ZERO);
        let now = Instant::now();
        r.record(now, 0, true);
        r.record(now, 2, true);
        r.set_floor(2);
        assert_eq!(ack_of(&mut r).0, 3);
        assert_eq!(r.check(1), Err(Refused::Duplicate));
    }

    #[test]
    fn far_ahead_is_refused() {
        let r = RecvPns::new(1, Duration::ZERO);
        assert_eq!(r.check(MAX_AHEAD), Err(Refused::TooFar));
    }

    #[test]
    fn delayed_ack_waits_for_its_timer() {
        let mut r = RecvPns::new(2, Duration::from_millis(5));
        let t0 = Instant::now();
        r.record(t0, 0, true);
        assert!(!r.due(t0));
        assert!(r.due(t0 + Duration::from_millis(5)));
        r.record(t0, 1, true);
        assert!(r.due(t0));
    }
}
