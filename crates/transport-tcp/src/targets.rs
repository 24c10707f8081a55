//! Where each peer can be dialled: its listener's port (`tcp-ep-<rank>`,
//! `host:port` as before) paired with each of its candidate addresses
//! (`wanmpi_bootstrap::candidates`, `cand-<rank>`), loopback only toward a
//! peer of this host. The endpoint's own address comes first: all an
//! older peer or a test's proxy publishes.

use crate::options::TcpOptions;
use std::net::{SocketAddr, ToSocketAddrs};
use wanmpi_bootstrap::candidates::{self, Candidates, Kind};
use wanmpi_bootstrap::{BootstrapError, KeyValue};
use wanmpi_transport::TransportError;

/// One address to dial a peer at, and where it came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Target {
    pub(crate) addr: SocketAddr,
    pub(crate) kind: Kind,
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.addr, self.kind.name())
    }
}

fn setup_err(what: &str, e: impl std::fmt::Display) -> TransportError {
    TransportError::Setup(format!("{what}: {e}"))
}

/// The key under which `rank` publishes its endpoint.
pub fn endpoint_key(rank: u32) -> String {
    format!("tcp-ep-{rank}")
}

fn endpoint(host: &str, port: u16) -> String {
    if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// Publishes this rank's endpoint and candidates (before the fence);
/// returns the candidates, for messages.
pub(crate) fn publish(kv: &mut dyn KeyValue, opts: &TcpOptions, port: u16) -> Result<Candidates, TransportError> {
    let me = kv.rank();
    let host = opts.publish_addr.as_deref().unwrap_or("127.0.0.1");
    kv.put(&endpoint_key(me), &endpoint(host, port)).map_err(|e| setup_err("publish endpoint", e))?;
    let mine = match &opts.candidates {
        Some(c) => c.clone(),
        None => candidates::gather_here(|k| std::env::var(k).ok(), kv).map_err(|e| setup_err("gather candidates", e))?,
    };
    // An IPv4 listener takes no IPv6 caller: such candidates would only
    // be refused (the IPv6 wildcard takes both).
    let mut mine = mine;
    let bound = opts.listen_addr();
    if bound.is_ipv4() {
        mine.0.retain(|c| c.ip.is_ipv4());
    }
    if !bound.is_unspecified() {
        // Listening on one address: only that one (and a public address
        // that a NAT maps to it) reaches the listener.
        mine.0.retain(|c| c.ip == bound || c.kind == Kind::Public);
    }
    candidates::publish(kv, &mine).map_err(|e| setup_err("publish candidates", e))?;
    Ok(mine)
}

/// Every peer's targets, in the order to try them (empty at `me`); after
/// the fence.
pub(crate) fn read(kv: &mut dyn KeyValue, opts: &TcpOptions) -> Result<Vec<Vec<Target>>, TransportError> {
    let (me, size) = (kv.rank(), kv.size());
    let peers: Vec<u32> = (0..size).filter(|&r| r != me).collect();
    let keys: Vec<String> = peers.iter().map(|&r| endpoint_key(r)).collect();
    // One round trip; a peer that published no endpoint (it cannot be
    // dialled, it dials in) is found key by key.
    let eps: Vec<Option<String>> = match kv.get_many(&keys) {
        Ok(v) => v.into_iter().map(Some).collect(),
        Err(BootstrapError::Missing(_)) => keys
            .iter()
            .map(|k| match kv.get(k) {
                Ok(v) => Ok(Some(v)),
                Err(BootstrapError::Missing(_)) => Ok(None),
                Err(e) => Err(setup_err("read endpoint", e)),
            })
            .collect::<Result<_, _>>()?,
        Err(e) => return Err(setup_err("read endpoint", e)),
    };
    let cands = candidates::read(kv, &peers).map_err(|e| setup_err("read candidates", e))?;
    let mut out: Vec<Vec<Target>> = (0..size).map(|_| vec![]).collect();
    for ((&peer, ep), cand) in peers.iter().zip(eps).zip(cands) {
        let Some(ep) = ep else { continue };
        let primary = ep
            .to_socket_addrs()
            .ok()
            .and_then(|mut a| a.next())
            .ok_or_else(|| setup_err(&format!("endpoint of rank {peer}"), format!("cannot resolve {ep:?}")))?;
        let same = opts.maps.host.as_ref().and_then(|h| Some(h.get(me as usize)? == h.get(peer as usize)?));
        out[peer as usize] = cand
            .dial_order(Some(primary.ip()), same)
            .into_iter()
            .map(|c| Target { addr: SocketAddr::new(c.ip, primary.port()), kind: c.kind })
            .collect();
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::IpAddr;
    use wanmpi_bootstrap::local_kv_world;

    #[test]
    fn the_port_goes_with_every_candidate_and_loopback_stays_on_the_host() {
        let handles: Vec<_> = local_kv_world(3)
            .into_iter()
            .map(|mut kv| {
                std::thread::spawn(move || {
                    let rank = kv.rank();
                    let mut opts = TcpOptions { maps: crate::Maps { host: Some(vec![0, 0, 1]), site: None }, ..TcpOptions::default() };
                    opts.publish_addr = Some(format!("198.18.0.{}", rank + 1));
                    opts.candidates = Some(Candidates::parse(&format!("p=198.18.0.{},h=10.1.0.{},l=127.0.0.1", rank + 1, rank + 1)).unwrap());
                    publish(&mut kv, &opts, 4000 + rank as u16).unwrap();
                    kv.fence().unwrap();
                    read(&mut kv, &opts).unwrap().iter().map(|t| t.iter().map(|t| t.addr.to_string()).collect::<Vec<_>>()).collect::<Vec<_>>()
                })
            })
            .collect();
        let got: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        // Ranks 0 and 1 share a host: loopback only between them.
        assert_eq!(got[0][1], ["127.0.0.1:4001"]);
        assert_eq!(got[0][2], ["198.18.0.3:4002", "10.1.0.3:4002"]);
        assert_eq!(got[2][0], ["198.18.0.1:4000", "10.1.0.1:4000"]);
        assert!(got[1][1].is_empty());
        let ip: IpAddr = "127.0.0.1".parse().unwrap();
        assert_eq!(endpoint("::1", 5), "[::1]:5");
        assert_eq!(endpoint(&ip.to_string(), 5), "127.0.0.1:5");
    }
}
