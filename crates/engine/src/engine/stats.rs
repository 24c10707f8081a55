//! What the engine counted, printable at finalize (`WANMPI_STATS=1`): totals,
//! and per (peer, channel) how many messages found their receive posted
//! (expected) or waited in the unexpected queue. With sctp a channel is a
//! stream, so the table shows which streams carried what.

use std::collections::BTreeMap;
use std::fmt;
use wanmpi_transport::PeerId;

/// Arrivals from one peer on one channel.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Arrivals {
    pub expected: u64,
    pub unexpected: u64,
    /// Message bytes announced by the envelopes (whole messages).
    pub bytes: u64,
}

/// The WAN window this process granted one peer.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct WindowUse {
    pub granted: u64,
    /// The most bytes of that peer's windowed messages held at once.
    pub peak_held: u64,
}

/// Messages and their bytes sent to one peer.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Sent {
    pub msgs: u64,
    pub bytes: u64,
}

/// Counters for what the engine did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct EngineStats {
    pub msgs_sent: u64,
    pub bytes_sent: u64,
    pub msgs_received: u64,
    pub bytes_received: u64,
    /// Arrivals that found their receive already posted.
    pub expected: u64,
    /// Arrivals that had to wait in the unexpected queue.
    pub unexpected: u64,
    pub eager_sends: u64,
    pub credited_sends: u64,
    pub rendezvous_sends: u64,
    /// Long messages sent against a peer's WAN window.
    pub windowed_sends: u64,
    pub credits_announced: u64,
    /// Long messages offered for a read by the receiver (one copy).
    pub single_copy_sends: u64,
    /// Offered messages this process read out of the sender.
    pub single_copy_reads: u64,
    /// Reads refused or failed, asked for by clear-to-send instead.
    pub single_copy_refused: u64,
    /// Frames from peers that broke the protocol (dropped).
    pub bad_frames: u64,
    /// The arrivals split by (source peer, channel).
    pub arrivals: BTreeMap<(PeerId, u16), Arrivals>,
    /// WAN windows granted, by peer.
    pub windows: BTreeMap<PeerId, WindowUse>,
    /// `MPI_ANY_TAG` receives matched to a missing message before it
    /// arrived, so that a later receive could take a message beyond the gap
    /// (`matching.rs`).
    pub bound_ahead: u64,
    /// Messages sent, by destination peer (indexed by peer id).
    pub sent_to: Vec<Sent>,
}

impl EngineStats {
    /// Where an express receive will count the message it takes, looked
    /// up before it polls (`Engine::express_rx`): one (peer, channel)'s
    /// arrivals when the channel is known (the receive names its tag),
    /// else the table, looked up on arrival.
    pub(crate) fn tally(&mut self, peer: PeerId, channel: Option<u16>) -> Tally<'_> {
        let EngineStats { msgs_received, bytes_received, expected, arrivals, .. } = self;
        let table = match channel {
            Some(c) => Table::Slot(arrivals.entry((peer, c)).or_default()),
            None => Table::Later(arrivals),
        };
        Tally { peer, msgs_received, bytes_received, expected, table }
    }

    /// Counts a message of `len` bytes planned for `dest`.
    #[inline]
    pub(crate) fn count_sent(&mut self, dest: PeerId, len: usize) {
        if let Some(s) = self.sent_to.get_mut(dest as usize) {
            s.msgs += 1;
            s.bytes += len as u64;
        }
    }

    /// Messages and their (announced) bytes received from `peer`, over
    /// every channel.
    pub fn received_from(&self, peer: PeerId) -> (u64, u64) {
        self.arrivals.range((peer, 0)..=(peer, u16::MAX)).fold((0, 0), |(m, b), (_, a)| (m + a.expected + a.unexpected, b.saturating_add(a.bytes)))
    }

    pub(crate) fn count_arrival(&mut self, peer: PeerId, channel: u16, bytes: u64, expected: bool) {
        let a = self.arrivals.entry((peer, channel)).or_default();
        // `bytes` is what the sender's envelope claims: a hostile peer can
        // claim u64::MAX (found by fuzz/engine_frames with overflow checks).
        a.bytes = a.bytes.saturating_add(bytes);
        if expected {
            self.expected += 1;
            a.expected += 1;
        } else {
            self.unexpected += 1;
            a.unexpected += 1;
        }
    }
}

