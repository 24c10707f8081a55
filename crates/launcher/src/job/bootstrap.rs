//! Choosing where the key/value service listens, and starting it.
//!
//! With remote hosts it listens on every address and tells each host the
//! one that host reaches this machine at, by route (`routes`): a host
//! name may resolve to loopback where the ranks run. Across NAT that route's
//! source is private and the far side cannot dial it, so each host also gets
//! alternatives (`WANMPI_BOOTSTRAP_ALT`): the hostfile's `addr=` for this
//! machine when it is listed, and the routed address when `--bootstrap
//! tcp:ADDR` was given; the remote step adds the address ssh's far side
//! sees its client at, and the rank dials them all
//! (`wanmpi_bootstrap::service_addrs`). A given `tcp:ADDR:PORT` whose
//! address is on no interface here (this machine's public address behind
//! a 1:1 NAT) is listened for on the wildcard and advertised as given.

use crate::error::LaunchError;
use crate::hosts::{self, Placement};
use crate::routes::{self, HostAddrs};
use crate::spec::{BootstrapChoice, JobSpec};
use std::collections::HashMap;
use std::net::IpAddr;
use std::os::unix::fs::DirBuilderExt;
use std::path::PathBuf;
use wanmpi_bootstrap::route::{self, AddrChoice};
use wanmpi_bootstrap::server::Sink;
use wanmpi_bootstrap::{BootstrapAddr, PortRange, Server, ServerConfig, ENV_IF, ENV_NET};

/// The running service and the private directory of its socket, removed
/// together when the job ends.
pub struct Service {
    server: Server,
    dir: Option<PathBuf>,
    /// The address each host connects to, where it is not `address()`.
    per_host: HashMap<String, String>,
    /// Further addresses each host may reach the service at.
    alternates: HashMap<String, Vec<String>>,
    hosts: HostAddrs,
}

impl Service {
    /// The address ranks on `host` connect to (`WANMPI_BOOTSTRAP`).
    pub fn address_for(&self, host: &str) -> &str {
        let key = if hosts::is_local(host) { "localhost" } else { host };
        self.per_host.get(key).map(String::as_str).unwrap_or_else(|| self.server.address())
    }

    /// `WANMPI_BOOTSTRAP_ALT` for the ranks on `host`, when it has any.
    pub fn alternates_for(&self, host: &str) -> Option<String> {
        let key = if hosts::is_local(host) { "localhost" } else { host };
        self.alternates.get(key).filter(|v| !v.is_empty()).map(|v| v.join(","))
    }

