//! Which of this host's addresses its peers can reach it at.
//!
//! The kernel knows: the source address it would use toward a destination
//! is the name of a UDP socket connected to it (`connect` on UDP only looks
//! the route up; nothing is sent). The launcher asks this toward each
//! remote host for the key/value service's address, and each rank toward
//! mpirun and its peers' hosts for the address it publishes. A user may
//! instead name a network (`--net CIDR`) or an interface (`--if NAME`).
//! Host names are not used: a name often resolves to a loopback address on
//! the host itself (Debian's `127.0.1.1 host` line).

use ipnet::IpNet;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};

/// The local address the kernel's routing table picks toward `dest`.
pub fn source_toward(dest: IpAddr) -> io::Result<IpAddr> {
    let any: IpAddr = if dest.is_ipv4() { Ipv4Addr::UNSPECIFIED.into() } else { Ipv6Addr::UNSPECIFIED.into() };
    let sock = UdpSocket::bind(SocketAddr::new(any, 0))?;
    // The port does not matter: no datagram leaves.
    sock.connect(SocketAddr::new(dest, 9))?;
    Ok(sock.local_addr()?.ip())
}

/// This machine's host name (empty if it cannot be read).
pub fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for its length; gethostname NUL-terminates
    // when the name fits, and we stop at the first NUL either way.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return String::new();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// One address of one interface of this network namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IfaceAddr {
    pub name: String,
    pub addr: IpAddr,
}

/// Every address of every interface here.
pub fn interfaces() -> io::Result<Vec<IfaceAddr>> {
    Ok(if_addrs::get_if_addrs()?.into_iter().map(|i| IfaceAddr { addr: i.ip(), name: i.name }).collect())
}

/// What the user asked for instead of the route: an interface, a network,
/// or both (the interface's address inside the network).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AddrChoice {
    pub net: Option<IpNet>,
    pub iface: Option<String>,
}

/// `198.19.0.0/16`, `2001:2::/48`; a bare address means that one address.
pub fn parse_net(s: &str) -> Result<IpNet, String> {
    let s = s.trim();
    if let Ok(n) = s.parse::<IpNet>() {
        return Ok(n.trunc());
    }
    s.parse::<IpAddr>().map(IpNet::from).map_err(|_| format!("{s:?} is not a network (expected ADDRESS/PREFIX, e.g. 198.19.0.0/16 or 2001:2::/48)"))
}

/// Link-local IPv6 addresses need a scope to be reached: never published
/// unless asked for by name or network.
fn link_local(a: IpAddr) -> bool {
    matches!(a, IpAddr::V6(v6) if (v6.segments()[0] & 0xffc0) == 0xfe80)
}

impl AddrChoice {
    pub fn is_empty(&self) -> bool {
        self.net.is_none() && self.iface.is_none()
    }

    /// The address among `have` that fits; IPv4 first when an interface
    /// has both. The error names `host` and lists what it has.
    pub fn pick(&self, have: &[IfaceAddr], host: &str) -> Result<IpAddr, String> {
        let fits = |i: &&IfaceAddr| {
            self.iface.as_deref().is_none_or(|n| n == i.name)
                && self.net.is_none_or(|n| n.contains(&i.addr))
                && (self.net.is_some() || !link_local(i.addr))
        };
        let found: Vec<&IfaceAddr> = have.iter().filter(fits).collect();
        if let Some(i) = found.iter().find(|i| i.addr.is_ipv4()).or(found.first()) {
            return Ok(i.addr);
        }
        let wanted = match (&self.iface, &self.net) {
            (Some(i), Some(n)) => format!("no address of interface {i} in {n}"),
            (Some(i), None) => format!("no interface {i} with a usable address"),
            (None, Some(n)) => format!("no address in {n}"),
            (None, None) => "nothing asked".into(),
        };
        let list: Vec<String> = have.iter().map(|i| format!("{} {}", i.name, i.addr)).collect();
        Err(format!("host {host} has {wanted}; it has: {}", if list.is_empty() { "no addresses".into() } else { list.join(", ") }))
    }
}

