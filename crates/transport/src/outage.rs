//! The job's outage limit: how long a peer's path may stay silent before a
//! transport gives the peer up (`WANMPI_OUTAGE_LIMIT`, seconds, set by
//! `mpirun --outage-limit`; 10 minutes by default, about a TCP connection's
//! retry horizon). Routing changes and maintenance windows between sites take
//! minutes; a dead *process* is told by the launcher, which sees it exit, so
//! silence alone can be given this long.
//!
//! While a path is silent, transports probe at most every `PROBE_CAP`, so
//! that the job resumes within about a second of the path's return and an
//! outage costs one or two packets a second per peer, not a storm.

use std::time::Duration;

/// The environment variable every transport reads.
pub const ENV: &str = "WANMPI_OUTAGE_LIMIT";

/// Without `WANMPI_OUTAGE_LIMIT`.
pub const DEFAULT: Duration = Duration::from_secs(600);

/// The longest gap between probes of a silent path.
pub const PROBE_CAP: Duration = Duration::from_secs(1);

/// Seconds (a decimal number, at least 1 ms and at most a day) as a limit.
pub fn parse(text: &str) -> Result<Duration, String> {
    let bad = || format!("{ENV}={text:?}: expected seconds, e.g. 600 or 2.5 (from 0.001 to 86400)");
    let secs: f64 = text.trim().parse().map_err(|_| bad())?;
    if !(0.001..=86_400.0).contains(&secs) {
        return Err(bad());
    }
    Ok(Duration::from_secs_f64(secs))
}

/// The limit from the environment, `DEFAULT` when unset.
pub fn limit_from_env() -> Result<Duration, String> {
    match std::env::var(ENV) {
        Ok(v) => parse(&v),
        Err(_) => Ok(DEFAULT),
    }
}

/// How a span reads in messages: "600 s", "2.5 s".
pub fn describe(span: Duration) -> String {
    let s = span.as_secs_f64();
    if s >= 10.0 {
        format!("{s:.0} s")
    } else {
        format!("{s:.1} s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_parse_and_nonsense_is_refused() {
        assert_eq!(parse("600"), Ok(Duration::from_secs(600)));
        assert_eq!(parse(" 2.5 "), Ok(Duration::from_millis(2500)));
        for bad in ["", "-1", "0", "ten", "1e9", "NaN"] {
            let e = parse(bad).unwrap_err();
            assert!(e.contains("WANMPI_OUTAGE_LIMIT"), "{e}");
        }
        assert_eq!(describe(Duration::from_secs(600)), "600 s");
        assert_eq!(describe(Duration::from_millis(2500)), "2.5 s");
        assert_eq!(describe(Duration::from_millis(600_400)), "600 s");
    }
}
