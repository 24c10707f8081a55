//! Path failover of our own (docs/sctp.md, "Multihoming"): usrsctp in
//! AF_CONN mode sees one path per association, so when a rank has several
//! addresses the glue chooses which (local socket, remote endpoint) pair
//! carries the association's packets. Path i pairs our address i with the
//! peer's address i; path 0 is the primary.
//!
//! Two parts, no I/O in either: the probe datagram (a checked decode and an
//! encode, tests on raw bytes below) and `Paths`, the per-peer state machine
//! that is fed the time and the acks and says which probes to send and
//! which path is active.

use std::time::{Duration, Instant};

/// Paths per peer at most (the path index travels in one byte, and more
/// than a few addresses per rank buys nothing).
pub const MAX_PATHS: usize = 8;

/// Probe datagram layout. Bytes 0..2 are zero: as an SCTP packet that is
/// source port 0, which RFC 4960 forbids, so a probe can never be taken for
/// SCTP and an SCTP packet never for a probe.
const MARKER: std::ops::Range<usize> = 0..2;
const MAGIC: std::ops::Range<usize> = 2..4;
const KIND: usize = 4;
const PATH: usize = 5;
const RESERVED: std::ops::Range<usize> = 6..8;
const SEQ: std::ops::Range<usize> = 8..16;
const STAMP: std::ops::Range<usize> = 16..24;
pub const PROBE_LEN: usize = 24;
const MAGIC_BYTES: [u8; 2] = *b"WP";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProbeKind {
    Probe = 1,
    Ack = 2,
}

/// One probe or probe-ack. An ack echoes the probe's path, seq and stamp.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Probe {
    pub kind: ProbeKind,
    pub path: u8,
    pub seq: u64,
    /// The prober's clock in microseconds since its own epoch; only the
    /// prober reads it back, so the clocks of two ranks never meet.
    pub stamp_us: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProbeError {
    Length(usize),
    Magic,
    Kind(u8),
    Reserved,
}

/// Whether a datagram belongs to the glue (starts with two zero bytes)
/// rather than to usrsctp. Everything that does must be decoded or dropped,
/// never fed to usrsctp.
pub fn is_glue(datagram: &[u8]) -> bool {
    datagram.len() < 2 || datagram[MARKER] == [0, 0]
}

impl Probe {
    pub fn decode(b: &[u8]) -> Result<Probe, ProbeError> {
        if b.len() != PROBE_LEN || b[MARKER] != [0, 0] {
            return Err(ProbeError::Length(b.len()));
        }
        if b[MAGIC] != MAGIC_BYTES {
            return Err(ProbeError::Magic);
        }
        let kind = match b[KIND] {
            1 => ProbeKind::Probe,
            2 => ProbeKind::Ack,
            k => return Err(ProbeError::Kind(k)),
        };
        if b[RESERVED] != [0, 0] {
            return Err(ProbeError::Reserved);
        }
        let u64_at = |r: std::ops::Range<usize>| u64::from_be_bytes(b[r].try_into().unwrap_or([0; 8]));
        Ok(Probe { kind, path: b[PATH], seq: u64_at(SEQ), stamp_us: u64_at(STAMP) })
    }

    pub fn encode(&self) -> [u8; PROBE_LEN] {
        let mut b = [0u8; PROBE_LEN];
        b[MAGIC].copy_from_slice(&MAGIC_BYTES);
        b[KIND] = self.kind as u8;
        b[PATH] = self.path;
        b[SEQ].copy_from_slice(&self.seq.to_be_bytes());
        b[STAMP].copy_from_slice(&self.stamp_us.to_be_bytes());
        b
    }

    /// The answer to a probe, for the path it arrived on.
    pub fn ack(&self) -> Probe {
        Probe { kind: ProbeKind::Ack, ..*self }
    }
}

/// Timing of the path state machine (options probe_interval, path_fail).
#[derive(Debug, Clone, Copy)]
pub struct PathTiming {
    pub interval: Duration,
    /// Fixed failure timeout; None = max(3 x interval, 3 x srtt, FAIL_FLOOR).
    pub fail: Option<Duration>,
    /// Go back to path 0 once it has been up for one failure timeout.
    pub return_to_primary: bool,
    /// While the active path is suspected (a probe overdue), send a copy
    /// of every packet on a healthy backup path too.
    pub copy_when_suspected: bool,
}

