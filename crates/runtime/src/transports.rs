//! Choosing and connecting the transport named by WANMPI_TRANSPORT. This is
//! the one place above the transports that names them.
//!
//! `auto` (the default) is the transport per peer: shared memory to ranks on
//! this host, tcp to the other hosts of this site, and the WAN transport
//! (`WANMPI_WAN_TRANSPORT`, wamp unless told) to other sites, joined in one
//! `Composite` whose route is fixed per peer from the launcher's host and
//! site maps. Where the launcher gave no site map and the WAN transport is
//! not tcp, both tcp and the WAN transport reach every other host and the
//! measured round trip picks (as `adaptive` does). Every other name is one
//! transport for every peer, as the papers' experiments need.

use crate::sites::SiteMap;
use wanmpi_bootstrap::{JobEnv, KeyValue};
use wanmpi_engine::{ErrorClass, MpiError, MpiResult};
use wanmpi_transport::{Transport, TransportError};
use wanmpi_transport_composite::{AdaptiveRoute, Composite, PerPeerRoute, Reach};
use wanmpi_transport_shm::ShmOptions;

/// Transports this build knows, for error messages and `--help`.
pub const KNOWN: &[&str] = &["auto", "tcp", "sctp", "wamp", "adaptive", "shm"];
/// What may carry traffic between sites under `auto`.
pub const WAN_KNOWN: &[&str] = &["tcp", "sctp", "wamp", "adaptive"];
/// Names the WAN transport of `auto`.
pub const ENV_WAN_TRANSPORT: &str = "WANMPI_WAN_TRANSPORT";
/// The WAN transport unless told: on the plain-MPI farm across 20 and 80 ms,
/// lossy or not, wamp to far peers beat tcp in every cell measured
/// (docs/benchmarks.md "WAN farm" and "Ping-pong across the emulator").
pub const DEFAULT_WAN: &str = "wamp";
/// `0` keeps `auto` off shared memory (ranks of one host use tcp).
pub const ENV_SHM: &str = "WANMPI_SHM";

type Connected = Result<Box<dyn Transport>, TransportError>;

fn tcp(env: &JobEnv, kv: &mut dyn KeyValue) -> Connected {
    let mut opts = wanmpi_transport_tcp::TcpOptions::from_env()?;
    if opts.publish_addr.is_none() {
        opts.publish_addr = env.addr.clone();
    }
    // Which connections are sealed depends on where the peers run: never
    // between ranks of one host, and under --insecure-lan only between sites.
    let place = Placement::from_env(env.size).map_err(|e| TransportError::Setup(e.to_string()))?;
    opts.maps = wanmpi_transport_tcp::Maps { host: Some(place.host), site: place.site };
    Ok(Box::new(wanmpi_transport_tcp::TcpTransport::connect(kv, env.secret, opts)?))
}

fn sctp(env: &JobEnv, kv: &mut dyn KeyValue) -> Connected {
    let mut opts = wanmpi_transport_sctp::SctpOptions::from_env()?;
    // Sealed as tcp is: by where the peers run.
    let place = Placement::from_env(env.size).map_err(|e| TransportError::Setup(e.to_string()))?;
    opts.maps = wanmpi_transport_sctp::Maps { host: Some(place.host), site: place.site };
    if std::env::var_os("WANMPI_SCTP_PUBLISH_ADDR").is_none() {
        if let Some(a) = env.addr.as_deref().and_then(|a| a.parse().ok()) {
            opts.publish_addr = a;
        }
    }
    Ok(Box::new(wanmpi_transport_sctp::SctpTransport::connect(kv, env.secret, opts)?))
}

fn wamp(env: &JobEnv, kv: &mut dyn KeyValue) -> Connected {
    let mut opts = wanmpi_transport_wamp::WampOptions::from_env()?;
    if std::env::var_os("WANMPI_WAMP_PUBLISH_ADDR").is_none() {
        if let Some(a) = env.addr.as_deref().and_then(|a| a.parse().ok()) {
            opts.publish_addr = a;
        }
    }
    Ok(Box::new(wanmpi_transport_wamp::WampTransport::connect(kv, env.secret, opts)?))
}

/// The WAMP paper's adaptive transport: tcp and wamp to every peer, each
/// frame over the one the measured path favours
/// (wanmpi_transport_composite::adaptive).
fn adaptive(env: &JobEnv, kv: &mut dyn KeyValue) -> Connected {
    let parts = vec![tcp(env, kv)?, wamp(env, kv)?];
    Ok(Box::new(Composite::new("adaptive", parts, Box::new(AdaptiveRoute::new(0, 1)))?))
}

