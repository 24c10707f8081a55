//! Which connections of a job are sealed (tcp's and sctp's): a pure rule,
//! decided by each side from what it knows and carried in the transport's
//! handshake, where the side that asks wins.
//!
//! Between hosts, by default: a job's frames may cross networks others can
//! read or write. Not on one host, where nobody outside the machine sees
//! the bytes and encryption would only cost: both ends loopback, both ends
//! the same address, or the launcher's host map putting both ranks on one
//! host. `WANMPI_INSECURE_LAN=1` (`mpirun --insecure-lan`) trusts the local
//! network: nothing is sealed, except between ranks the launcher's site map
//! puts in different sites (a connection that crosses a WAN stays sealed).
//! A transport between jobs (spawn, accept/connect) has no site map that
//! covers both, so there the trusted LAN seals between hosts
//! (`Seal::across_jobs`). Each transport has its own switch (`WANMPI_TCP_ENCRYPT`,
//! `WANMPI_SCTP_ENCRYPT`): `0` seals nothing at all; `1` seals everything,
//! also on loopback, to measure its cost.

use std::net::IpAddr;
/// `1`: the network inside a site is trusted; only connections between
/// sites are sealed (set by `mpirun --insecure-lan`).
pub const ENV_INSECURE_LAN: &str = "WANMPI_INSECURE_LAN";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Seal {
    /// Sealed unless both ends are on one host (the default).
    #[default]
    BetweenHosts,
    /// Every connection sealed, also on one host (to measure).
    Always,
    /// Sealed only between ranks of different sites (a trusted LAN).
    BetweenSites,
    /// Nothing sealed.
    Never,
}

impl Seal {
    /// From the transport's switch `encrypt_var` (e.g.
    /// `WANMPI_TCP_ENCRYPT`) and `WANMPI_INSECURE_LAN`; the former, being
    /// about one transport alone, wins.
    pub fn from_lookup(encrypt_var: &str, get: &impl Fn(&str) -> Option<String>) -> Result<Seal, String> {
        let flag = |var: &str| -> Result<Option<bool>, String> {
            match get(var).as_deref().map(str::trim) {
                None | Some("") => Ok(None),
                Some("1") => Ok(Some(true)),
                Some("0") => Ok(Some(false)),
                Some(v) => Err(format!("{var}={v:?}: expected 1 or 0")),
            }
        };
        Ok(match (flag(encrypt_var)?, flag(ENV_INSECURE_LAN)?) {
            (Some(true), _) => Seal::Always,
            (Some(false), _) => Seal::Never,
            (None, Some(true)) => Seal::BetweenSites,
            (None, _) => Seal::BetweenHosts,
        })
    }
}

impl Seal {
    /// The rule for a transport between jobs (spawn, accept/connect):
    /// no site map covers both jobs, so a trusted LAN cannot say which
    /// connections stay inside a site; they are sealed between hosts.
    /// An explicit `Always` or `Never` stays.
    pub fn across_jobs(self) -> Seal {
        match self {
            Seal::BetweenSites => Seal::BetweenHosts,
            s => s,
        }
    }
}

/// Where the ranks run, as the launcher said: each rank's host index
/// (`WANMPI_HOST_MAP`) and site index (`WANMPI_SITE_MAP`), when known.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Maps {
    pub host: Option<Vec<u32>>,
    pub site: Option<Vec<u32>>,
}

fn same(map: &Option<Vec<u32>>, a: u32, b: u32) -> Option<bool> {
    let m = map.as_ref()?;
    Some(m.get(a as usize)? == m.get(b as usize)?)
}

/// Whether this side asks for the connection between ranks `me` and
/// `peer` to be sealed; `local` and `remote` are the socket's addresses.
pub fn wants_seal(mode: Seal, maps: &Maps, me: u32, peer: u32, local: Option<IpAddr>, remote: Option<IpAddr>) -> bool {
    match mode {
        Seal::Always => true,
        Seal::Never => false,
        Seal::BetweenSites => same(&maps.site, me, peer) == Some(false) && !one_host(maps, me, peer, local, remote),
        Seal::BetweenHosts => !one_host(maps, me, peer, local, remote),
    }
}

