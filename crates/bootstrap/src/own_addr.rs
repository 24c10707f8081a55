//! The address a rank publishes for its peers (`JobEnv::addr`), which
//! every transport (tcp, sctp, wamp) binds and advertises.
//!
//! In order: `WANMPI_ADDR` as given; the address `WANMPI_IF` and/or
//! `WANMPI_NET` name (an error naming this host and its addresses when
//! none fits); the source of the route toward most of the other hosts of
//! the job (`WANMPI_HOST_ADDRS`, as mpirun resolved them) and toward
//! mpirun's key/value service; for a job that spans hosts with no route
//! known, the first address that is not loopback (an error naming the
//! rank, its host and the fix when there is none); else none (transports
//! then use loopback, right for a job on one host).

use crate::route::{self, AddrChoice};
use crate::{BootstrapAddr, BootstrapError, ENV_ADDR};
use std::net::{IpAddr, ToSocketAddrs};

/// A network (CIDR) in which each rank takes its address (`mpirun --net`,
/// `net=` in a hostfile).
pub const ENV_NET: &str = "WANMPI_NET";
/// An interface whose address each rank takes (`mpirun --if`, `if=`).
pub const ENV_IF: &str = "WANMPI_IF";
/// Each host's address as mpirun knows it, by host index (the order of
/// `WANMPI_HOST_MAP`), comma-separated, empty where unknown: what a rank
/// routes toward to choose its own.
pub const ENV_HOST_ADDRS: &str = "WANMPI_HOST_ADDRS";
/// The host index of every rank, comma-separated in rank order.
pub const ENV_HOST_MAP: &str = "WANMPI_HOST_MAP";

/// Chooses the address to publish from the launcher's variables (`get`),
/// this rank's number and its bootstrap address.
pub fn choose(get: impl Fn(&str) -> Option<String>, rank: u32, bootstrap: &str) -> Result<Option<String>, BootstrapError> {
    if let Some(a) = given(&get)? {
        return Ok(Some(a));
    }
    if let Some(a) = routed(&get, rank, bootstrap) {
        return Ok(Some(a.to_string()));
    }
    let hosts: Vec<String> = get(ENV_HOST_MAP).unwrap_or_default().split(',').map(|s| s.trim().to_string()).collect();
    let mut distinct = hosts.clone();
    distinct.sort();
    distinct.dedup();
    if distinct.len() > 1 {
        return last_resort(rank, &route::hostname(), distinct.len(), &route::interfaces()?).map(Some);
    }
    Ok(None)
}

/// The source of the route toward most of the other hosts of the job
/// (`WANMPI_HOST_ADDRS`) and toward mpirun's key/value service; None when
/// every such route is loopback or none is known.
pub fn routed(get: &impl Fn(&str) -> Option<String>, rank: u32, bootstrap: &str) -> Option<IpAddr> {
    let hosts: Vec<String> = get(ENV_HOST_MAP).unwrap_or_default().split(',').map(|s| s.trim().to_string()).collect();
    let own = hosts.get(rank as usize).cloned();
    let mut targets: Vec<IpAddr> = Vec::new();
    if let Some(list) = get(ENV_HOST_ADDRS) {
        for (i, a) in list.split(',').enumerate() {
            let is_own = own.as_deref() == Some(i.to_string().as_str());
            if let (false, Ok(ip)) = (is_own, a.trim().trim_start_matches('[').trim_end_matches(']').parse::<IpAddr>()) {
                targets.push(ip);
            }
        }
    }
    if let Ok(BootstrapAddr::Tcp(h, port)) = BootstrapAddr::parse(bootstrap) {
        // Resolving is what connecting to the service does next anyway.
        if let Some(sa) = (h.as_str(), port).to_socket_addrs().ok().and_then(|mut a| a.next()) {
            targets.push(sa.ip());
        }
    }
    route::by_route(&targets, |t| route::source_toward(t).ok())
}

