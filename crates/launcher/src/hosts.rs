//! Hosts and slots: `--host a:2,b`, hostfiles, and which rank goes where.

use crate::error::LaunchError;
use std::net::IpAddr;

/// A host with a number of slots (ranks it takes before the next host is used).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostEntry {
    pub name: String,
    pub slots: u32,
    /// The address ranks on this host publish (`WANMPI_ADDR`). Defaults to
    /// the host name when that is an IP address.
    pub addr: Option<String>,
    /// The site the host belongs to (`site=NAME` in a hostfile): hosts of
    /// one site are near each other, sites are joined by the WAN.
    pub site: Option<String>,
    /// `net=CIDR`: ranks on this host publish their address in this
    /// network (`WANMPI_NET`), instead of the job's `--net`/`--if`.
    pub net: Option<String>,
    /// `if=NAME`: ranks on this host publish this interface's address
    /// (`WANMPI_IF`).
    pub iface: Option<String>,
}

impl HostEntry {
    /// `name` may be an IPv6 address in brackets (`[2001:2::2]`); it is
    /// kept without them, as ssh takes it.
    pub fn new(name: &str, slots: u32) -> HostEntry {
        let name = name.strip_prefix('[').and_then(|n| n.strip_suffix(']')).unwrap_or(name);
        let m = machine(name);
        let addr = m.parse::<IpAddr>().ok().map(|_| m.to_string());
        HostEntry { name: name.to_string(), slots, addr, ..HostEntry::default() }
    }
}

/// The machine a host name names, as ssh reads it: `user@host` is `host`
/// (Open MPI's hostfiles allow the form too). Addresses are looked up for
/// this part; the whole name still goes to the launch agent.
pub fn machine(name: &str) -> &str {
    name.rsplit_once('@').map_or(name, |(_, m)| m)
}

fn slots(s: &str) -> Result<u32, String> {
    match s.parse::<u32>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!("slot count {s:?} is not a positive number")),
    }
}

/// `name` or `name:slots`. An IPv6 address is either bare (an entry with
/// more than one colon is taken whole as the name) or in brackets, then
/// with slots after them: `[2001:2::2]:4`.
fn host_and_slots(s: &str) -> Result<HostEntry, String> {
    if s.is_empty() {
        return Err("empty host name".into());
    }
    if let Some(rest) = s.strip_prefix('[') {
        let (addr, after) = rest.split_once(']').ok_or_else(|| format!("{s:?}: no closing bracket"))?;
        if addr.parse::<std::net::Ipv6Addr>().is_err() {
            return Err(format!("{s:?}: {addr:?} in brackets is not an IPv6 address"));
        }
        return match after {
            "" => Ok(HostEntry::new(addr, 1)),
            _ => match after.strip_prefix(':') {
                Some(n) => Ok(HostEntry::new(addr, slots(n)?)),
                None => Err(format!("{s:?}: expected [ADDRESS] or [ADDRESS]:SLOTS")),
            },
        };
    }
    match s.split_once(':') {
        Some((name, n)) if !n.contains(':') => {
            if name.is_empty() {
                return Err(format!("{s:?} has no host name"));
            }
            Ok(HostEntry::new(name, slots(n)?))
        }
        _ => Ok(HostEntry::new(s, 1)),
    }
}

/// `a:2,b:2,c` (slots default to 1).
pub fn parse_host_list(s: &str) -> Result<Vec<HostEntry>, LaunchError> {
    s.split(',').map(|h| host_and_slots(h.trim()).map_err(|e| LaunchError::Usage(format!("--host: {e}")))).collect()
}

/// Hostfile lines: `host`, `host:N`, or `host slots=N [max_slots=M] [addr=A]
/// [net=CIDR] [if=NAME] [site=NAME]`; `#` starts a comment.
pub fn parse_hostfile(file: &str, text: &str) -> Result<Vec<HostEntry>, LaunchError> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let err = |problem: String| LaunchError::Hostfile { file: file.to_string(), line: i + 1, problem };
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let mut words = line.split_whitespace();
        let first = words.next().unwrap_or_default();
        let mut entry = host_and_slots(first).map_err(err)?;
        for w in words {
            match w.split_once('=') {
                Some(("slots", n)) => entry.slots = slots(n).map_err(err)?,
                Some(("max_slots", n)) => {
                    slots(n).map_err(err)?;
                }
                Some(("addr", a)) if !a.is_empty() => entry.addr = Some(a.to_string()),
                Some(("site", n)) if !n.is_empty() => entry.site = Some(n.to_string()),
                Some(("net", n)) if !n.is_empty() => {
                    wanmpi_bootstrap::route::parse_net(n).map_err(err)?;
                    entry.net = Some(n.to_string());
                }
                Some(("if", n)) if !n.is_empty() => entry.iface = Some(n.to_string()),
                _ => return Err(err(format!("unknown field {w:?} (expected slots=N, max_slots=N, addr=ADDRESS, net=CIDR, if=NAME or site=NAME)"))),
            }
        }
        out.push(entry);
    }
    if out.is_empty() {
        return Err(LaunchError::Hostfile { file: file.to_string(), line: 0, problem: "no hosts".into() });
    }
    Ok(out)
}