/// The automatic failure timeout never goes below this: a loaded machine
/// can delay a pump by tens of milliseconds.
pub const FAIL_FLOOR: Duration = Duration::from_millis(200);

/// A probe unanswered for 2 x srtt, and at least this long, makes its path
/// suspected: two ticks, so one late pump does not.
pub const SUSPECT_FLOOR: Duration = Duration::from_millis(20);

#[derive(Debug, Clone, Default)]
pub struct PathState {
    pub up: bool,
    /// Since when the path is up (for the return to the primary).
    pub up_since: Option<Instant>,
    /// Send time of the oldest probe not followed by any ack: the path is
    /// down when it is older than the failure timeout.
    pub unacked_since: Option<Instant>,
    pub next_probe: Option<Instant>,
    pub next_seq: u64,
    pub srtt: Option<Duration>,
    pub last_rtt: Option<Duration>,
    pub last_ack: Option<Instant>,
    pub probes_out: u64,
    pub acks_in: u64,
    pub probes_in: u64,
    pub went_down: u64,
}

/// The paths to one peer and which one carries the association.
#[derive(Debug, Clone)]
pub struct Paths {
    pub paths: Vec<PathState>,
    pub active: usize,
    pub switches: u64,
    pub last_switch: Option<Instant>,
    /// Probe datagrams from this peer we dropped (malformed, wrong path).
    pub bad_probes: u64,
    timing: PathTiming,
    epoch: Instant,
}

impl Paths {
    /// `n` paths, all presumed up (setup just worked on path 0, and a path
    /// that never answers goes down after one failure timeout).
    pub fn new(n: usize, timing: PathTiming, now: Instant) -> Paths {
        let state = PathState { up: true, up_since: Some(now), next_probe: Some(now), ..Default::default() };
        Paths { paths: vec![state; n], active: 0, switches: 0, last_switch: None, bad_probes: 0, timing, epoch: now }
    }

    pub fn len(&self) -> usize {
        self.paths.len()
    }

    pub fn fail_timeout(&self, path: usize) -> Duration {
        if let Some(f) = self.timing.fail {
            return f;
        }
        let srtt = self.paths.get(path).and_then(|p| p.srtt).unwrap_or_default();
        (self.timing.interval * 3).max(srtt * 3).max(FAIL_FLOOR)
    }

    /// How long a probe may go unanswered before its path is suspected.
    pub fn suspect_after(&self, path: usize) -> Duration {
        let srtt = self.paths.get(path).and_then(|p| p.srtt).unwrap_or_default();
        (srtt * 2).max(SUSPECT_FLOOR).min(self.fail_timeout(path))
    }

    /// Up, but a probe is overdue: the path may have just died.
    pub fn suspected(&self, now: Instant, path: usize) -> bool {
        let after = self.suspect_after(path);
        self.paths.get(path).is_some_and(|p| p.up && p.unacked_since.is_some_and(|t| now.saturating_duration_since(t) >= after))
    }

    /// While the active path is suspected: the lowest other path that is up
    /// and not suspected, to carry a copy of every packet until the active
    /// path answers again or is declared down. SCTP's first retransmission
    /// timeout (200 ms) then already reaches the peer, instead of the one
    /// after the switch (backed off to 400 ms or more). Copies cost
    /// bandwidth only while an ack is overdue.
    pub fn backup(&self, now: Instant) -> Option<usize> {
        if !self.timing.copy_when_suspected || !self.suspected(now, self.active) {
            return None;
        }
        (0..self.paths.len()).find(|&i| i != self.active && self.paths[i].up && !self.suspected(now, i))
    }

    /// Probes due at `now`, as (path, probe); call about once per tick.
    pub fn due_probes(&mut self, now: Instant, out: &mut Vec<(usize, Probe)>) {
        let interval = self.timing.interval;
        let stamp_us = now.saturating_duration_since(self.epoch).as_micros() as u64;
        for (i, p) in self.paths.iter_mut().enumerate() {
            if p.next_probe.is_some_and(|t| t > now) {
                continue;
            }
            // Late pumps do not make a burst: the next probe is one interval
            // from now, not from when it was due.
            p.next_probe = Some(now + interval);
            p.unacked_since.get_or_insert(now);
            p.probes_out += 1;
            out.push((i, Probe { kind: ProbeKind::Probe, path: i as u8, seq: p.next_seq, stamp_us }));
            p.next_seq += 1;
        }
    }

