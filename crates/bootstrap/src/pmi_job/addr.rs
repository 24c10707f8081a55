//! The address a rank started by `srun --mpi=pmi2`/`pmix` publishes, chosen as
//! mpirun's ranks choose theirs (`own_addr`), with the other nodes learnt
//! through the process manager's key/value space instead of from mpirun.
//!
//! At the first fence every rank publishes its host name and its usable
//! addresses (`HOST ADDR,ADDR`: neither loopback nor link-local, at most
//! `MAX_PUBLISHED`). After it, a rank takes, in order: what the user gave
//! (`WANMPI_ADDR`, `WANMPI_IF`, `WANMPI_NET`, as under mpirun); on a job
//! of one node, nothing (loopback, and shared memory under `auto`); else the
//! source of the kernel's route toward most of the other nodes' addresses
//! (its own addresses left out: two nodes may both carry a docker0's
//! 172.17.0.1), else its first global address. A job that spans nodes and
//! leaves a rank only loopback is an error naming the rank, its node and
//! the fix: its peers would otherwise retry 127.0.0.1 until they time out.

use crate::route::{self, IfaceAddr};
use crate::BootstrapError;
use std::net::IpAddr;

/// Addresses a rank publishes for routing, at most (the value must fit
/// Slurm's 1024 bytes).
const MAX_PUBLISHED: usize = 16;

/// One rank's host as published: its name and usable addresses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostInfo {
    pub name: String,
    pub addrs: Vec<IpAddr>,
}

fn usable(a: &IpAddr) -> bool {
    let link_local = matches!(a, IpAddr::V6(v6) if (v6.segments()[0] & 0xffc0) == 0xfe80);
    !a.is_loopback() && !a.is_unspecified() && !link_local
}

impl HostInfo {
    /// This host: its name (`;` replaced, as the wire forbids it) and its
    /// interfaces' usable addresses, IPv4 first.
    pub fn here(name: &str, have: &[IfaceAddr]) -> HostInfo {
        let mut addrs: Vec<IpAddr> = have.iter().map(|i| i.addr).filter(usable).collect();
        addrs.sort_by_key(|a| !a.is_ipv4());
        addrs.dedup();
        addrs.truncate(MAX_PUBLISHED);
        HostInfo { name: name.replace([';', ' '], "_"), addrs }
    }

    /// `HOST ADDR,ADDR` (the host alone when it has no usable address).
    pub fn encode(&self) -> String {
        let list: Vec<String> = self.addrs.iter().map(IpAddr::to_string).collect();
        format!("{} {}", self.name, list.join(",")).trim_end().to_string()
    }

    /// The inverse of `encode`; addresses that do not parse are skipped
    /// (a peer's value is input, not trusted to be well formed).
    pub fn decode(text: &str) -> HostInfo {
        let (name, list) = text.trim().split_once(' ').unwrap_or((text.trim(), ""));
        HostInfo { name: name.to_string(), addrs: list.split(',').filter_map(|a| a.trim().parse().ok()).filter(usable).collect() }
    }
}