/// Where one rank runs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Placement {
    pub host: String,
    pub addr: Option<String>,
    pub site: Option<String>,
    /// The host's `net=` and `if=` (see `HostEntry`).
    pub net: Option<String>,
    pub iface: Option<String>,
}

/// Fills hosts' slots in order. With no hosts every rank is local and `np`
/// is required; with hosts and no `np`, every slot gets a rank.
pub fn place(hosts: &[HostEntry], np: Option<u32>, oversubscribe: bool) -> Result<Vec<Placement>, LaunchError> {
    if hosts.is_empty() {
        let n = np.ok_or_else(|| LaunchError::Usage("give the number of ranks with -n N (or hosts with --host/--hostfile)".into()))?;
        return Ok((0..n).map(|_| Placement { host: "localhost".into(), ..Placement::default() }).collect());
    }
    let total: u64 = hosts.iter().map(|h| u64::from(h.slots)).sum();
    let n = u64::from(np.unwrap_or(total.min(u64::from(u32::MAX)) as u32));
    if n > total && !oversubscribe {
        return Err(LaunchError::Usage(format!("{n} ranks but only {total} slots on the given hosts (add --oversubscribe to wrap around)")));
    }
    let slots: Vec<&HostEntry> = hosts.iter().flat_map(|h| (0..h.slots).map(move |_| h)).collect();
    Ok((0..n as usize)
        .map(|i| slots[i % slots.len()])
        .map(|h| Placement { host: h.name.clone(), addr: h.addr.clone(), site: h.site.clone(), net: h.net.clone(), iface: h.iface.clone() })
        .collect())
}

/// Index of each rank's host and site (in order of first appearance), as
/// the comma lists ranks read (`WANMPI_HOST_MAP`, `WANMPI_SITE_MAP`). A
/// local host name is one host whatever it is called. The site map is
/// `None` unless some host named its site; a host without one is a site of
/// its own.
pub fn rank_maps(placements: &[Placement]) -> (String, Option<String>) {
    fn index_of(seen: &mut Vec<String>, key: String) -> usize {
        match seen.iter().position(|k| *k == key) {
            Some(i) => i,
            None => {
                seen.push(key);
                seen.len() - 1
            }
        }
    }
    let host_key = |p: &Placement| if is_local(&p.host) { "localhost".to_string() } else { p.host.clone() };
    let (mut hosts, mut sites) = (Vec::new(), Vec::new());
    let mut host_map = Vec::new();
    let mut site_map = Vec::new();
    for p in placements {
        host_map.push(index_of(&mut hosts, host_key(p)).to_string());
        let site = p.site.clone().map_or_else(|| format!("host:{}", host_key(p)), |s| format!("site:{s}"));
        site_map.push(index_of(&mut sites, site).to_string());
    }
    let any_site = placements.iter().any(|p| p.site.is_some());
    (host_map.join(","), any_site.then(|| site_map.join(",")))
}

/// This machine's host name.
pub fn own_hostname() -> String {
    wanmpi_bootstrap::route::hostname()
}

