//! A rank's candidate addresses: every IP address at which its peers may
//! reach it, each with where it came from, published once through the
//! key/value service under `cand-<rank>` and read back by every transport
//! that dials (tcp) or punches (wamp, sctp) toward the rank.
//!
//! Across NAT no single address fits every peer: a VM behind a cloud's 1:1
//! NAT is `10.1.0.2` to its neighbours and `198.18.0.5` to the world, and
//! neither side knows which one a given peer can reach. So, as ICE does, a
//! rank publishes all it knows and a peer tries them at once, keeping the
//! first that proves the job secret. The kinds, in the order they are
//! published:
//!
//! - `Public` (`p=`): the address the hostfile gives the rank's host
//!   (`addr=`, passed as `WANMPI_ADDR`), or the one `--net`/`--if` chose.
//!   It may be on no interface here (1:1 NAT): sockets never bind it, they
//!   bind the wildcard.
//! - `Host` (`h=`): this host's interface addresses, the route's choice
//!   (`own_addr`) first; never loopback or link-local.
//! - `Reflexive` (`r=`): the source address the key/value service saw this
//!   rank's connection come from (`KeyValue::seen_from`): the NAT's outside
//!   address when the service is outside the rank's NAT.
//! - `Loopback` (`l=`): 127.0.0.1, for peers of the same host only.
//!
//! Candidates are addresses only: each transport publishes its own port
//! (tcp `tcp-ep-<rank>`), and a dialler pairs the port with every candidate
//! (`dial_order`). The value is `p=198.18.0.5,h=10.1.0.2,r=198.18.0.5,l=127.0.0.1`
//! (duplicates of an address keep their first kind).

use crate::{own_addr, route, BootstrapError, KeyValue};
use std::net::{IpAddr, Ipv4Addr};

/// The key prefix; the key of rank r is `cand-r`.
pub const KEY_PREFIX: &str = "cand-";
/// At most this many candidates per rank (a host with many interfaces,
/// bridges of containers, publishes its first ones).
pub const MAX_CANDIDATES: usize = 8;

/// The key under which `rank` publishes its candidates.
pub fn key(rank: u32) -> String {
    format!("{KEY_PREFIX}{rank}")
}

/// Where a candidate address came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// Given for the host: hostfile `addr=`, `WANMPI_ADDR`, `--net`/`--if`.
    Public,
    /// An address of one of this host's interfaces.
    Host,
    /// The address the key/value service saw this rank connect from.
    Reflexive,
    /// Loopback: only for peers on the same host.
    Loopback,
}

impl Kind {
    fn letter(self) -> char {
        match self {
            Kind::Public => 'p',
            Kind::Host => 'h',
            Kind::Reflexive => 'r',
            Kind::Loopback => 'l',
        }
    }

    fn from_letter(c: &str) -> Option<Kind> {
        Some(match c {
            "p" => Kind::Public,
            "h" => Kind::Host,
            "r" => Kind::Reflexive,
            "l" => Kind::Loopback,
            _ => return None,
        })
    }

    /// A word for logs and statistics.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Public => "public",
            Kind::Host => "host",
            Kind::Reflexive => "reflexive",
            Kind::Loopback => "loopback",
        }
    }
}

/// One address a rank may be reached at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Candidate {
    pub ip: IpAddr,
    pub kind: Kind,
}

impl std::fmt::Display for Candidate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.ip, self.kind.name())
    }
}

/// A rank's candidates, in the order published.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Candidates(pub Vec<Candidate>);

impl Candidates {
    /// Adds `ip` unless it is there already, unspecified or link-local,
    /// or the list is full.
    pub fn push(&mut self, ip: IpAddr, kind: Kind) {
        let link_local = matches!(ip, IpAddr::V6(v6) if (v6.segments()[0] & 0xffc0) == 0xfe80);
        if ip.is_unspecified() || link_local || self.0.len() >= MAX_CANDIDATES || self.0.iter().any(|c| c.ip == ip) {
            return;
        }
        self.0.push(Candidate { ip, kind });
    }