/// The address to publish from the routes toward `targets` (peers' hosts
/// and mpirun): the non-loopback source used toward most of them, ties
/// going to the earlier target. None when every route is loopback or
/// missing (all ranks on this host, or nowhere known to route to).
pub fn by_route(targets: &[IpAddr], route: impl Fn(IpAddr) -> Option<IpAddr>) -> Option<IpAddr> {
    let mut votes: Vec<(IpAddr, usize)> = Vec::new();
    for &t in targets {
        let Some(src) = route(t).filter(|s| !s.is_loopback() && !s.is_unspecified()) else { continue };
        match votes.iter_mut().find(|(a, _)| *a == src) {
            Some(v) => v.1 += 1,
            None => votes.push((src, 1)),
        }
    }
    // max_by_key keeps the last of equals: walk backwards to keep the first.
    votes.iter().rev().max_by_key(|(_, n)| *n).map(|(a, _)| *a)
}

/// The last resort for a job that spans hosts when no route is known: the
/// first address that is neither loopback nor link-local, IPv4 first.
pub fn first_global(have: &[IfaceAddr]) -> Option<IpAddr> {
    let usable = || have.iter().map(|i| i.addr).filter(|a| !a.is_loopback() && !link_local(*a) && !a.is_unspecified());
    usable().find(IpAddr::is_ipv4).or_else(|| usable().next())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn have() -> Vec<IfaceAddr> {
        [("lo", "127.0.0.1"), ("lo", "::1"), ("tun0", "198.18.0.2"), ("tun1", "198.19.0.2"), ("tun1", "fe80::1"), ("v6", "2001:2::2")]
            .iter()
            .map(|(n, a)| IfaceAddr { name: n.to_string(), addr: ip(a) })
            .collect()
    }

    #[test]
    fn the_kernel_names_a_source_without_sending() {
        assert_eq!(source_toward(ip("127.0.0.1")).unwrap(), ip("127.0.0.1"));
        assert!(interfaces().unwrap().iter().any(|i| i.addr == ip("127.0.0.1")));
    }

    #[test]
    fn networks_and_interfaces_pick_their_address() {
        let pick = |net: Option<&str>, iface: Option<&str>| {
            AddrChoice { net: net.map(|n| parse_net(n).unwrap()), iface: iface.map(str::to_string) }.pick(&have(), "h2")
        };
        assert_eq!(pick(Some("198.19.0.0/16"), None).unwrap(), ip("198.19.0.2"));
        assert_eq!(pick(Some("198.18.0.2"), None).unwrap(), ip("198.18.0.2"));
        assert_eq!(pick(Some("2001:2::/48"), None).unwrap(), ip("2001:2::2"));
        assert_eq!(pick(None, Some("tun1")).unwrap(), ip("198.19.0.2"), "IPv4 first, never link-local");
        assert_eq!(pick(Some("fe80::/10"), Some("tun1")).unwrap(), ip("fe80::1"), "unless asked");
        let e = pick(Some("10.0.0.0/8"), None).unwrap_err();
        assert!(e.contains("host h2 has no address in 10.0.0.0/8") && e.contains("tun0 198.18.0.2"), "{e}");
        let e = pick(None, Some("eth9")).unwrap_err();
        assert!(e.contains("no interface eth9"), "{e}");
        assert!(pick(Some("198.18.0.0/16"), Some("tun1")).is_err());
        assert!(parse_net("198.19.0.0/33").is_err() && parse_net("eth0").is_err());
        assert_eq!(parse_net("198.19.7.7/16").unwrap().to_string(), "198.19.0.0/16");
    }

    #[test]
    fn the_route_used_toward_most_targets_wins_and_loopback_never() {
        let table = |t: IpAddr| -> Option<IpAddr> {
            match t.to_string().as_str() {
                "198.18.0.9" | "198.18.0.8" => Some(ip("198.18.0.2")),
                "198.19.0.9" => Some(ip("198.19.0.2")),
                "127.0.0.1" => Some(ip("127.0.0.1")),
                _ => None,
            }
        };
        assert_eq!(by_route(&[ip("198.19.0.9"), ip("198.18.0.9"), ip("198.18.0.8")], table), Some(ip("198.18.0.2")));
        assert_eq!(by_route(&[ip("198.19.0.9"), ip("198.18.0.9")], table), Some(ip("198.19.0.2")), "a tie goes to the first");
        assert_eq!(by_route(&[ip("127.0.0.1"), ip("10.0.0.1")], table), None);
        assert_eq!(by_route(&[], table), None);
        assert_eq!(first_global(&have()), Some(ip("198.18.0.2")));
        assert_eq!(first_global(&have()[..2]), None);
    }
}