    /// An ack arrived on `path`. Returns false if it cannot be ours (path
    /// out of range, a seq we never sent, a stamp from the future).
    pub fn on_ack(&mut self, now: Instant, path: usize, probe: &Probe) -> bool {
        let epoch = self.epoch;
        let Some(p) = self.paths.get_mut(path) else { return false };
        let Some(sent) = epoch.checked_add(Duration::from_micros(probe.stamp_us)) else { return false };
        if probe.seq >= p.next_seq || sent > now {
            return false;
        }
        let rtt = now - sent;
        p.last_rtt = Some(rtt);
        p.srtt = Some(match p.srtt {
            None => rtt,
            Some(s) => (s * 7 + rtt) / 8,
        });
        p.acks_in += 1;
        p.last_ack = Some(now);
        p.unacked_since = None;
        if !p.up {
            p.up = true;
            p.up_since = Some(now);
        }
        true
    }

    /// Marks paths down whose probes went unanswered for the failure
    /// timeout and switches away from a dead active path (to the lowest
    /// live one), or back to the primary. Returns the new active path if it
    /// changed.
    pub fn check(&mut self, now: Instant) -> Option<usize> {
        for i in 0..self.paths.len() {
            let timeout = self.fail_timeout(i);
            let p = &mut self.paths[i];
            if p.up && p.unacked_since.is_some_and(|t| now.saturating_duration_since(t) >= timeout) {
                p.up = false;
                p.up_since = None;
                p.went_down += 1;
            }
        }
        let target = if !self.paths[self.active].up {
            // All down: stay where we are; SCTP's own retransmission limit
            // decides when the peer is lost.
            self.paths.iter().position(|p| p.up)?
        } else if self.timing.return_to_primary && self.active != 0 {
            let hold = self.fail_timeout(0);
            let p0 = &self.paths[0];
            if p0.up && p0.up_since.is_some_and(|t| now.saturating_duration_since(t) >= hold) {
                0
            } else {
                return None;
            }
        } else {
            return None;
        };
        if target == self.active {
            return None;
        }
        self.active = target;
        self.switches += 1;
        self.last_switch = Some(now);
        Some(target)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn probe_round_trips_and_has_the_documented_layout() {
        let p = Probe { kind: ProbeKind::Probe, path: 1, seq: 0x0102_0304_0506_0708, stamp_us: 42 };
        let b = p.encode();
        assert_eq!(&b[..8], &[0, 0, b'W', b'P', 1, 1, 0, 0]);
        assert_eq!(&b[8..16], &[1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(&b[16..24], &[0, 0, 0, 0, 0, 0, 0, 42]);
        assert_eq!(Probe::decode(&b), Ok(p));
        let a = p.ack();
        assert_eq!(a.kind, ProbeKind::Ack);
        assert_eq!(Probe::decode(&a.encode()), Ok(a));
        assert!(is_glue(&b));
    }

    #[test]
    fn malformed_probes_are_errors_not_panics() {
        let good = Probe { kind: ProbeKind::Ack, path: 0, seq: 1, stamp_us: 2 }.encode();
        assert_eq!(Probe::decode(&[]), Err(ProbeError::Length(0)));
        assert_eq!(Probe::decode(&[0]), Err(ProbeError::Length(1)));
        assert_eq!(Probe::decode(&good[..23]), Err(ProbeError::Length(23)));
        let mut long = good.to_vec();
        long.push(0);
        assert_eq!(Probe::decode(&long), Err(ProbeError::Length(25)));
        let mut b = good;
        b[1] = 7;
        assert!(Probe::decode(&b).is_err());
        let mut b = good;
        b[2] = b'X';
        assert_eq!(Probe::decode(&b), Err(ProbeError::Magic));
        for k in [0u8, 3, 255] {
            let mut b = good;
            b[KIND] = k;
            assert_eq!(Probe::decode(&b), Err(ProbeError::Kind(k)));
        }
        let mut b = good;
        b[7] = 1;
        assert_eq!(Probe::decode(&b), Err(ProbeError::Reserved));
        // Every 24-byte pattern decodes or errs; none panics.
        for x in 0..=255u8 {
            let _ = Probe::decode(&[x; PROBE_LEN]);
        }
    }

    #[test]
    fn sctp_packets_are_not_glue() {
        // Common header: source port 5001, destination port 5002.
        assert!(!is_glue(&[0x13, 0x89, 0x13, 0x8a, 0, 0, 0, 0]));
        assert!(!is_glue(&[0, 1, 0, 0]));
        assert!(is_glue(&[0, 0, 9]));
        assert!(is_glue(&[0]));
    }

    fn timing() -> PathTiming {
        PathTiming { interval: 100 * MS, fail: None, return_to_primary: true, copy_when_suspected: true }
    }

    /// Answers every due probe on the paths in `alive` after `rtt`.
    fn step(ps: &mut Paths, now: Instant, alive: &[usize], rtt: Duration) -> Option<usize> {
        let mut due = vec![];
        ps.due_probes(now, &mut due);
        for (path, probe) in due {
            if alive.contains(&path) {
                assert!(ps.on_ack(now + rtt, path, &probe.ack()));
            }
        }
        ps.check(now + rtt)
    }

    #[test]
    fn failure_timeout_is_three_intervals_three_rtts_or_the_floor() {
        let t0 = Instant::now();
        let mut ps = Paths::new(2, PathTiming { interval: 10 * MS, ..timing() }, t0);
        assert_eq!(ps.fail_timeout(0), FAIL_FLOOR);
        ps.paths[0].srtt = Some(150 * MS);
        assert_eq!(ps.fail_timeout(0), 450 * MS);
        let ps = Paths::new(2, timing(), t0);
        assert_eq!(ps.fail_timeout(1), 300 * MS);
        let ps = Paths::new(2, PathTiming { fail: Some(77 * MS), ..timing() }, t0);
        assert_eq!(ps.fail_timeout(0), 77 * MS);
    }

    #[test]
    fn dead_active_path_switches_once_and_returns_after_a_hold() {
        let t0 = Instant::now();
        let mut ps = Paths::new(2, timing(), t0);
        let rtt = MS;
        let mut now = t0;
        // Both alive for a second: no switch, RTTs measured.
        for _ in 0..10 {
            assert_eq!(step(&mut ps, now, &[0, 1], rtt), None);
            now += 100 * MS;
        }
        assert_eq!(ps.paths[0].srtt, Some(rtt));
        assert_eq!(ps.paths[1].acks_in, 10);
        // Path 0 dies at `cut`: down, and switched, 300 ms after the first
        // unanswered probe, not before.
        let cut = now;
        let mut switched = None;
        while now < cut + 1000 * MS {
            if let Some(to) = step(&mut ps, now, &[1], rtt) {
                assert_eq!(to, 1);
                assert!(switched.is_none(), "switched twice");
                switched = Some(now + rtt);
            }
            now += 10 * MS;
        }
        let took = switched.expect("no switch") - cut;
        assert!(took >= 300 * MS && took <= 420 * MS, "{took:?}");
        assert!(!ps.paths[0].up && ps.paths[1].up);
        assert_eq!((ps.active, ps.switches, ps.last_switch), (1, 1, switched));
        // Path 0 answers again: back only after one failure timeout up.
        let back = now;
        let mut returned = None;
        while now < back + 1000 * MS {
            if let Some(to) = step(&mut ps, now, &[0, 1], rtt) {
                assert_eq!(to, 0);
                returned = Some(now);
            }
            now += 10 * MS;
        }
        let took = returned.expect("no return to the primary") - back;
        assert!(took >= 300 * MS && took <= 420 * MS, "{took:?}");
        assert_eq!(ps.switches, 2);
    }

    #[test]
    fn without_return_to_primary_the_secondary_stays() {
        let t0 = Instant::now();
        let mut ps = Paths::new(2, PathTiming { return_to_primary: false, ..timing() }, t0);
        let mut now = t0;
        for _ in 0..100 {
            step(&mut ps, now, &[1], MS);
            now += 10 * MS;
        }
        assert_eq!(ps.active, 1);
        for _ in 0..200 {
            assert_eq!(step(&mut ps, now, &[0, 1], MS), None);
            now += 10 * MS;
        }
        assert!(ps.paths[0].up);
        assert_eq!((ps.active, ps.switches), (1, 1));
    }

    #[test]
    fn all_paths_dead_means_no_switch_and_lowest_live_path_wins() {
        let t0 = Instant::now();
        let mut ps = Paths::new(3, timing(), t0);
        let mut now = t0;
        for _ in 0..100 {
            assert_eq!(step(&mut ps, now, &[], MS), None);
            now += 10 * MS;
        }
        assert!(ps.paths.iter().all(|p| !p.up));
        assert_eq!((ps.active, ps.switches), (0, 0));
        // Path 2 comes back, then path 1: the active path moves to 2 (the
        // only live one) and stays there (return is only to the primary).
        let mut moves = vec![];
        for i in 0..100 {
            let alive: &[usize] = if i < 50 { &[2] } else { &[1, 2] };
            moves.extend(step(&mut ps, now, alive, MS));
            now += 10 * MS;
        }
        assert_eq!(moves, vec![2]);
    }

    #[test]
    fn pumping_late_does_not_declare_paths_down() {
        // A rank that computed for a second without pumping sent no probes
        // in that time: nothing is unanswered, nothing goes down.
        let t0 = Instant::now();
        let mut ps = Paths::new(2, timing(), t0);
        step(&mut ps, t0, &[0, 1], MS);
        let later = t0 + Duration::from_secs(1);
        assert_eq!(ps.check(later), None);
        assert!(ps.paths.iter().all(|p| p.up));
        let mut due = vec![];
        ps.due_probes(later, &mut due);
        assert_eq!(due.len(), 2, "one probe per path, no burst for the missed intervals");
    }

    #[test]
    fn an_overdue_probe_makes_a_backup_carry_copies_until_the_switch() {
        let t0 = Instant::now();
        let mut ps = Paths::new(2, timing(), t0);
        let mut now = t0;
        for _ in 0..5 {
            step(&mut ps, now, &[0, 1], MS);
            assert_eq!(ps.backup(now + MS), None, "healthy: no copies");
            now += 100 * MS;
        }
        assert_eq!(ps.suspect_after(0), SUSPECT_FLOOR, "2 x 1 ms srtt is below the floor");
        // Path 0 dies: its probe at `now` goes unanswered.
        let cut = now;
        let mut copying = None;
        let mut switched = None;
        while now < cut + 500 * MS {
            if let Some(to) = step(&mut ps, now, &[1], MS) {
                switched = Some((now, to));
            }
            if ps.backup(now + MS) == Some(1) && copying.is_none() {
                copying = Some(now + MS);
            }
            now += 5 * MS;
        }
        let copying = copying.expect("no copies while path 0 was overdue") - cut;
        assert!(copying >= SUSPECT_FLOOR && copying <= SUSPECT_FLOOR + 10 * MS, "{copying:?}");
        let (at, to) = switched.expect("no switch");
        assert_eq!(to, 1);
        assert!(at - cut >= 300 * MS);
        assert_eq!(ps.backup(now), None, "after the switch the active path is healthy again");
        // With the option off, never.
        let mut ps = Paths::new(2, PathTiming { copy_when_suspected: false, ..timing() }, t0);
        step(&mut ps, t0, &[1], MS);
        assert!(ps.suspected(t0 + 50 * MS, 0));
        assert_eq!(ps.backup(t0 + 50 * MS), None);
        // A suspected backup is no backup.
        let mut ps = Paths::new(2, timing(), t0);
        step(&mut ps, t0, &[], MS);
        assert_eq!(ps.backup(t0 + 50 * MS), None);
    }

    #[test]
    fn forged_or_stale_acks_are_refused() {
        let t0 = Instant::now();
        let mut ps = Paths::new(2, timing(), t0);
        let mut due = vec![];
        ps.due_probes(t0, &mut due);
        let (_, p) = due[0];
        assert!(!ps.on_ack(t0 + MS, 5, &p.ack()), "path out of range");
        assert!(!ps.on_ack(t0 + MS, 0, &Probe { seq: 99, ..p.ack() }), "seq never sent");
        assert!(!ps.on_ack(t0 + MS, 0, &Probe { stamp_us: 10_000_000, ..p.ack() }), "stamp from the future");
        assert!(!ps.on_ack(t0 + MS, 0, &Probe { stamp_us: u64::MAX, ..p.ack() }), "stamp past the end of time");
        assert!(ps.on_ack(t0 + MS, 0, &p.ack()));
    }
}