    /// `WANMPI_HOST_ADDRS` for the ranks, when any host's address is known.
    pub fn host_addrs(&self) -> Option<String> {
        self.hosts.render()
    }
    pub fn notes(&self) -> wanmpi_bootstrap::Notes {
        self.server.notes()
    }
    pub fn deaths(&self) -> wanmpi_bootstrap::Deaths {
        self.server.deaths()
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        self.server.shutdown();
        if let Some(d) = self.dir.take() {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}

/// The job's `--net`/`--if` (or `-x WANMPI_NET=...`), as the ranks get them.
fn job_choice(spec: &JobSpec) -> AddrChoice {
    let get = |k: &str| {
        let given = spec.env.iter().rev().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        given.or_else(|| spec.pass_wanmpi_env.then(|| std::env::var(k).ok()).flatten()).filter(|v| !v.trim().is_empty())
    };
    AddrChoice { net: get(ENV_NET).and_then(|n| route::parse_net(&n).ok()), iface: get(ENV_IF) }
}

/// Starts the service for a job of `size` ranks; a TCP service on a port
/// of its own choosing takes it in `port_range`.
pub fn start(
    spec: &JobSpec,
    job_id: &str,
    placements: &[Placement],
    (size, port_range): (u32, Option<PortRange>),
    secret: [u8; 32],
    sink: Sink,
) -> Result<Service, LaunchError> {
    let all_local = placements.iter().all(|p| hosts::is_local(&p.host));
    // `{host}` agents (ip netns exec) run on this machine and share its
    // files; their hosts are namespaces, whose names mean nothing to DNS.
    let netns_agent = spec.launch_agent.contains("{host}");
    let shared_fs = all_local || netns_agent;
    let hosts = if all_local { HostAddrs::default() } else { HostAddrs::of(placements, !netns_agent, &spec.agent_words()) };
    let mut dir = None;
    // Listening on every address, IPv6 too when a host has only that.
    let wildcard = if hosts.any_ipv6() { "::" } else { "0.0.0.0" };
    let mut advertised = None;
    let bind = match &spec.bootstrap {
        BootstrapChoice::Unix => unix_in_private_dir(job_id, &mut dir)?,
        BootstrapChoice::Auto if shared_fs => unix_in_private_dir(job_id, &mut dir)?,
        BootstrapChoice::Tcp | BootstrapChoice::Auto if all_local => BootstrapAddr::Tcp("127.0.0.1".into(), 0),
        BootstrapChoice::Tcp | BootstrapChoice::Auto => BootstrapAddr::Tcp(wildcard.into(), 0),
        BootstrapChoice::Address(a) => match BootstrapAddr::parse(a)? {
            // On no interface here (a public address a 1:1 NAT maps to
            // this machine): nothing can bind it; listen on the wildcard
            // of its family and tell the hosts the address as given.
            BootstrapAddr::Tcp(h, port) if h.parse::<IpAddr>().is_ok_and(|ip| !hosts::is_local(&ip.to_string())) => {
                advertised = Some(BootstrapAddr::Tcp(h.clone(), port));
                let any = if h.contains(':') { "::" } else { "0.0.0.0" };
                BootstrapAddr::Tcp(any.into(), port)
            }
            other => other,
        },
    };
    let routed = matches!(&bind, BootstrapAddr::Tcp(h, _) if h == "0.0.0.0" || h == "::");
    let mut config = ServerConfig::new(size, secret);
    if let Some(t) = spec.bootstrap_timeout {
        config.fence_timeout = t;
    }
    config.advertise_host = Some(hosts::own_hostname()).filter(|h| !h.is_empty());
    config.port_range = port_range;
    let server = match Server::start(&bind, config, sink) {
        Ok(s) => s,
        Err(e) => {
            if let Some(d) = dir {
                let _ = std::fs::remove_dir_all(d);
            }
            return Err(e.into());
        }
    };
    let (mut per_host, mut alternates) = (HashMap::new(), HashMap::new());
    if routed {
        if let Ok(BootstrapAddr::Tcp(_, port)) = BootstrapAddr::parse(server.address()) {
            // The hostfile's address for this machine, when it lists it.
            let own = placements
                .iter()
                .filter(|p| hosts::is_local(&p.host))
                .find_map(|p| p.addr.as_deref()?.trim_matches(['[', ']']).parse::<IpAddr>().ok());
            let remote: Vec<String> = hosts.0.iter().map(|(h, _)| h.clone()).filter(|h| h != "localhost").collect();
            let routes = routes::kv_addresses(&hosts, &job_choice(spec));
            (per_host, alternates) = plan(&remote, &routes, advertised.as_ref(), own, port, bind_is_v6(&bind));
        }
    }
    Ok(Service { server, dir, per_host, alternates, hosts })
}

/// Per host, the service's address (`WANMPI_BOOTSTRAP`) and its
/// alternatives (`WANMPI_BOOTSTRAP_ALT`), from: the remote hosts, the
/// route's source toward each (where known), the address given with
/// `--bootstrap` when it is on no interface here, this machine's
/// hostfile address and the service's port. Ranks here get loopback.
type Plan = (HashMap<String, String>, HashMap<String, Vec<String>>);
fn plan(remote: &[String], routes: &HashMap<String, IpAddr>, advertised: Option<&BootstrapAddr>, own: Option<IpAddr>, port: u16, v6: bool) -> Plan {
    let at = |ip: IpAddr| BootstrapAddr::Tcp(ip.to_string(), port).render();
    let (mut per_host, mut alternates) = (HashMap::new(), HashMap::new());
    for host in remote {
        let routed = routes.get(host).copied();
        let mut alts: Vec<String> = vec![];
        let first = match (advertised, routed) {
            (Some(a), r) => {
                alts.extend(r.map(at));
                Some(a.render())
            }
            (None, r) => r.map(at),
        };
        alts.extend(own.map(at));
        if let Some(f) = &first {
            alts.retain(|a| a != f);
            per_host.insert(host.clone(), f.clone());
        }
        let mut seen = std::collections::HashSet::new();
        alts.retain(|a| seen.insert(a.clone()));
        if !alts.is_empty() {
            alternates.insert(host.clone(), alts);
        }
    }
    let lo: IpAddr = if v6 { std::net::Ipv6Addr::LOCALHOST.into() } else { std::net::Ipv4Addr::LOCALHOST.into() };
    per_host.insert("localhost".into(), at(lo));
    (per_host, alternates)
}

fn bind_is_v6(b: &BootstrapAddr) -> bool {
    matches!(b, BootstrapAddr::Tcp(h, _) if h.contains(':'))
}

/// A socket in a new directory only we can enter.
fn unix_in_private_dir(job_id: &str, dir: &mut Option<PathBuf>) -> Result<BootstrapAddr, LaunchError> {
    const SOCK: &str = "kv.sock";
    let d = crate::socket_dir::path_for(&format!("wanmpi-{job_id}"), SOCK.len());
    std::fs::DirBuilder::new().mode(0o700).create(&d)?;
    let sock = d.join(SOCK);
    *dir = Some(d);
    Ok(BootstrapAddr::Unix(sock))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn each_host_gets_its_route_then_the_hostfiles_address_for_this_machine() {
        let remote = vec!["h1".to_string(), "h2".to_string()];
        let routes = HashMap::from([("h1".to_string(), ip("10.0.0.1")), ("h2".to_string(), ip("198.18.0.1"))]);
        let (per, alt) = plan(&remote, &routes, None, Some(ip("198.18.0.1")), 4000, false);
        assert_eq!(per["h1"], "tcp:10.0.0.1:4000");
        assert_eq!(alt["h1"], ["tcp:198.18.0.1:4000"]);
        assert_eq!(per["h2"], "tcp:198.18.0.1:4000");
        assert!(!alt.contains_key("h2"), "no alternative equal to the address itself");
        assert_eq!(per["localhost"], "tcp:127.0.0.1:4000");
    }

    #[test]
    fn a_given_public_address_comes_first_and_the_route_stays_an_alternative() {
        let remote = vec!["h1".to_string(), "h9".to_string()];
        let routes = HashMap::from([("h1".to_string(), ip("10.0.0.1"))]);
        let given = BootstrapAddr::Tcp("198.18.0.1".into(), 4000);
        let (per, alt) = plan(&remote, &routes, Some(&given), None, 4000, true);
        assert_eq!(per["h1"], "tcp:198.18.0.1:4000");
        assert_eq!(alt["h1"], ["tcp:10.0.0.1:4000"]);
        assert_eq!(per["h9"], "tcp:198.18.0.1:4000", "a host with no route known");
        assert!(!alt.contains_key("h9"));
        assert_eq!(per["localhost"], "tcp:[::1]:4000");
        // No route, nothing given: the service's own address (unchanged),
        // the hostfile's as an alternative.
        let (per, alt) = plan(&remote, &HashMap::new(), None, Some(ip("198.18.0.1")), 4000, false);
        assert!(!per.contains_key("h9"));
        assert_eq!(alt["h9"], ["tcp:198.18.0.1:4000"]);
    }
}
