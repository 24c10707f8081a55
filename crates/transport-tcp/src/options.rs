//! Settings of the tcp transport, with defaults and environment overrides.

use crate::policy::{Maps, Seal};
use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;
use wanmpi_transport::TransportError;

/// Socket buffer size in bytes; 0 keeps the kernel default.
pub const ENV_SNDBUF: &str = "WANMPI_TCP_SNDBUF";
pub const ENV_RCVBUF: &str = "WANMPI_TCP_RCVBUF";
/// Seconds (may be fractional) to wait for every peer at setup.
pub const ENV_SETUP_TIMEOUT: &str = "WANMPI_TCP_SETUP_TIMEOUT";
/// The job-wide outage limit, seconds (may be fractional): how long a path
/// may stay silent, or a peer unreachable, before the peer counts as lost
/// (`mpirun --outage-limit` sets it; `wanmpi_transport::outage`).
pub const ENV_OUTAGE_LIMIT: &str = wanmpi_transport::outage::ENV;
/// Seconds of silence with data unacknowledged after which a connection
/// is broken and redialled, instead of waiting out a backed-off
/// retransmission timer.
pub const ENV_SILENCE: &str = "WANMPI_TCP_SILENCE";
/// Seconds the higher rank of a pair waits before it dials too (the lower
/// dials at once): on a path open both ways the lower rank's connection is
/// made first and no second one is opened; behind a firewall that lets
/// nothing in, the higher rank's comes this much later.
pub const ENV_REVERSE_DELAY: &str = "WANMPI_TCP_REVERSE_DELAY";
/// Seconds after which setup gives up on a peer that answered no dial and
/// never dialled in: the error names both ranks and every candidate tried.
pub const ENV_PATH_TIMEOUT: &str = "WANMPI_TCP_PATH_TIMEOUT";
/// The outage limit unless told: 10 minutes, about what a TCP connection's
/// own retries last.
pub const DEFAULT_OUTAGE_LIMIT: Duration = wanmpi_transport::outage::DEFAULT;

/// Default largest frame: 1 MiB. Large enough that per-frame costs vanish
/// against the bytes (the engine fragments long messages to this size), small
/// enough that fragments of different messages interleave finely and a
/// receiver never needs a huge buffer per connection.
pub const DEFAULT_MAX_FRAME: usize = 1 << 20;

#[derive(Debug, Clone, PartialEq)]
pub struct TcpOptions {
    /// Address the listener binds (default 0.0.0.0: reachable on every interface).
    pub bind_addr: IpAddr,
    /// Host or address peers use to reach this rank (default 127.0.0.1).
    pub publish_addr: Option<String>,
    /// SO_SNDBUF / SO_RCVBUF in bytes. Default 0 = leave the kernel default,
    /// because setting either one turns off Linux's buffer autotuning for the
    /// socket and caps it at net.core.[rw]mem_max (often ~200 KiB), while
    /// autotuning grows to tcp_[rw]mem's max (MiBs): a WAN path needs buffers
    /// of a bandwidth-delay product, e.g. 1 Gbit/s x 40 ms = 5 MB.
    pub sndbuf: usize,
    pub rcvbuf: usize,
    /// How long setup waits for all peers before failing (default 60 s).
    pub setup_timeout: Duration,
    /// How long one incoming or outgoing handshake may take before that
    /// connection is dropped (a silent stray must not hold a slot).
    pub handshake_timeout: Duration,
    /// Largest frame sent or accepted (see [`DEFAULT_MAX_FRAME`]). Every rank
    /// of a job must use the same value.
    pub max_frame: usize,
    /// Ports the listener binds in (the launcher's WANMPI_PORT_RANGE,
    /// `mpirun --port-range`); None: any free port. Outgoing connections
    /// keep the system's ephemeral ports.
    pub port_range: Option<wanmpi_bootstrap::PortRange>,
    /// Which connections are sealed (`policy`): between hosts by default.
    pub seal: Seal,
    /// Each rank's host and site index (the launcher's maps, given by the
    /// runtime): ranks of one host are never sealed unless forced; with
    /// `Seal::BetweenSites` only ranks of different sites are.
    pub maps: Maps,
    /// Say at setup which connections are sealed (`WANMPI_STATS=1`).
    pub report: bool,
    /// How long a peer may stay unreachable (its connection broken and not
    /// yet replaced) before it is reported lost (default 600 s).
    pub outage_limit: Duration,
    /// Silence (data unacknowledged by the peer's kernel, or keepalive
    /// probes unanswered) after which a connection is broken and redialled
    /// (default 3 s; `redial`'s look at TCP_INFO, the keepalive count). Short, because a redial every second resumes within
    /// a second of the path's return, while the kernel's own retransmission
    /// timer backs off to two minutes.
    pub silence: Duration,
    /// How long the higher rank of a pair waits before dialling the lower
    /// one too, at setup and after a break (default 1 s; `setup`).
    pub reverse_delay: Duration,
    /// Setup fails this long after the fence for a peer that answered none
    /// of this rank's dials and did not dial in (default 10 s).
    pub path_timeout: Duration,
    /// The addresses this rank publishes (`wanmpi_bootstrap::candidates`);
    /// None: gathered at setup from the launcher's variables, the
    /// interfaces and what the key/value service saw.
    pub candidates: Option<wanmpi_bootstrap::Candidates>,
}