    /// The published form: `k=ip` separated by commas (`-` when empty, as
    /// a key/value item cannot be).
    pub fn render(&self) -> String {
        if self.0.is_empty() {
            return "-".into();
        }
        self.0.iter().map(|c| format!("{}={}", c.kind.letter(), c.ip)).collect::<Vec<_>>().join(",")
    }

    /// Reads `render`'s form. Entries of an unknown kind are skipped (a
    /// later release may add kinds); a malformed address is an error.
    pub fn parse(s: &str) -> Result<Candidates, String> {
        let mut out = Candidates::default();
        let s = s.trim();
        if s == "-" || s.is_empty() {
            return Ok(out);
        }
        for item in s.split(',') {
            let (k, a) = item.split_once('=').ok_or_else(|| format!("candidate {item:?} is not KIND=ADDRESS"))?;
            let ip: IpAddr = a.trim_start_matches('[').trim_end_matches(']').parse().map_err(|_| format!("candidate {item:?}: bad address"))?;
            if let Some(kind) = Kind::from_letter(k) {
                out.push(ip, kind);
            }
        }
        Ok(out)
    }

    /// The addresses a peer dials or probes, in order: loopback only
    /// toward a peer of the same host (`same_host` Some(true)); none of it
    /// toward one elsewhere (Some(false)); everything when unknown (None).
    /// `primary`, the address the transport published with its port, comes
    /// first (it may be a test's proxy, or all an older peer published).
    pub fn dial_order(&self, primary: Option<IpAddr>, same_host: Option<bool>) -> Vec<Candidate> {
        let mut all = Candidates::default();
        if let Some(p) = primary {
            let kind = self.0.iter().find(|c| c.ip == p).map_or(if p.is_loopback() { Kind::Loopback } else { Kind::Public }, |c| c.kind);
            all.push(p, kind);
        }
        for c in &self.0 {
            all.push(c.ip, c.kind);
        }
        let keep = |c: &Candidate| match same_host {
            Some(true) => c.ip.is_loopback(),
            Some(false) => !c.ip.is_loopback(),
            None => true,
        };
        let kept: Vec<Candidate> = all.0.iter().copied().filter(keep).collect();
        // A peer that published only loopback, as a job on one host does,
        // is still tried there rather than not at all.
        if kept.is_empty() {
            all.0
        } else {
            kept
        }
    }
}

/// What gathering looks at; filled from the environment by `gather_here`.
#[derive(Debug, Clone, Default)]
pub struct Sources {
    /// The address given for this host (`WANMPI_ADDR`, or `--net`/`--if`'s).
    pub given: Option<IpAddr>,
    /// The route's choice toward the other hosts and mpirun (`own_addr`).
    pub routed: Option<IpAddr>,
    /// Every address of every interface here.
    pub interfaces: Vec<IpAddr>,
    /// The address the key/value service saw.
    pub reflexive: Option<IpAddr>,
}

/// This rank's candidates from `src`, in published order: given, routed,
/// the other interfaces (IPv4 first), reflexive, loopback.
pub fn gather(src: &Sources) -> Candidates {
    let mut c = Candidates::default();
    // Room is kept for the reflexive and loopback ones, pushed last.
    let cap = MAX_CANDIDATES - 2;
    let usable = |a: &IpAddr| !a.is_loopback();
    if let Some(a) = src.given.filter(usable) {
        let kind = if src.interfaces.contains(&a) { Kind::Host } else { Kind::Public };
        c.push(a, kind);
    }
    if let Some(a) = src.routed.filter(usable) {
        c.push(a, Kind::Host);
    }
    let mut ifs: Vec<IpAddr> = src.interfaces.iter().copied().filter(usable).collect();
    ifs.sort_by_key(|a| !a.is_ipv4());
    for a in ifs {
        if c.0.len() < cap {
            c.push(a, Kind::Host);
        }
    }
    if let Some(a) = src.reflexive.filter(usable) {
        c.push(a, Kind::Reflexive);
    }
    c.push(IpAddr::V4(Ipv4Addr::LOCALHOST), Kind::Loopback);
    c
}