/// Counters of an express receive's one message (`EngineStats::tally`).
pub(crate) struct Tally<'a> {
    peer: PeerId,
    msgs_received: &'a mut u64,
    bytes_received: &'a mut u64,
    expected: &'a mut u64,
    table: Table<'a>,
}

enum Table<'a> {
    Slot(&'a mut Arrivals),
    Later(&'a mut BTreeMap<(PeerId, u16), Arrivals>),
}

impl Tally<'_> {
    /// Counts a message taken by a posted receive: `payload` bytes came,
    /// the envelope announced `total_len`, on `channel` (asked only when
    /// not known in advance).
    #[inline]
    pub(crate) fn expected(&mut self, payload: usize, total_len: u64, channel: impl FnOnce() -> u16) {
        *self.msgs_received += 1;
        *self.bytes_received += payload as u64;
        *self.expected += 1;
        let a = match &mut self.table {
            Table::Slot(a) => &mut **a,
            Table::Later(t) => t.entry((self.peer, channel())).or_default(),
        };
        a.bytes = a.bytes.saturating_add(total_len);
        a.expected += 1;
    }
}

impl fmt::Display for EngineStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "sent {} messages ({} B: {} eager, {} credited, {} windowed, {} rendezvous), received {} ({} B: {} expected, {} unexpected), {} credits announced, {} bad frames",
            self.msgs_sent,
            self.bytes_sent,
            self.eager_sends,
            self.credited_sends,
            self.windowed_sends,
            self.rendezvous_sends,
            self.msgs_received,
            self.bytes_received,
            self.expected,
            self.unexpected,
            self.credits_announced,
            self.bad_frames
        )?;
        // An express receive that took nothing leaves an empty row (`tally`).
        for ((peer, channel), a) in self.arrivals.iter().filter(|(_, a)| a.expected + a.unexpected > 0) {
            writeln!(f, "  from rank {peer} channel {channel}: {} expected, {} unexpected, {} B", a.expected, a.unexpected, a.bytes)?;
        }
        if self.single_copy_sends + self.single_copy_reads + self.single_copy_refused > 0 {
            writeln!(
                f,
                "  single copy: {} sent, {} read, {} refused or failed",
                self.single_copy_sends, self.single_copy_reads, self.single_copy_refused
            )?;
        }
        if self.bound_ahead > 0 {
            writeln!(f, "  {} wildcard receives bound to a missing message ahead of its arrival", self.bound_ahead)?;
        }
        for (peer, w) in &self.windows {
            writeln!(f, "  WAN window to rank {peer}: {} B granted, at most {} B held", w.granted, w.peak_held)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrivals_add_up_per_peer_and_channel() {
        let mut s = EngineStats::default();
        s.count_arrival(1, 3, 100, true);
        s.count_arrival(1, 3, 50, false);
        s.count_arrival(2, 0, 7, false);
        assert_eq!((s.expected, s.unexpected), (1, 2));
        assert_eq!(s.arrivals[&(1, 3)], Arrivals { expected: 1, unexpected: 1, bytes: 150 });
        let text = s.to_string();
        assert!(text.contains("from rank 1 channel 3: 1 expected, 1 unexpected, 150 B"), "{text}");
        assert!(text.contains("from rank 2 channel 0: 0 expected, 1 unexpected, 7 B"), "{text}");
        s.windows.insert(4, WindowUse { granted: 1 << 20, peak_held: 300 });
        assert!(s.to_string().contains("WAN window to rank 4: 1048576 B granted, at most 300 B held"));
    }

    #[test]
    fn claimed_lengths_past_u64_saturate() {
        // Envelopes are the sender's word: a hostile one claims u64::MAX.
        let mut s = EngineStats::default();
        s.count_arrival(1, 0, u64::MAX, true);
        s.count_arrival(1, 0, 5, false);
        assert_eq!(s.arrivals[&(1, 0)].bytes, u64::MAX);
    }
}
