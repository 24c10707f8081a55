//! Settings of the shm transport, with defaults and environment overrides.

use std::time::Duration;
use wanmpi_transport::TransportError;

/// Ring size in bytes per direction per pair of ranks (a power of two; `k`,
/// `m` suffixes allowed). Unset: chosen from the number of ranks on the host.
pub const ENV_RING: &str = "WANMPI_SHM_RING";
/// Empty `poll_recv`s in a row before it arms the doorbell (default 0).
pub const ENV_ARM_AFTER: &str = "WANMPI_SHM_ARM_AFTER";

/// Largest ring chosen by default: 4 MiB per direction per pair, for hosts
/// of up to 9 ranks. It holds four frames of the largest size, so a sender
/// rarely waits on a reader that is only slightly behind.
pub const DEFAULT_RING: usize = 4 << 20;
/// What the rings into one rank may add up to when every one of them is
/// full, by default: the ring per pair is this divided among the senders
/// (rounded down to a power of two, 64 KiB to `DEFAULT_RING`). Memory is
/// taken only where a ring is written (the memory is not reserved up
/// front), so a job of short messages uses a few pages per pair that
/// talks; this bounds what a job streaming between every pair at once can
/// take: the ranks times 32 MiB (4 GiB at 128 ranks on a host).
pub const DEFAULT_RING_BUDGET: usize = 32 << 20;
/// Largest frame: 1 MiB (the engine fragments long messages to this size),
/// and never more than a quarter of the ring.
pub const DEFAULT_MAX_FRAME: usize = 1 << 20;
const MIN_RING: usize = 64 << 10;
const MAX_RING: usize = 1 << 30;

#[derive(Debug, Clone, PartialEq)]
pub struct ShmOptions {
    /// Data bytes of one ring (one direction of one pair). Every rank of a
    /// host must use the same value; setup fails otherwise. None: chosen
    /// from the number of ranks on the host (`ring_for`).
    pub ring_bytes: Option<usize>,
    /// Ordered channels offered per peer (all share one ring per pair).
    pub channels: u16,
    /// Frames delivered per peer per `poll_recv`, so one chatty peer cannot
    /// starve the others or the caller's sends.
    pub batch: usize,
    /// How often `poll_recv` asks whether peer processes still live (a
    /// syscall per peer), besides the pidfds that wake `wait` at once.
    pub liveness_interval: Duration,
    /// Empty `poll_recv` calls in a row after which it arms the doorbell
    /// (0: after every empty call). An armed reader costs each incoming
    /// message a doorbell ring, two syscalls (about 1 us); a reader that
    /// polls without arming is not woken by the readiness fd. 0 is right for
    /// a caller that may sleep on the fd after one empty poll without
    /// saying so; `ARM_ONLY_BEFORE_SLEEP` for one that calls
    /// `Transport::prepare_sleep` before every sleep on the fd (the
    /// runtime), which spares a busy ping-pong every syscall. `wait` and
    /// `prepare_sleep` always arm.
    pub arm_after: u32,
}

impl ShmOptions {
    /// `arm_after` for a caller that calls `prepare_sleep` before sleeping:
    /// `poll_recv` never arms.
    pub const ARM_ONLY_BEFORE_SLEEP: u32 = u32::MAX;
}

impl Default for ShmOptions {
    fn default() -> Self {
        ShmOptions { ring_bytes: None, channels: 64, batch: 64, liveness_interval: Duration::from_millis(100), arm_after: 0 }
    }
}

fn bad(var: &str, v: &str, why: &str) -> TransportError {
    TransportError::Setup(format!("{var}={v:?}: {why}"))
}

/// Parses a byte count with an optional k/m/g suffix (binary units).
fn parse_bytes(v: &str) -> Option<usize> {
    let v = v.trim();
    let (digits, shift) = match v.char_indices().last()? {
        (i, 'k' | 'K') => (&v[..i], 10),
        (i, 'm' | 'M') => (&v[..i], 20),
        (i, 'g' | 'G') => (&v[..i], 30),
        _ => (v, 0),
    };
    digits.trim().parse::<usize>().ok()?.checked_mul(1usize << shift)
}

impl ShmOptions {
    /// Defaults overridden by WANMPI_SHM_RING and WANMPI_SHM_ARM_AFTER.
    pub fn from_env() -> Result<ShmOptions, TransportError> {
        Self::from_lookup(|k| std::env::var(k).ok())
    }