/// Hosts started directly, without the launch agent: loopback, this
/// machine's name, and an address of one of its interfaces (a hostfile that
/// lists every node by address, this one included, must not need ssh from
/// this machine to itself).
pub fn is_local(name: &str) -> bool {
    if matches!(name, "localhost" | "127.0.0.1" | "::1") || name == own_hostname() {
        return true;
    }
    let Ok(ip) = name.parse::<IpAddr>() else { return false };
    ip.is_loopback() || wanmpi_bootstrap::route::interfaces().is_ok_and(|have| have.iter().any(|i| i.addr == ip))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_user_part_is_not_the_machine() {
        assert_eq!(machine("alice@node7"), "node7");
        assert_eq!(machine("node7"), "node7");
        let h = parse_host_list("alice@198.18.0.2:2,bob@node7").unwrap();
        assert_eq!((h[0].name.as_str(), h[0].slots, h[0].addr.as_deref()), ("alice@198.18.0.2", 2, Some("198.18.0.2")));
        assert_eq!((h[1].name.as_str(), h[1].addr.as_deref()), ("bob@node7", None));
    }

    #[test]
    fn host_lists() {
        let h = parse_host_list("a:2,b, 198.18.0.2:3").unwrap();
        assert_eq!(h[0], HostEntry::new("a", 2));
        assert_eq!(h[1], HostEntry::new("b", 1));
        assert_eq!(h[2], HostEntry { name: "198.18.0.2".into(), slots: 3, addr: Some("198.18.0.2".into()), ..HostEntry::default() });
        let v6 = parse_host_list("[2001:2::2]:4,2001:2::3,[2001:2::4]").unwrap();
        let got: Vec<_> = v6.iter().map(|h| (h.name.as_str(), h.slots, h.addr.as_deref())).collect();
        assert_eq!(got, [("2001:2::2", 4, Some("2001:2::2")), ("2001:2::3", 1, Some("2001:2::3")), ("2001:2::4", 1, Some("2001:2::4"))]);
        for bad in ["", "a:0", "a:x", ":2", "a,,b", "[2001:2::2", "[h1]:2", "[2001:2::2]x", "[2001:2::2]:0"] {
            assert!(parse_host_list(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn hostfiles() {
        let text = "# emulated hosts\n\nh1 slots=2\nh2:3   # three\n198.18.0.9\nns4 slots=1 max_slots=4 addr=198.18.1.4 site=east\n[2001:2::5] slots=2 net=2001:2::/48 if=v6a\n";
        let h = parse_hostfile("hf", text).unwrap();
        assert_eq!(
            h,
            vec![
                HostEntry::new("h1", 2),
                HostEntry::new("h2", 3),
                HostEntry::new("198.18.0.9", 1),
                HostEntry { name: "ns4".into(), slots: 1, addr: Some("198.18.1.4".into()), site: Some("east".into()), ..HostEntry::default() },
                HostEntry {
                    name: "2001:2::5".into(),
                    slots: 2,
                    addr: Some("2001:2::5".into()),
                    net: Some("2001:2::/48".into()),
                    iface: Some("v6a".into()),
                    ..HostEntry::default()
                },
            ]
        );
        let e = parse_hostfile("hf", "a net=10.0.0.0/99\n").unwrap_err().to_string();
        assert!(e.contains("line 1") && e.contains("not a network"), "{e}");
        let e = parse_hostfile("hf", "a\nb slots=zero\n").unwrap_err().to_string();
        assert!(e.contains("line 2"), "{e}");
        assert!(parse_hostfile("hf", "a colour=red\n").is_err());
        assert!(parse_hostfile("hf", "# nothing\n").is_err());
    }

    #[test]
    fn placement_fills_slots_in_order() {
        let hosts = parse_host_list("a:2,b:1").unwrap();
        let names = |p: Vec<Placement>| p.into_iter().map(|p| p.host).collect::<Vec<_>>();
        assert_eq!(names(place(&hosts, None, false).unwrap()), ["a", "a", "b"]);
        assert_eq!(names(place(&hosts, Some(2), false).unwrap()), ["a", "a"]);
        assert!(place(&hosts, Some(4), false).is_err());
        assert_eq!(names(place(&hosts, Some(4), true).unwrap()), ["a", "a", "b", "a"]);
        assert_eq!(names(place(&[], Some(2), false).unwrap()), ["localhost", "localhost"]);
        assert!(place(&[], None, false).is_err());
    }

    #[test]
    fn host_and_site_maps_number_in_order_of_appearance() {
        let hf = "b slots=2 site=west\na slots=1 site=east\nc slots=2 site=west\nd\n";
        let p = place(&parse_hostfile("hf", hf).unwrap(), None, false).unwrap();
        let (hosts, sites) = rank_maps(&p);
        assert_eq!(hosts, "0,0,1,2,2,3");
        assert_eq!(sites.as_deref(), Some("0,0,1,0,0,2"), "d names no site: a site of its own");
        let (hosts, sites) = rank_maps(&place(&[], Some(3), false).unwrap());
        assert_eq!((hosts.as_str(), sites), ("0,0,0", None));
    }

    #[test]
    fn local_names() {
        assert!(is_local("localhost") && is_local("127.0.0.1") && is_local(&own_hostname()));
        assert!(!is_local("ns1"));
        assert!(is_local("127.0.0.2"), "any loopback address");
        for i in wanmpi_bootstrap::route::interfaces().unwrap() {
            assert!(is_local(&i.addr.to_string()), "this machine's {} ({})", i.addr, i.name);
        }
        assert!(!is_local("192.0.2.77"), "a documentation address is nobody's here");
        assert!(!is_local("alice@127.0.0.1"), "a user named: ssh as that user");
    }
}