/// Gathers this rank's candidates from the launcher's variables (`get`),
/// this machine's interfaces and what `kv`'s service saw.
pub fn gather_here(get: impl Fn(&str) -> Option<String>, kv: &mut dyn KeyValue) -> Result<Candidates, BootstrapError> {
    let given = own_addr::given(&get)?.and_then(|a| a.trim().trim_start_matches('[').trim_end_matches(']').parse().ok());
    let bootstrap = get(crate::ENV_BOOTSTRAP).unwrap_or_default();
    let routed = own_addr::routed(&get, kv.rank(), &bootstrap);
    let interfaces = route::interfaces().map(|v| v.into_iter().map(|i| i.addr).collect()).unwrap_or_default();
    let reflexive = kv.seen_from();
    Ok(gather(&Sources { given, routed, interfaces, reflexive }))
}

/// Publishes `c` as this rank's candidates (visible after the next fence).
/// Every transport may call it; the value is the same each time.
pub fn publish(kv: &mut dyn KeyValue, c: &Candidates) -> Result<(), BootstrapError> {
    let rank = kv.rank();
    kv.put(&key(rank), &c.render())
}

/// Gathers and publishes this rank's candidates from the process's
/// environment; returns them.
pub fn publish_here(kv: &mut dyn KeyValue) -> Result<Candidates, BootstrapError> {
    let c = gather_here(|k| std::env::var(k).ok(), kv)?;
    publish(kv, &c)?;
    Ok(c)
}

/// The candidates of `ranks` (after a fence): empty for a rank that
/// published none (an in-process test's, or an older peer's).
pub fn read(kv: &mut dyn KeyValue, ranks: &[u32]) -> Result<Vec<Candidates>, BootstrapError> {
    let mut out = Vec::with_capacity(ranks.len());
    for &r in ranks {
        match kv.get(&key(r)) {
            Ok(v) => out.push(Candidates::parse(&v).map_err(|e| BootstrapError::Protocol(format!("candidates of rank {r}: {e}")))?),
            Err(BootstrapError::Missing(_)) => out.push(Candidates::default()),
            Err(e) => return Err(e),
        }
    }
    Ok(out)
}

