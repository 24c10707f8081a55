//! How long bootstrap waits may last.

use std::time::Duration;

/// Seconds any bootstrap wait (a fence above all) may last before it fails.
pub const ENV_BOOTSTRAP_TIMEOUT: &str = "WANMPI_BOOTSTRAP_TIMEOUT";
/// Used when `WANMPI_BOOTSTRAP_TIMEOUT` is unset or unreadable.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

/// The bootstrap timeout from the environment, or the default.
pub fn timeout_from_env() -> Duration {
    std::env::var(ENV_BOOTSTRAP_TIMEOUT)
        .ok()
        .and_then(|s| s.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0)
        .map(Duration::from_secs_f64)
        .unwrap_or(DEFAULT_TIMEOUT)
}
