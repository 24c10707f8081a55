//! Settings of the shm transport, with defaults and environment overrides.

use std::path::PathBuf;
use std::time::Duration;
use wanmpi_transport::TransportError;

/// Ring size in bytes per direction per pair of ranks (a power of two; `k`,
/// `m` suffixes allowed).
pub const ENV_RING: &str = "WANMPI_SHM_RING";
/// Directory of the segments and doorbells (default /dev/shm).
pub const ENV_DIR: &str = "WANMPI_SHM_DIR";
/// Empty `poll_recv`s in a row before it arms the doorbell (default 0).
pub const ENV_ARM_AFTER: &str = "WANMPI_SHM_ARM_AFTER";

/// Default ring: 4 MiB per direction per pair. Holds four frames of the
/// largest size, so a sender rarely waits on a reader that is only slightly
/// behind. Memory grows with the square of the ranks on a host (2 rings per
/// pair): 16 local ranks take 16 x 15 x 4 MiB = 960 MiB of /dev/shm.
pub const DEFAULT_RING: usize = 4 << 20;
/// Largest frame: 1 MiB (the engine fragments long messages to this size),
/// and never more than a quarter of the ring.
pub const DEFAULT_MAX_FRAME: usize = 1 << 20;
const MIN_RING: usize = 64 << 10;
const MAX_RING: usize = 1 << 30;

#[derive(Debug, Clone, PartialEq)]
pub struct ShmOptions {
    /// Data bytes of one ring (one direction of one pair). Every rank of a
    /// job must use the same value; setup fails otherwise.
    pub ring_bytes: usize,
    /// Where segments and doorbells are created (a tmpfs, so the rings are RAM).
    pub dir: PathBuf,
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
        ShmOptions {
            ring_bytes: DEFAULT_RING,
            dir: PathBuf::from("/dev/shm"),
            channels: 64,
            batch: 64,
            liveness_interval: Duration::from_millis(100),
            arm_after: 0,
        }
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
    /// Defaults overridden by WANMPI_SHM_RING, WANMPI_SHM_DIR and WANMPI_SHM_ARM_AFTER.
    pub fn from_env() -> Result<ShmOptions, TransportError> {
        Self::from_lookup(|k| std::env::var(k).ok())
    }

    /// Like `from_env` with a chosen lookup (tests need no process-wide state).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<ShmOptions, TransportError> {
        let mut o = ShmOptions::default();
        if let Some(v) = get(ENV_RING) {
            o.ring_bytes = parse_bytes(&v).ok_or_else(|| bad(ENV_RING, &v, "not a byte count"))?;
        }
        if let Some(v) = get(ENV_ARM_AFTER) {
            o.arm_after = v.trim().parse().map_err(|_| bad(ENV_ARM_AFTER, &v, "not a count"))?;
        }
        if let Some(v) = get(ENV_DIR).filter(|s| !s.trim().is_empty()) {
            o.dir = PathBuf::from(v.trim());
        }
        o.validate()?;
        Ok(o)
    }

    /// Checks the values `setup` relies on.
    pub fn validate(&self) -> Result<(), TransportError> {
        let r = self.ring_bytes;
        if !r.is_power_of_two() || !(MIN_RING..=MAX_RING).contains(&r) {
            return Err(bad(ENV_RING, &r.to_string(), "must be a power of two from 64k to 1g"));
        }
        if self.channels == 0 || self.batch == 0 {
            return Err(TransportError::Setup("shm: channels and batch must be at least 1".into()));
        }
        Ok(())
    }

    /// Largest frame `try_send` accepts: 1 MiB, or a quarter of a smaller ring.
    pub fn max_frame(&self) -> usize {
        DEFAULT_MAX_FRAME.min(self.ring_bytes / 4)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_env_overrides() {
        let d = ShmOptions::from_lookup(|_| None).unwrap();
        assert_eq!((d.ring_bytes, d.max_frame()), (4 << 20, 1 << 20));
        let o = ShmOptions::from_lookup(|k| match k {
            ENV_RING => Some(" 256k".into()),
            ENV_DIR => Some("/tmp".into()),
            ENV_ARM_AFTER => Some("100".into()),
            _ => None,
        })
        .unwrap();
        assert_eq!((o.ring_bytes, o.max_frame(), o.dir, o.arm_after), (256 << 10, 64 << 10, PathBuf::from("/tmp"), 100));
        assert_eq!(parse_bytes("8M"), Some(8 << 20));
        assert_eq!(parse_bytes("1048576"), Some(1 << 20));
    }

    #[test]
    fn bad_ring_sizes_name_the_variable() {
        for v in ["lots", "100000", "1k", "2g", ""] {
            let e = ShmOptions::from_lookup(|k| (k == ENV_RING).then(|| v.to_string())).unwrap_err().to_string();
            assert!(e.contains(ENV_RING), "{v}: {e}");
        }
    }
}