/// The address to publish. `given` is the user's choice (`own_addr::given`),
/// `hosts` every distinct host of the job (first appearance order), `own`
/// the index of this rank's host in it, `route` the kernel's source toward
/// an address, `have` this host's interfaces.
pub fn choose(
    rank: u32,
    given: Option<String>,
    hosts: &[HostInfo],
    own: usize,
    have: &[IfaceAddr],
    route: impl Fn(IpAddr) -> Option<IpAddr>,
) -> Result<Option<String>, BootstrapError> {
    let spans = hosts.len() > 1;
    let chosen = match given {
        Some(a) => Some(a),
        None if !spans => return Ok(None),
        None => {
            let mine: Vec<IpAddr> = have.iter().map(|i| i.addr).collect();
            let targets: Vec<IpAddr> = hosts
                .iter()
                .enumerate()
                .filter(|(i, _)| *i != own)
                .flat_map(|(_, h)| h.addrs.iter().copied())
                .filter(|a| usable(a) && !mine.contains(a))
                .collect();
            route::by_route(&targets, route).or_else(|| route::first_global(have)).map(|a| a.to_string())
        }
    };
    let loopback =
        chosen.as_deref().is_none_or(|a| a.trim_start_matches('[').trim_end_matches(']').parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback()));
    if spans && loopback {
        let node = hosts.get(own).map_or("?", |h| h.name.as_str());
        let names: Vec<&str> = hosts.iter().map(|h| h.name.as_str()).collect();
        let what = chosen.map_or_else(|| "has only loopback to publish".to_string(), |a| format!("was given the loopback address {a}"));
        return Err(BootstrapError::Unreachable(format!(
            "rank {rank} on node {node} {what}, but the job spans {} nodes ({}): the other nodes could not reach it. \
             Name the nodes' network in the job's environment, e.g. `srun --export=ALL,WANMPI_NET=10.1.0.0/16 ...` \
             (or WANMPI_IF=<interface>, or WANMPI_ADDR per rank)",
            hosts.len(),
            names.join(", ")
        )));
    }
    Ok(chosen)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn ifs(list: &[(&str, &str)]) -> Vec<IfaceAddr> {
        list.iter().map(|(n, a)| IfaceAddr { name: n.to_string(), addr: ip(a) }).collect()
    }

    fn host(name: &str, addrs: &[&str]) -> HostInfo {
        HostInfo { name: name.into(), addrs: addrs.iter().map(|a| ip(a)).collect() }
    }

    /// The routing table of node 2: 10.1.0.0/16 on eth0, docker0 local.
    fn table(t: IpAddr) -> Option<IpAddr> {
        match t.to_string().as_str() {
            a if a.starts_with("10.1.") => Some(ip("10.1.0.2")),
            "172.17.0.1" => Some(ip("172.17.0.1")),
            _ => Some(ip("192.0.2.2")),
        }
    }

    #[test]
    fn hosts_travel_as_one_value_and_loopback_never() {
        let h = HostInfo::here("wn1", &ifs(&[("lo", "127.0.0.1"), ("lo", "::1"), ("e", "fe80::1"), ("v6", "2001:db8::1"), ("e", "10.1.0.1")]));
        assert_eq!(h.encode(), "wn1 10.1.0.1,2001:db8::1");
        assert_eq!(HostInfo::decode(&h.encode()), h);
        assert_eq!(HostInfo::decode("wn9"), host("wn9", &[]));
        assert_eq!(HostInfo::decode("wn9 127.0.0.1,junk,10.1.0.9"), host("wn9", &["10.1.0.9"]));
    }

    #[test]
    fn a_node_routes_toward_the_others_not_its_own_bridge() {
        let hosts = [host("wn1", &["172.17.0.1", "10.1.0.1"]), host("wn2", &["172.17.0.1", "10.1.0.2"]), host("wn3", &["10.1.0.3"])];
        let have = ifs(&[("lo", "127.0.0.1"), ("docker0", "172.17.0.1"), ("eth0", "10.1.0.2")]);
        assert_eq!(choose(1, None, &hosts, 1, &have, table).unwrap().as_deref(), Some("10.1.0.2"));
        // What the user gave wins; one node needs no address.
        assert_eq!(choose(1, Some("10.1.0.77".into()), &hosts, 1, &have, table).unwrap().as_deref(), Some("10.1.0.77"));
        assert_eq!(choose(1, None, &hosts[..1], 0, &have, table).unwrap(), None);
    }

    #[test]
    fn loopback_only_on_several_nodes_names_the_rank_the_node_and_the_fix() {
        let hosts = [host("wn1", &["10.1.0.1"]), host("wn2", &[])];
        let lo = ifs(&[("lo", "127.0.0.1")]);
        let e = choose(4, None, &hosts, 1, &lo, |_| Some(ip("127.0.0.1"))).unwrap_err().to_string();
        assert!(e.contains("rank 4 on node wn2 has only loopback") && e.contains("2 nodes (wn1, wn2)") && e.contains("WANMPI_NET"), "{e}");
        let e = choose(0, Some("127.0.0.1".into()), &hosts, 0, &lo, |_| None).unwrap_err().to_string();
        assert!(e.contains("rank 0 on node wn1 was given the loopback address 127.0.0.1"), "{e}");
        // On one node loopback is right.
        assert_eq!(choose(0, Some("127.0.0.1".into()), &hosts[..1], 0, &lo, |_| None).unwrap().as_deref(), Some("127.0.0.1"));
    }
}