impl Default for TcpOptions {
    fn default() -> Self {
        TcpOptions {
            bind_addr: IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            publish_addr: None,
            sndbuf: 0,
            rcvbuf: 0,
            setup_timeout: Duration::from_secs(60),
            handshake_timeout: Duration::from_secs(10),
            max_frame: DEFAULT_MAX_FRAME,
            reverse_delay: Duration::from_secs(1),
            path_timeout: Duration::from_secs(10),
            candidates: None,
            port_range: None,
            seal: Seal::BetweenHosts,
            maps: Maps::default(),
            report: false,
            outage_limit: DEFAULT_OUTAGE_LIMIT,
            silence: Duration::from_secs(3),
        }
    }
}

fn bad(var: &str, v: &str, why: &str) -> TransportError {
    TransportError::Setup(format!("{var}={v:?}: {why}"))
}

impl TcpOptions {
    /// The address the listener binds: `bind_addr`, except that the IPv4
    /// wildcard becomes the IPv6 one when this rank publishes an IPv6
    /// address (peers dial that; Linux's `::` takes IPv4 too).
    pub fn listen_addr(&self) -> IpAddr {
        let v6 = self
            .publish_addr
            .as_deref()
            .and_then(|a| a.trim_start_matches('[').trim_end_matches(']').parse::<IpAddr>().ok())
            .is_some_and(|a| a.is_ipv6());
        match self.bind_addr {
            IpAddr::V4(a) if a.is_unspecified() && v6 => IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED),
            other => other,
        }
    }

    /// Defaults overridden by WANMPI_TCP_SNDBUF, WANMPI_TCP_RCVBUF,
    /// WANMPI_TCP_SETUP_TIMEOUT, WANMPI_TCP_ENCRYPT and the launcher's
    /// WANMPI_ADDR, WANMPI_PORT_RANGE and WANMPI_INSECURE_LAN.
    pub fn from_env() -> Result<TcpOptions, TransportError> {
        Self::from_lookup(|k| std::env::var(k).ok())
    }

    /// Like `from_env` with a chosen lookup (tests need no process-wide state).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<TcpOptions, TransportError> {
        let mut o = TcpOptions::default();
        let size = |var: &str| -> Result<Option<usize>, TransportError> {
            match get(var) {
                None => Ok(None),
                Some(v) => v.trim().parse::<usize>().map(Some).map_err(|_| bad(var, &v, "not a byte count")),
            }
        };
        if let Some(n) = size(ENV_SNDBUF)? {
            o.sndbuf = n;
        }
        if let Some(n) = size(ENV_RCVBUF)? {
            o.rcvbuf = n;
        }
        let secs = |var: &str| -> Result<Option<Duration>, TransportError> {
            let Some(v) = get(var) else { return Ok(None) };
            let s: f64 = v.trim().parse().map_err(|_| bad(var, &v, "not a number of seconds"))?;
            if !(s.is_finite() && s > 0.0 && s < 1e9) {
                return Err(bad(var, &v, "must be a positive number of seconds"));
            }
            Ok(Some(Duration::from_secs_f64(s)))
        };
        if let Some(d) = secs(ENV_SETUP_TIMEOUT)? {
            o.setup_timeout = d;
        }
        if let Some(d) = secs(ENV_PATH_TIMEOUT)? {
            o.path_timeout = d;
        }
        if let Some(v) = get(ENV_REVERSE_DELAY) {
            let s: f64 = v.trim().parse().map_err(|_| bad(ENV_REVERSE_DELAY, &v, "not a number of seconds"))?;
            if !(s.is_finite() && (0.0..1e6).contains(&s)) {
                return Err(bad(ENV_REVERSE_DELAY, &v, "must be 0 or more seconds"));
            }
            o.reverse_delay = Duration::from_secs_f64(s);
        }
        if let Some(v) = get(ENV_OUTAGE_LIMIT) {
            o.outage_limit = wanmpi_transport::outage::parse(&v).map_err(TransportError::Setup)?;
        }
        if let Some(d) = secs(ENV_SILENCE)? {
            if d < Duration::from_millis(1) {
                return Err(bad(ENV_SILENCE, &format!("{}", d.as_secs_f64()), "must be at least 0.001 s"));
            }
            o.silence = d;
        }
        if let Some(a) = get(wanmpi_bootstrap::ENV_ADDR).filter(|s| !s.trim().is_empty()) {
            o.publish_addr = Some(a.trim().to_string());
        }
        o.port_range = wanmpi_bootstrap::PortRange::from_lookup(&get).map_err(TransportError::Setup)?;
        o.seal = Seal::from_lookup(crate::policy::ENV_ENCRYPT, &get).map_err(TransportError::Setup)?;
        o.report = get("WANMPI_STATS").is_some_and(|v| v.trim() == "1");
        Ok(o)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn lookup(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let m: HashMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        move |k| m.get(k).cloned()
    }

    #[test]
    fn defaults_keep_autotuning_and_env_overrides() {
        let d = TcpOptions::from_lookup(lookup(&[])).unwrap();
        assert_eq!((d.sndbuf, d.rcvbuf, d.setup_timeout), (0, 0, Duration::from_secs(60)));
        assert_eq!((d.outage_limit, d.silence), (Duration::from_secs(600), Duration::from_secs(3)));
        let l = TcpOptions::from_lookup(lookup(&[(ENV_OUTAGE_LIMIT, "7.5"), (ENV_SILENCE, "2")])).unwrap();
        assert_eq!((l.outage_limit, l.silence), (Duration::from_millis(7500), Duration::from_secs(2)));
        let o = TcpOptions::from_lookup(lookup(&[
            (ENV_SNDBUF, "4194304"),
            (ENV_RCVBUF, " 1048576 "),
            (ENV_SETUP_TIMEOUT, "2.5"),
            ("WANMPI_ADDR", "10.1.2.3"),
        ]))
        .unwrap();
        assert_eq!((o.sndbuf, o.rcvbuf), (4 << 20, 1 << 20));
        assert_eq!(o.setup_timeout, Duration::from_millis(2500));
        assert_eq!(o.publish_addr.as_deref(), Some("10.1.2.3"));
        assert_eq!(o.listen_addr(), IpAddr::V4(Ipv4Addr::UNSPECIFIED));
        let v6 = TcpOptions::from_lookup(lookup(&[("WANMPI_ADDR", "2001:2::2")])).unwrap();
        assert_eq!(v6.listen_addr(), "::".parse::<IpAddr>().unwrap(), "an IPv6 address is dialled on the IPv6 wildcard");
    }

    #[test]
    fn bad_values_are_errors_naming_the_variable() {
        for (k, v) in
            [(ENV_SNDBUF, "lots"), (ENV_SETUP_TIMEOUT, "-1"), (ENV_SETUP_TIMEOUT, "inf"), (ENV_OUTAGE_LIMIT, "ten"), (ENV_OUTAGE_LIMIT, "0")]
        {
            let e = TcpOptions::from_lookup(lookup(&[(k, v)])).unwrap_err().to_string();
            assert!(e.contains(k), "{e}");
        }
    }
}