/// Shared memory to the ranks of `local` (this rank's host): the ranks of
/// the host meet through the key/value service (one fence of the whole job
/// when `local` has another rank), nothing is named on the host.
fn shm(kv: &mut dyn KeyValue, local: &[u32]) -> Connected {
    let mut opts = ShmOptions::from_env()?;
    if std::env::var_os(wanmpi_transport_shm::ENV_ARM_AFTER).is_none() {
        // The runtime calls prepare_sleep before every sleep.
        opts.arm_after = ShmOptions::ARM_ONLY_BEFORE_SLEEP;
    }
    Ok(Box::new(wanmpi_transport_shm::setup(kv, local, &opts)?))
}

fn named(name: &str, env: &JobEnv, kv: &mut dyn KeyValue) -> Connected {
    match name {
        "tcp" => tcp(env, kv),
        "sctp" => sctp(env, kv),
        "wamp" => wamp(env, kv),
        "adaptive" => adaptive(env, kv),
        other => Err(TransportError::Setup(format!("no transport {other:?}"))),
    }
}

/// Where every rank runs, as the launcher said: host and (if known) site.
pub struct Placement {
    pub host: Vec<u32>,
    pub site: Option<Vec<u32>>,
}

impl Placement {
    /// From `WANMPI_HOST_MAP` and `WANMPI_SITE_MAP`; without a host map
    /// every rank counts as its own host (no shared memory).
    pub fn from_env(size: u32) -> MpiResult<Placement> {
        let host = match std::env::var("WANMPI_HOST_MAP") {
            Ok(v) if !v.trim().is_empty() => SiteMap::parse("WANMPI_HOST_MAP", &v, size)?.indices().to_vec(),
            _ => (0..size).collect(),
        };
        let site = SiteMap::from_env(size)?.map(|m| m.indices().to_vec());
        Ok(Placement { host, site })
    }

    /// Ranks on the most crowded host.
    fn largest_host(&self) -> usize {
        let mut count = std::collections::HashMap::new();
        for h in &self.host {
            *count.entry(*h).or_insert(0usize) += 1;
        }
        count.into_values().max().unwrap_or(1)
    }

    fn same_host(&self, a: u32, b: u32) -> bool {
        self.host[a as usize] == self.host[b as usize]
    }

    /// Whether a and b share a site: `None` when no site map was given.
    fn same_site(&self, a: u32, b: u32) -> Option<bool> {
        self.site.as_ref().map(|s| s[a as usize] == s[b as usize])
    }
}

/// What `auto` builds, decided from the placement alone so that every rank
/// connects the same network transports in the same order (each setup
/// fences the whole job).
#[derive(Debug, PartialEq, Eq)]
pub struct Plan {
    /// This rank's host (itself included) when shared memory is on and
    /// another rank shares the host.
    pub shm: Option<Vec<u32>>,
    /// Network transports to connect, in order (names from `WAN_KNOWN`).
    pub net: Vec<String>,
    /// Per peer: the index of its part among [shm?, net...], or near/far.
    pub reach: Vec<Reach>,
    /// Whether this rank's parts go into a `Composite`, decided for the whole
    /// job: the composite prefixes every frame, so a rank with one part must
    /// still wrap it when a peer of it wraps.
    pub composite: bool,
    /// Some host of the job runs ranks over shared memory.
    pub shm_somewhere: bool,
}