fn one_host(maps: &Maps, me: u32, peer: u32, local: Option<IpAddr>, remote: Option<IpAddr>) -> bool {
    if same(&maps.host, me, peer) == Some(true) {
        return true;
    }
    match (local.map(|a| a.to_canonical()), remote.map(|a| a.to_canonical())) {
        (Some(l), Some(r)) => (l.is_loopback() && r.is_loopback()) || l == r,
        // Unknown addresses: assume the worst.
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    const ENV_ENCRYPT: &str = "WANMPI_TCP_ENCRYPT";

    fn ip(s: &str) -> Option<IpAddr> {
        Some(s.parse().unwrap())
    }

    #[test]
    fn sealed_between_hosts_only_unless_told() {
        let b = Seal::BetweenHosts;
        let hosts = |m: Option<&[u32]>| Maps { host: m.map(<[u32]>::to_vec), site: None };
        type Row<'a> = (Option<&'a [u32]>, Option<IpAddr>, Option<IpAddr>, bool);
        let table: &[Row] = &[
            (None, ip("127.0.0.1"), ip("127.0.0.1"), false),
            (None, ip("127.0.0.2"), ip("127.0.0.1"), false),
            (None, ip("::1"), ip("::ffff:127.0.0.1"), false),
            (None, ip("10.0.0.5"), ip("10.0.0.5"), false),
            (None, ip("10.0.0.5"), ip("10.0.0.6"), true),
            (None, ip("198.18.0.1"), ip("198.18.1.1"), true),
            (None, None, ip("10.0.0.6"), true),
            // The launcher says both ranks share a host: no network between them.
            (Some(&[0, 0]), ip("10.0.0.5"), ip("10.0.0.6"), false),
            (Some(&[0, 1]), ip("10.0.0.5"), ip("10.0.0.6"), true),
            // A host map does not make a loopback connection leave the host.
            (Some(&[0, 1]), ip("127.0.0.1"), ip("127.0.0.1"), false),
        ];
        for &(map, l, r, want) in table {
            assert_eq!(wants_seal(b, &hosts(map), 0, 1, l, r), want, "{map:?} {l:?} {r:?}");
        }
        assert!(wants_seal(Seal::Always, &hosts(Some(&[0, 0])), 0, 1, ip("127.0.0.1"), ip("127.0.0.1")));
        assert!(!wants_seal(Seal::Never, &hosts(None), 0, 1, ip("10.0.0.5"), ip("10.0.0.6")));
    }

    #[test]
    fn an_insecure_lan_still_seals_between_sites() {
        let (a, b) = (ip("10.0.0.5"), ip("10.9.0.6"));
        let sites = |s: Option<&[u32]>| Maps { host: Some(vec![0, 1, 2]), site: s.map(<[u32]>::to_vec) };
        assert!(!wants_seal(Seal::BetweenSites, &sites(None), 0, 1, a, b), "no site map: one LAN");
        assert!(!wants_seal(Seal::BetweenSites, &sites(Some(&[0, 0, 1])), 0, 1, a, b));
        assert!(wants_seal(Seal::BetweenSites, &sites(Some(&[0, 0, 1])), 0, 2, a, b));
        assert!(!wants_seal(Seal::Never, &sites(Some(&[0, 0, 1])), 0, 2, a, b));
    }

    #[test]
    fn between_jobs_an_insecure_lan_seals_between_hosts() {
        let (a, b) = (ip("10.0.0.5"), ip("10.9.0.6"));
        let none = Maps::default();
        assert!(!wants_seal(Seal::BetweenSites, &none, 0, 1, a, b), "within a job: one LAN");
        assert!(wants_seal(Seal::BetweenSites.across_jobs(), &none, 0, 1, a, b), "between jobs: sites unknown");
        assert!(!wants_seal(Seal::BetweenSites.across_jobs(), &none, 0, 1, a, a), "one host");
        assert_eq!(Seal::Never.across_jobs(), Seal::Never);
        assert_eq!(Seal::Always.across_jobs(), Seal::Always);
    }

    #[test]
    fn environment_names_the_mode() {
        let of = |pairs: &[(&str, &str)]| {
            let m: HashMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
            Seal::from_lookup(ENV_ENCRYPT, &move |k: &str| m.get(k).cloned())
        };
        assert_eq!(of(&[]), Ok(Seal::BetweenHosts));
        assert_eq!(of(&[(ENV_INSECURE_LAN, "1")]), Ok(Seal::BetweenSites));
        assert_eq!(of(&[(ENV_INSECURE_LAN, "0")]), Ok(Seal::BetweenHosts));
        assert_eq!(of(&[(ENV_ENCRYPT, "1")]), Ok(Seal::Always));
        assert_eq!(of(&[(ENV_ENCRYPT, "1"), (ENV_INSECURE_LAN, "1")]), Ok(Seal::Always));
        assert_eq!(of(&[(ENV_ENCRYPT, "0")]), Ok(Seal::Never));
        assert!(of(&[(ENV_ENCRYPT, "yes")]).unwrap_err().contains(ENV_ENCRYPT));
    }
}