/// A job across `hosts` hosts with no route known: this host's first global
/// address, or an error naming the rank, its host and the fix when it has
/// only loopback (its peers would retry 127.0.0.1 until setup times out).
fn last_resort(rank: u32, host: &str, hosts: usize, have: &[route::IfaceAddr]) -> Result<String, BootstrapError> {
    route::first_global(have).map(|a| a.to_string()).ok_or_else(|| {
        BootstrapError::Unreachable(format!(
            "rank {rank} on host {host} has only loopback to publish, but the job spans {hosts} hosts: the others could not reach it. \
             Give the hosts' network or interface (mpirun --net CIDR or --if NAME, net= or if= in the hostfile) or an address (addr=)"
        ))
    })
}

/// The address the user chose, if any: `WANMPI_ADDR` as given, else the
/// address `WANMPI_IF` and/or `WANMPI_NET` name here (an error naming this
/// host and its addresses when none fits). Shared by mpirun's ranks and
/// those Slurm starts over PMI-2.
pub fn given(get: &impl Fn(&str) -> Option<String>) -> Result<Option<String>, BootstrapError> {
    if let Some(a) = get(ENV_ADDR).map(|a| a.trim().to_string()).filter(|a| !a.is_empty()) {
        return Ok(Some(a));
    }
    let nonempty = |k: &str| get(k).map(|v| v.trim().to_string()).filter(|v| !v.is_empty());
    let net = nonempty(ENV_NET).map(|n| route::parse_net(&n).map_err(|problem| BootstrapError::BadEnv { var: ENV_NET, problem })).transpose()?;
    let choice = AddrChoice { net, iface: nonempty(ENV_IF) };
    if choice.is_empty() {
        return Ok(None);
    }
    let var = if choice.iface.is_some() { ENV_IF } else { ENV_NET };
    let have = route::interfaces()?;
    choice.pick(&have, &route::hostname()).map(|a| Some(a.to_string())).map_err(|problem| BootstrapError::BadEnv { var, problem })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn with(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let m: HashMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        move |k| m.get(k).cloned()
    }

    #[test]
    fn given_addresses_win_and_a_job_on_one_host_stays_on_loopback() {
        let a = choose(with(&[(ENV_ADDR, "198.18.0.5"), (ENV_NET, "10.0.0.0/8")]), 0, "unix:/x").unwrap();
        assert_eq!(a.as_deref(), Some("198.18.0.5"));
        assert_eq!(choose(with(&[(ENV_HOST_MAP, "0,0")]), 1, "unix:/x").unwrap(), None);
        assert_eq!(choose(with(&[]), 0, "tcp:127.0.0.1:9").unwrap(), None, "loopback routes never count");
    }

    #[test]
    fn loopback_alone_on_several_hosts_is_an_error_naming_rank_host_and_fix() {
        let lo = [route::IfaceAddr { name: "lo".into(), addr: "127.0.0.1".parse().unwrap() }];
        let e = last_resort(5, "h3", 3, &lo).unwrap_err().to_string();
        assert!(e.contains("rank 5 on host h3 has only loopback") && e.contains("3 hosts") && e.contains("--net"), "{e}");
        let eth = [route::IfaceAddr { name: "eth0".into(), addr: "198.18.0.3".parse().unwrap() }];
        assert_eq!(last_resort(5, "h3", 3, &[lo[0].clone(), eth[0].clone()]).unwrap(), "198.18.0.3");
    }

    #[test]
    fn networks_pick_or_fail_naming_the_host() {
        let a = choose(with(&[(ENV_NET, "127.0.0.0/8")]), 0, "unix:/x").unwrap();
        assert_eq!(a.as_deref(), Some("127.0.0.1"));
        let e = choose(with(&[(ENV_NET, "240.0.0.0/8")]), 0, "unix:/x").unwrap_err().to_string();
        assert!(e.contains("WANMPI_NET") && e.contains(&route::hostname()) && e.contains("127.0.0.1"), "{e}");
        let e = choose(with(&[(ENV_IF, "no-such-if0")]), 0, "unix:/x").unwrap_err().to_string();
        assert!(e.contains("WANMPI_IF") && e.contains("no interface no-such-if0"), "{e}");
        assert!(choose(with(&[(ENV_NET, "nonsense")]), 0, "unix:/x").is_err());
    }
}