pub fn plan(rank: u32, place: &Placement, wan: &str, use_shm: bool) -> Plan {
    // Without sites, every remote peer already goes near or far by the
    // adaptive rule: adaptive (tcp + wamp) as the far part would only add a
    // second tcp.
    let wan = if wan == "adaptive" && place.site.is_none() { "wamp" } else { wan };
    let size = place.host.len() as u32;
    let local: Vec<u32> = (0..size).filter(|&p| place.same_host(rank, p)).collect();
    let shm = (use_shm && local.len() > 1).then_some(local);
    let shm_somewhere = use_shm && (0..size).any(|a| (0..size).any(|b| a != b && place.same_host(a, b)));
    // Across the whole job: does any pair of hosts talk inside a site, or
    // between sites (or somewhere unknown)?
    let pairs = || (0..size).flat_map(move |a| (a + 1..size).map(move |b| (a, b)));
    let cross_host = |(a, b): &(u32, u32)| !place.same_host(*a, *b) || !use_shm;
    let lan_needed = pairs().filter(cross_host).any(|(a, b)| place.same_site(a, b) != Some(false));
    let wan_needed = pairs().filter(cross_host).any(|(a, b)| place.same_site(a, b) != Some(true));
    let mut net: Vec<String> = vec![];
    if lan_needed || (wan_needed && wan == "tcp") {
        net.push("tcp".into());
    }
    if wan_needed && wan != "tcp" {
        net.push(wan.into());
    }
    let base = usize::from(shm.is_some());
    let lan = net.iter().position(|n| n == "tcp").map(|i| base + i);
    let far = net.iter().position(|n| n == wan).map(|i| base + i);
    let reach = (0..size)
        .map(|p| {
            if p == rank || (place.same_host(rank, p) && use_shm) {
                if shm.is_some() {
                    return Reach::Fixed(0, if p == rank { "itself" } else { "same host" });
                }
                return Reach::Fixed(0, "itself");
            }
            match (place.same_site(rank, p), lan, far) {
                (Some(true), Some(l), _) => Reach::Fixed(l, "same site"),
                (Some(false), _, Some(f)) => Reach::Fixed(f, "another site"),
                (None, Some(l), Some(f)) if l != f => Reach::ByDistance { near: l, far: f },
                (_, Some(l), _) => Reach::Fixed(l, "the only network transport"),
                (_, None, Some(f)) => Reach::Fixed(f, "the only network transport"),
                (_, None, None) => Reach::Fixed(0, "no network transport"),
            }
        })
        .collect();
    let composite = net.len() + usize::from(shm_somewhere) > 1;
    Plan { shm, net, reach, composite, shm_somewhere }
}

fn auto(env: &JobEnv, kv: &mut dyn KeyValue) -> MpiResult<Box<dyn Transport>> {
    let wan = std::env::var(ENV_WAN_TRANSPORT).unwrap_or_else(|_| DEFAULT_WAN.into());
    if !WAN_KNOWN.contains(&wan.as_str()) {
        return Err(MpiError::new(
            ErrorClass::Arg,
            format!("unknown WAN transport {wan:?} ({ENV_WAN_TRANSPORT} / mpirun --wan-transport); known: {}", WAN_KNOWN.join(", ")),
        ));
    }
    let use_shm = std::env::var(ENV_SHM).map_or(true, |v| v.trim() != "0");
    let place = Placement::from_env(env.size)?;
    let plan = plan(env.rank, &place, &wan, use_shm);
    let setup = |what: &str, e: TransportError| MpiError::new(ErrorClass::Other, format!("{what} transport setup failed: {e}"));
    let mut parts: Vec<Box<dyn Transport>> = vec![];
    if let Some(local) = &plan.shm {
        parts.push(shm(kv, local).map_err(|e| setup("shm", e))?);
    } else if plan.shm_somewhere {
        // Alone on this host: still at the fence the other hosts' shm setups wait at.
        wanmpi_transport_shm::setup_elsewhere(kv).map_err(|e| setup("shm", e))?;
    }
    for name in &plan.net {
        parts.push(named(name, env, kv).map_err(|e| setup(name, e))?);
    }
    if parts.len() == 1 && !plan.composite {
        return Ok(parts.pop().expect("one part"));
    }
    if parts.is_empty() {
        // A job of one rank: its sends to itself need no socket.
        return shm(kv, &[env.rank]).map_err(|e| setup("shm", e));
    }
    // Every rank must agree on channels and frame size, with or without
    // shm: the frame limit of the most crowded host (its rings are the
    // smallest) holds for all.
    let (mut channels, mut max_frame) = (0, usize::MAX);
    if plan.shm_somewhere {
        let o = ShmOptions::from_env().map_err(|e| setup("shm", e))?;
        (channels, max_frame) = (o.channels, o.max_frame_for(place.largest_host()));
    }
    Composite::with_limits("auto", parts, Box::new(PerPeerRoute::new(plan.reach)), channels, max_frame)
        .map(|c| Box::new(c) as Box<dyn Transport>)
        .map_err(|e| setup("auto", e))
}

/// `shm` by name: every rank must be on this host.
fn shm_only(env: &JobEnv, kv: &mut dyn KeyValue) -> MpiResult<Box<dyn Transport>> {
    let place = Placement::from_env(env.size)?;
    let elsewhere: Vec<u32> = (0..env.size).filter(|&p| !place.same_host(env.rank, p)).collect();
    if !elsewhere.is_empty() {
        return Err(MpiError::new(
            ErrorClass::Arg,
            format!("the shm transport reaches only ranks on this host, and ranks {elsewhere:?} run elsewhere (use --transport auto)"),
        ));
    }
    let local: Vec<u32> = (0..env.size).collect();
    shm(kv, &local).map_err(|e| MpiError::new(ErrorClass::Other, format!("shm transport setup failed: {e}")))
}

