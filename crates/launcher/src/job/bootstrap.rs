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
    let mut per_host = HashMap::new();
    let mut alternates: HashMap<String, Vec<String>> = HashMap::new();
    if routed {
        if let Ok(BootstrapAddr::Tcp(_, port)) = BootstrapAddr::parse(server.address()) {
            let at = |ip: IpAddr| BootstrapAddr::Tcp(ip.to_string(), port).render();
            // The hostfile's address for this machine, when it lists it.
            let own = placements
                .iter()
                .filter(|p| hosts::is_local(&p.host))
                .find_map(|p| p.addr.as_deref()?.trim_matches(['[', ']']).parse::<IpAddr>().ok());
            for (host, src) in routes::kv_addresses(&hosts, &job_choice(spec)) {
                let alts = alternates.entry(host.clone()).or_default();
                match &advertised {
                    Some(a) => {
                        per_host.insert(host, a.render());
                        alts.push(at(src));
                    }
                    None => {
                        per_host.insert(host, at(src));
                    }
                }
                alts.extend(own.filter(|o| *o != src).map(at));
            }
            // Hosts with no route known get the given address, if any.
            if let Some(a) = &advertised {
                for (host, _) in hosts.0.iter().filter(|(h, _)| h != "localhost") {
                    per_host.entry(host.clone()).or_insert_with(|| a.render());
                    alternates.entry(host.clone()).or_default().extend(own.map(at));
                }
            }
            // Ranks on this machine come over loopback.
            let lo: IpAddr = if bind_is_v6(&bind) { std::net::Ipv6Addr::LOCALHOST.into() } else { std::net::Ipv4Addr::LOCALHOST.into() };
            per_host.insert("localhost".into(), at(lo));
        }
    }
    for v in alternates.values_mut() {
        let mut seen = std::collections::HashSet::new();
        v.retain(|a| seen.insert(a.clone()));
    }
    Ok(Service { server, dir, per_host, alternates, hosts })
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