    /// Like `from_env` with a chosen lookup (tests need no process-wide state).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<ShmOptions, TransportError> {
        let mut o = ShmOptions::default();
        if let Some(v) = get(ENV_RING) {
            o.ring_bytes = Some(parse_bytes(&v).ok_or_else(|| bad(ENV_RING, &v, "not a byte count"))?);
        }
        if let Some(v) = get(ENV_ARM_AFTER) {
            o.arm_after = v.trim().parse().map_err(|_| bad(ENV_ARM_AFTER, &v, "not a count"))?;
        }
        o.validate()?;
        Ok(o)
    }

    /// Checks the values `setup` relies on.
    pub fn validate(&self) -> Result<(), TransportError> {
        if let Some(r) = self.ring_bytes {
            if !r.is_power_of_two() || !(MIN_RING..=MAX_RING).contains(&r) {
                return Err(bad(ENV_RING, &r.to_string(), "must be a power of two from 64k to 1g"));
            }
        }
        if self.channels == 0 || self.batch == 0 {
            return Err(TransportError::Setup("shm: channels and batch must be at least 1".into()));
        }
        Ok(())
    }

    /// Data bytes of each ring on a host of `local_ranks` ranks: the one
    /// set, else `DEFAULT_RING_BUDGET` shared among the other ranks.
    pub fn ring_for(&self, local_ranks: usize) -> usize {
        self.ring_bytes.unwrap_or_else(|| {
            let share = DEFAULT_RING_BUDGET / local_ranks.saturating_sub(1).max(1);
            // The largest power of two not above the share.
            let pow2 = 1usize << (usize::BITS - 1 - share.leading_zeros());
            pow2.clamp(MIN_RING, DEFAULT_RING)
        })
    }

    /// Largest frame `try_send` accepts on a host of `local_ranks` ranks:
    /// 1 MiB, or a quarter of a smaller ring. A job whose hosts differ
    /// must agree on one value: the one of its most crowded host.
    pub fn max_frame_for(&self, local_ranks: usize) -> usize {
        DEFAULT_MAX_FRAME.min(self.ring_for(local_ranks) / 4)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_env_overrides() {
        let d = ShmOptions::from_lookup(|_| None).unwrap();
        assert_eq!((d.ring_bytes, d.ring_for(2), d.max_frame_for(2)), (None, 4 << 20, 1 << 20));
        let o = ShmOptions::from_lookup(|k| match k {
            ENV_RING => Some(" 256k".into()),
            ENV_ARM_AFTER => Some("100".into()),
            _ => None,
        })
        .unwrap();
        assert_eq!((o.ring_for(2), o.ring_for(200), o.max_frame_for(2), o.arm_after), (256 << 10, 256 << 10, 64 << 10, 100));
        assert_eq!(parse_bytes("8M"), Some(8 << 20));
        assert_eq!(parse_bytes("1048576"), Some(1 << 20));
    }

    /// The default ring shrinks as the host fills, so that the rings into
    /// one rank stay within the budget, and never below 64 KiB.
    #[test]
    fn default_rings_share_a_budget_per_rank() {
        let d = ShmOptions::default();
        let rings: Vec<_> = [1, 2, 9, 10, 16, 32, 64, 128, 256, 512, 2000].iter().map(|&n| d.ring_for(n) >> 10).collect();
        assert_eq!(rings, vec![4096, 4096, 4096, 2048, 2048, 1024, 512, 256, 128, 64, 64]);
        assert_eq!((d.max_frame_for(128), d.max_frame_for(256)), (64 << 10, 32 << 10));
        for n in 2..600 {
            let r = d.ring_for(n);
            assert!(r.is_power_of_two() && (r * (n - 1) <= DEFAULT_RING_BUDGET || r == MIN_RING), "{n}: {r}");
        }
    }

    #[test]
    fn bad_ring_sizes_name_the_variable() {
        for v in ["lots", "100000", "1k", "2g", ""] {
            let e = ShmOptions::from_lookup(|k| (k == ENV_RING).then(|| v.to_string())).unwrap_err().to_string();
            assert!(e.contains(ENV_RING), "{v}: {e}");
        }
    }
}
