//! The job's hosts as addresses, and which of this machine's addresses each
//! remote host reaches mpirun at (the key/value service's address per host).
//!
//! A remote host's address is its `addr=` (or its name, when that is an IP
//! address), else its name resolved here (only for agents such as ssh that
//! resolve it themselves; a `{host}` agent's host is a namespace's name).
//! Toward each, the kernel's route names our source address
//! (`wanmpi_bootstrap::route::source_toward`): that is the address the
//! host is told to connect to. Host names are the last resort, as a name
//! often resolves to loopback on the host itself.

use crate::hosts::{self, Placement};
use crate::ssh_config;
use std::collections::HashMap;
use std::net::{IpAddr, ToSocketAddrs};
use wanmpi_bootstrap::route::{self, AddrChoice};

/// Every distinct host of a job, in the order of `WANMPI_HOST_MAP`, with
/// its address when known (none for this machine's own names).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostAddrs(pub Vec<(String, Option<IpAddr>)>);

impl HostAddrs {
    /// `resolve_names`: look names up (what ssh will do anyway), a name
    /// DNS does not know through ssh's configuration (`agent`: the launch
    /// agent's words, `ssh_config`); else only IP addresses count.
    pub fn of(placements: &[Placement], resolve_names: bool, agent: &[String]) -> HostAddrs {
        let mut out: Vec<(String, Option<IpAddr>)> = Vec::new();
        for p in placements {
            let key = if hosts::is_local(&p.host) { "localhost" } else { p.host.as_str() };
            if out.iter().any(|(k, _)| k == key) {
                continue;
            }
            let addr = match key {
                "localhost" => None,
                _ => {
                    let m = hosts::machine(&p.host);
                    let named = || lookup(m).or_else(|| via_ssh(agent, &p.host));
                    literal(p.addr.as_deref()).or_else(|| literal(Some(m))).or_else(|| resolve_names.then(named).flatten())
                }
            };
            out.push((key.to_string(), addr));
        }
        HostAddrs(out)
    }

    pub fn any_ipv6(&self) -> bool {
        self.0.iter().any(|(_, a)| a.is_some_and(|a| a.is_ipv6()))
    }

    /// `WANMPI_HOST_ADDRS`: comma-separated by host index, empty where
    /// unknown; None when no address is known at all.
    pub fn render(&self) -> Option<String> {
        let any = self.0.iter().any(|(_, a)| a.is_some());
        any.then(|| self.0.iter().map(|(_, a)| a.map(|a| a.to_string()).unwrap_or_default()).collect::<Vec<_>>().join(","))
    }
}

fn literal(s: Option<&str>) -> Option<IpAddr> {
    s?.trim().trim_start_matches('[').trim_end_matches(']').parse().ok()
}

fn lookup(name: &str) -> Option<IpAddr> {
    let addrs: Vec<IpAddr> = (name, 0).to_socket_addrs().ok()?.map(|sa| sa.ip()).collect();
    // IPv4 first, as ssh's default AddressFamily any mostly ends up.
    addrs.iter().copied().find(IpAddr::is_ipv4).or(addrs.first().copied())
}

/// An alias of the user's ssh configuration: the address of the machine
/// ssh names for it.
fn via_ssh(agent: &[String], host: &str) -> Option<IpAddr> {
    let h = ssh_config::hostname(agent, host)?;
    literal(Some(&h)).or_else(|| lookup(&h))
}

/// The address this machine is reached at by each remote host: the job's
/// `--net`/`--if` address here when this machine has one of the host's
/// family, else the route's source toward the host. Hosts with no known
/// address or no route are left out (they get the host name).
pub fn kv_addresses(hosts: &HostAddrs, choice: &AddrChoice) -> HashMap<String, IpAddr> {
    let have = route::interfaces().unwrap_or_default();
    let mut out = HashMap::new();
    for (host, addr) in &hosts.0 {
        let Some(addr) = addr else { continue };
        let chosen = (!choice.is_empty())
            .then(|| {
                let same_family = have.iter().filter(|i| i.addr.is_ipv4() == addr.is_ipv4()).cloned().collect::<Vec<_>>();
                choice.pick(&same_family, "").ok()
            })
            .flatten();
        if let Some(src) = chosen.or_else(|| route::source_toward(*addr).ok()) {
            out.insert(host.clone(), src);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn place(host: &str, addr: Option<&str>) -> Placement {
        Placement { host: host.into(), addr: addr.map(str::to_string), ..Placement::default() }
    }

    #[test]
    fn hosts_in_map_order_with_what_is_known() {
        let p =
            [place("localhost", None), place("h1", Some("198.18.0.2")), place("h1", None), place("2001:2::3", Some("2001:2::3")), place("ns9", None)];
        let h = HostAddrs::of(&p, false, &[]);
        assert_eq!(h.0.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(), ["localhost", "h1", "2001:2::3", "ns9"]);
        assert_eq!(h.render().as_deref(), Some(",198.18.0.2,2001:2::3,"));
        assert!(h.any_ipv6());
        assert_eq!(HostAddrs::of(&[place("localhost", None)], true, &[]).render(), None);
    }

    #[test]
    fn a_user_at_host_is_looked_up_by_its_machine() {
        let h = HostAddrs::of(&[place("alice@127.0.0.3", None), place("bob@localhost", None)], true, &[]);
        assert_eq!(h.0[0], ("alice@127.0.0.3".to_string(), Some("127.0.0.3".parse().unwrap())));
        assert_eq!(h.0[1].1.map(|a| a.is_loopback()), Some(true), "{h:?}");
    }

    #[test]
    fn loopback_hosts_are_reached_over_loopback() {
        let h = HostAddrs(vec![("a".into(), Some("127.0.0.2".parse().unwrap())), ("b".into(), None)]);
        let kv = kv_addresses(&h, &AddrChoice::default());
        assert_eq!(kv.get("a").map(|a| a.is_loopback()), Some(true));
        assert!(!kv.contains_key("b"));
    }
}