pub fn connect(env: &JobEnv, kv: &mut dyn KeyValue) -> MpiResult<Box<dyn Transport>> {
    match env.transport.as_str() {
        "auto" => auto(env, kv),
        "shm" => shm_only(env, kv),
        name if KNOWN.contains(&name) => {
            named(name, env, kv).map_err(|e| MpiError::new(ErrorClass::Other, format!("{name} transport setup failed: {e}")))
        }
        other => Err(MpiError::new(
            ErrorClass::Arg,
            format!("unknown transport {other:?} (WANMPI_TRANSPORT / mpirun --transport); known: {}", KNOWN.join(", ")),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn place(host: &[u32], site: Option<&[u32]>) -> Placement {
        Placement { host: host.to_vec(), site: site.map(<[u32]>::to_vec) }
    }

    #[test]
    fn one_host_is_shared_memory_alone() {
        let p = plan(1, &place(&[0, 0, 0], None), "sctp", true);
        assert!(!p.composite);
        assert_eq!(p.shm, Some(vec![0, 1, 2]));
        assert!(p.net.is_empty());
        assert!(p.reach.iter().all(|r| matches!(r, Reach::Fixed(0, _))));
    }

    #[test]
    fn hosts_and_sites_give_shm_lan_and_wan_parts() {
        // Two sites; site 0 has hosts 0 (ranks 0,1) and 1 (rank 2); site 1 has host 2 (rank 3).
        let pl = place(&[0, 0, 1, 2], Some(&[0, 0, 0, 1]));
        let p = plan(0, &pl, "wamp", true);
        assert_eq!((p.shm.clone(), p.net.clone()), (Some(vec![0, 1]), vec!["tcp".to_string(), "wamp".to_string()]));
        assert_eq!(p.reach[1], Reach::Fixed(0, "same host"));
        assert_eq!(p.reach[2], Reach::Fixed(1, "same site"));
        assert_eq!(p.reach[3], Reach::Fixed(2, "another site"));
        // Rank 3 has no local peer, but connects the same network parts
        // (every setup fences the job).
        let q = plan(3, &pl, "wamp", true);
        assert_eq!((q.shm, q.net), (None, p.net.clone()));
        assert!(p.composite && q.composite);
        assert_eq!(q.reach[0], Reach::Fixed(1, "another site"));
    }

    #[test]
    fn a_rank_alone_on_its_host_wraps_its_one_part_when_others_share_memory() {
        // Rank 0 alone on host 0 has just tcp, but rank 2 prefixes its tcp
        // frames (shm + tcp in a composite), so rank 0 must read them so.
        let pl = place(&[0, 1, 1], None);
        let p = plan(0, &pl, "tcp", true);
        assert_eq!((p.shm, p.net.len(), p.composite), (None, 1, true));
        assert!(!plan(0, &place(&[0, 1, 2], None), "tcp", true).composite);
    }

    #[test]
    fn one_host_per_site_needs_no_lan_part() {
        let pl = place(&[0, 0, 1, 1], Some(&[0, 0, 1, 1]));
        let p = plan(0, &pl, "sctp", true);
        assert_eq!(p.net, vec!["sctp".to_string()]);
        assert_eq!(p.reach[2], Reach::Fixed(1, "another site"));
        // A tcp WAN needs one tcp part for both.
        assert_eq!(plan(0, &pl, "tcp", true).net, vec!["tcp".to_string()]);
    }

    #[test]
    fn without_a_site_map_peers_go_by_distance() {
        let p = plan(0, &place(&[0, 1, 2], None), "wamp", true);
        assert_eq!(p.shm, None);
        assert_eq!(p.net, vec!["tcp".to_string(), "wamp".to_string()]);
        assert_eq!(p.reach[1], Reach::ByDistance { near: 0, far: 1 });
        // Adaptive as the WAN transport is that same choice.
        assert_eq!(plan(0, &place(&[0, 1, 2], None), "adaptive", true).net, vec!["tcp".to_string(), "wamp".to_string()]);
        // With tcp as the WAN transport there is nothing to choose.
        assert_eq!(plan(0, &place(&[0, 1, 2], None), "tcp", true).reach[2], Reach::Fixed(0, "the only network transport"));
    }

    #[test]
    fn shared_memory_off_puts_one_host_on_tcp() {
        let p = plan(0, &place(&[0, 0], None), "tcp", false);
        assert_eq!((p.shm, p.net), (None, vec!["tcp".to_string()]));
    }

    #[test]
    fn the_most_crowded_host_sets_the_frame_limit() {
        assert_eq!(place(&[0, 1, 1, 2, 1], None).largest_host(), 3);
        assert_eq!(place(&[0], None).largest_host(), 1);
    }
}
