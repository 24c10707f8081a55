//! The job's port range (`WANMPI_PORT_RANGE=LOW-HIGH`, `mpirun
//! --port-range`): every socket a rank or mpirun binds to listen or receive
//! on — the key/value service, tcp's listener, sctp's and wamp's UDP
//! sockets — takes a port inside it, so a firewall needs to open only that
//! range. Outgoing TCP connections keep the system's ephemeral ports, as
//! firewalls let answers to them back in.
//!
//! Binding tries the range's ports from a random start (ranks of one host
//! then rarely race for the same port) and wraps around, moving on only
//! while the port is taken.

use std::io;

/// Where the launcher puts the range for every rank.
pub const ENV_PORT_RANGE: &str = "WANMPI_PORT_RANGE";

/// Ports `low..=high`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortRange {
    pub low: u16,
    pub high: u16,
}

impl PortRange {
    /// `LOW-HIGH` with 1 <= LOW <= HIGH <= 65535 (one port: `P-P`).
    pub fn parse(s: &str) -> Result<PortRange, String> {
        let (low, high) = s.trim().split_once('-').ok_or_else(|| format!("{s:?}: expected LOW-HIGH, e.g. 50000-50100"))?;
        let port = |p: &str| p.trim().parse::<u16>().ok().filter(|&p| p > 0).ok_or_else(|| format!("{s:?}: {p:?} is not a port (1-65535)"));
        let (low, high) = (port(low)?, port(high)?);
        if low > high {
            return Err(format!("{s:?}: the low end is above the high end"));
        }
        Ok(PortRange { low, high })
    }

    /// The range in `WANMPI_PORT_RANGE`, if set (an error if malformed).
    pub fn from_env() -> Result<Option<PortRange>, String> {
        Self::from_lookup(|k| std::env::var(k).ok())
    }

    /// As `from_env`, reading variables through `lookup`.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Option<PortRange>, String> {
        match lookup(ENV_PORT_RANGE) {
            None => Ok(None),
            Some(v) if v.trim().is_empty() => Ok(None),
            Some(v) => Self::parse(&v).map(Some).map_err(|e| format!("{ENV_PORT_RANGE}: {e}")),
        }
    }

    pub fn contains(&self, port: u16) -> bool {
        (self.low..=self.high).contains(&port)
    }

    /// How many ports the range holds.
    pub fn ports(&self) -> u32 {
        u32::from(self.high) - u32::from(self.low) + 1
    }

    /// `bind(port)` on the range's ports, from a random one, until one is
    /// not in use; any other error ends the search.
    pub fn bind<T>(&self, start_seed: u32, mut bind: impl FnMut(u16) -> io::Result<T>) -> io::Result<T> {
        let n = self.ports();
        for i in 0..n {
            let port = self.low as u32 + (start_seed.wrapping_add(i) % n);
            match bind(port as u16) {
                Err(e) if e.kind() == io::ErrorKind::AddrInUse => continue,
                other => return other,
            }
        }
        Err(io::Error::new(io::ErrorKind::AddrInUse, format!("no free port in {}-{} ({ENV_PORT_RANGE})", self.low, self.high)))
    }
}

impl std::fmt::Display for PortRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}", self.low, self.high)
    }
}

/// `bind(0)` (the system picks) without a range, else a port of the range
/// from a random start.
pub fn bind_in<T>(range: Option<PortRange>, mut bind: impl FnMut(u16) -> io::Result<T>) -> io::Result<T> {
    match range {
        None => bind(0),
        Some(r) => r.bind(random_u32(), bind),
    }
}

fn random_u32() -> u32 {
    let mut b = [0u8; 4];
    // Only spreads the start; a failure (no entropy yet) starts at LOW.
    let _ = getrandom::getrandom(&mut b);
    u32::from_ne_bytes(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{TcpListener, UdpSocket};

    #[test]
    fn ranges_parse_and_bad_ones_say_why() {
        assert_eq!(PortRange::parse("50000-50100"), Ok(PortRange { low: 50000, high: 50100 }));
        assert_eq!(PortRange::parse(" 7-7 ").map(|r| r.ports()), Ok(1));
        for bad in ["", "5", "5-", "-5", "0-10", "10-5", "1-70000", "a-b", "1-2-3"] {
            assert!(PortRange::parse(bad).is_err(), "{bad:?} parsed");
        }
        let env = |v: &'static str| move |k: &str| (k == ENV_PORT_RANGE).then(|| v.to_string());
        assert_eq!(PortRange::from_lookup(env("")), Ok(None));
        assert_eq!(PortRange::from_lookup(|_| None), Ok(None));
        assert!(PortRange::from_lookup(env("9-1")).unwrap_err().contains(ENV_PORT_RANGE));
        assert_eq!(PortRange::parse("1-3").unwrap().to_string(), "1-3");
    }

    #[test]
    fn binding_skips_taken_ports_wraps_around_and_says_when_all_are_taken() {
        // Ports the test itself holds, so the result does not depend on
        // what else runs: take two adjacent free ones if we can.
        let a = TcpListener::bind("127.0.0.1:0").unwrap();
        let p = a.local_addr().unwrap().port();
        let Ok(b) = TcpListener::bind(("127.0.0.1", p.wrapping_add(1))) else { return };
        let r = PortRange { low: p, high: p + 1 };
        let tcp = |port| TcpListener::bind(("127.0.0.1", port));
        let e = r.bind(0, tcp).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AddrInUse);
        assert!(e.to_string().contains(&format!("{p}-{}", p + 1)), "{e}");
        drop(b);
        // From either start the one free port is found.
        for seed in [0, 1, 7] {
            let l = r.bind(seed, tcp).unwrap();
            assert_eq!(l.local_addr().unwrap().port(), p + 1);
        }
        // UDP ports are another space: both are free there (unless taken by others).
        if let Ok(u) = bind_in(Some(r), |port| UdpSocket::bind(("127.0.0.1", port))) {
            assert!(r.contains(u.local_addr().unwrap().port()));
        }
        // Other errors end the search at once.
        let mut calls = 0;
        let e = r.bind(0, |_| -> io::Result<()> {
            calls += 1;
            Err(io::Error::from(io::ErrorKind::PermissionDenied))
        });
        assert_eq!((e.unwrap_err().kind(), calls), (io::ErrorKind::PermissionDenied, 1));
        assert_ne!(bind_in(None, |port| UdpSocket::bind(("127.0.0.1", port))).unwrap().local_addr().unwrap().port(), 0);
    }
}