/// Whether two ranks share a host, from `WANMPI_HOST_MAP` (None when the
/// launcher gave no map, as in-process tests do).
pub fn same_host(get: impl Fn(&str) -> Option<String>, a: u32, b: u32) -> Option<bool> {
    let map = get(own_addr::ENV_HOST_MAP)?;
    let hosts: Vec<&str> = map.split(',').map(str::trim).collect();
    Some(hosts.get(a as usize)? == hosts.get(b as usize)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn gathered_in_order_given_routed_interfaces_reflexive_loopback() {
        let src = Sources {
            given: Some(ip("198.18.0.5")),
            routed: Some(ip("10.1.0.2")),
            interfaces: vec![ip("127.0.0.1"), ip("2001:2::2"), ip("10.1.0.2"), ip("fe80::1"), ip("172.17.0.1")],
            reflexive: Some(ip("198.18.0.5")),
        };
        let c = gather(&src);
        assert_eq!(c.render(), "p=198.18.0.5,h=10.1.0.2,h=172.17.0.1,h=2001:2::2,l=127.0.0.1");
        // A given address that is an interface's is a host candidate.
        let c = gather(&Sources { given: Some(ip("10.1.0.2")), interfaces: vec![ip("10.1.0.2")], ..Sources::default() });
        assert_eq!(c.render(), "h=10.1.0.2,l=127.0.0.1");
        // Behind a masquerading NAT the service sees the NAT's address.
        let c = gather(&Sources { interfaces: vec![ip("10.1.0.2")], reflexive: Some(ip("198.18.1.1")), ..Sources::default() });
        assert_eq!(c.render(), "h=10.1.0.2,r=198.18.1.1,l=127.0.0.1");
    }

    #[test]
    fn many_interfaces_leave_room_for_reflexive_and_loopback() {
        let interfaces = (1..=20).map(|i| ip(&format!("10.0.0.{i}"))).collect();
        let c = gather(&Sources { interfaces, reflexive: Some(ip("198.18.0.9")), ..Sources::default() });
        assert_eq!(c.0.len(), MAX_CANDIDATES);
        assert_eq!(c.0[MAX_CANDIDATES - 2], Candidate { ip: ip("198.18.0.9"), kind: Kind::Reflexive });
        assert_eq!(c.0[MAX_CANDIDATES - 1].kind, Kind::Loopback);
    }

    #[test]
    fn parse_reads_render_and_refuses_garbage() {
        let c = Candidates::parse("p=198.18.0.5,h=[2001:2::2],x=1.2.3.4,l=127.0.0.1").unwrap();
        assert_eq!(c.render(), "p=198.18.0.5,h=2001:2::2,l=127.0.0.1", "unknown kinds are skipped");
        assert_eq!(Candidates::parse("-").unwrap(), Candidates::default());
        assert_eq!(Candidates::default().render(), "-");
        for bad in ["p", "p=", "h=10.0.0.999", "p=1.2.3.4,nonsense"] {
            assert!(Candidates::parse(bad).is_err(), "{bad}");
        }
        assert!(crate::proto::check_item("value", &c.render()).is_ok(), "a key/value item");
    }

    #[test]
    fn dial_order_keeps_loopback_for_one_host_only() {
        let c = Candidates::parse("p=198.18.0.5,h=10.1.0.2,l=127.0.0.1").unwrap();
        let ips = |v: Vec<Candidate>| v.iter().map(|c| c.ip.to_string()).collect::<Vec<_>>();
        assert_eq!(ips(c.dial_order(None, Some(false))), ["198.18.0.5", "10.1.0.2"]);
        assert_eq!(ips(c.dial_order(None, Some(true))), ["127.0.0.1"]);
        assert_eq!(ips(c.dial_order(Some(ip("10.1.0.2")), None)), ["10.1.0.2", "198.18.0.5", "127.0.0.1"]);
        let only_lo = Candidates::parse("l=127.0.0.1").unwrap();
        assert_eq!(ips(only_lo.dial_order(None, Some(false))), ["127.0.0.1"], "better than nothing");
        assert_eq!(ips(Candidates::default().dial_order(Some(ip("127.0.0.1")), Some(false))), ["127.0.0.1"]);
    }

    #[test]
    fn published_and_read_through_the_key_value_exchange() {
        let handles: Vec<_> = crate::local_kv_world(2)
            .into_iter()
            .map(|mut kv| {
                std::thread::spawn(move || {
                    let mine = gather(&Sources { given: Some(ip(&format!("198.18.0.{}", kv.rank() + 1))), ..Sources::default() });
                    if kv.rank() == 0 {
                        publish(&mut kv, &mine).unwrap();
                    }
                    kv.fence().unwrap();
                    read(&mut kv, &[0, 1]).unwrap()
                })
            })
            .collect();
        for h in handles {
            let got = h.join().unwrap();
            assert_eq!(got[0].render(), "p=198.18.0.1,l=127.0.0.1");
            assert_eq!(got[1], Candidates::default(), "a rank that published none");
        }
    }

    #[test]
    fn same_host_from_the_map() {
        let get = |k: &str| (k == own_addr::ENV_HOST_MAP).then(|| "0,0,1".to_string());
        assert_eq!(same_host(get, 0, 1), Some(true));
        assert_eq!(same_host(get, 1, 2), Some(false));
        assert_eq!(same_host(get, 1, 7), None);
        assert_eq!(same_host(|_| None, 0, 1), None);
    }
}
