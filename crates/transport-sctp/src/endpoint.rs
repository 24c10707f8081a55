//! What a rank publishes under `sctp-ep-<rank>` for the others: its UDP
//! addresses, its SCTP port, its sealing mode and a fresh salt for the
//! packet keys (seal.rs). Both ends of a pair learn both endpoints before
//! any packet flies, so both decide alike whether the link is sealed
//! (`sealed_link`) and derive the same keys.
//!
//! Format: `ip:udp_port[,ip:udp_port...]/sctp_port/<mode><salt>`, primary
//! address first; mode one of `h` (between hosts), `a` (always), `s`
//! (between sites), `n` (never); salt 32 hex digits. E.g.
//! `127.0.0.1:40000/5001/h00112233445566778899aabbccddeeff`. An endpoint
//! without the third part is a rank of a release before packet sealing.
//! A fourth part, `/ip:port[,ip:port...]`, lists more candidates for the
//! primary path (the reflexive address a NAT gives it,
//! `wanmpi_bootstrap::reflect`): hole punching tries them all.

use crate::error::SctpError;
use crate::seal::SALT_LEN;
use std::net::{IpAddr, SocketAddr};
use wanmpi_bootstrap::seal_policy::{wants_seal, Maps, Seal};
use wanmpi_transport::PeerId;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// UDP addresses, primary first (one per path).
    pub udps: Vec<SocketAddr>,
    pub sctp_port: u16,
    /// The publishing rank's sealing mode.
    pub seal: Seal,
    pub salt: [u8; SALT_LEN],
    /// More addresses of the primary path (reflexive), best first.
    pub cands: Vec<SocketAddr>,
}

fn mode_char(s: Seal) -> char {
    match s {
        Seal::BetweenHosts => 'h',
        Seal::Always => 'a',
        Seal::BetweenSites => 's',
        Seal::Never => 'n',
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Option<[u8; SALT_LEN]> {
    let b = s.as_bytes();
    if b.len() != 2 * SALT_LEN || !s.is_ascii() {
        return None;
    }
    let mut out = [0u8; SALT_LEN];
    for (i, o) in out.iter_mut().enumerate() {
        *o = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(out)
}

impl Endpoint {
    pub fn format(&self) -> String {
        let list: Vec<String> = self.udps.iter().map(|a| a.to_string()).collect();
        let mut v = format!("{}/{}/{}{}", list.join(","), self.sctp_port, mode_char(self.seal), hex(&self.salt));
        if !self.cands.is_empty() {
            v.push('/');
            v.push_str(&wanmpi_bootstrap::reflect::format_candidates(&self.cands));
        }
        v
    }

    /// `rank`'s endpoint from the value it published.
    pub fn parse(rank: PeerId, v: &str) -> Result<Endpoint, SctpError> {
        let bad = || SctpError::BadEndpoint { rank, value: v.to_string() };
        let mut parts = v.splitn(4, '/');
        let (udps, port) = (parts.next().ok_or_else(bad)?, parts.next().ok_or_else(bad)?);
        let Some(seal) = parts.next() else {
            return Err(SctpError::OldRelease { rank });
        };
        let udps = udps.split(',').map(|a| a.parse().map_err(|_| bad())).collect::<Result<Vec<SocketAddr>, _>>()?;
        if udps.len() > crate::path::MAX_PATHS {
            return Err(bad());
        }
        let mut mode = seal.chars();
        let seal = match mode.next() {
            Some('h') => Seal::BetweenHosts,
            Some('a') => Seal::Always,
            Some('s') => Seal::BetweenSites,
            Some('n') => Seal::Never,
            _ => return Err(bad()),
        };
        let salt = unhex(mode.as_str()).ok_or_else(bad)?;
        let cands = match parts.next() {
            None => vec![],
            Some(c) => wanmpi_bootstrap::reflect::parse_candidates(c).ok_or_else(bad)?,
        };
        Ok(Endpoint { udps, sctp_port: port.parse().map_err(|_| bad())?, seal, salt, cands })
    }
}

/// Whether the link between `me` and `peer` is sealed: if either side's
/// mode asks for it, each judged from the published primary addresses, so
/// both sides reach the same answer (a side that disagreed could not open
/// the other's packets, and the association would never come up).
pub fn sealed_link(maps: &Maps, me: PeerId, mine: &Endpoint, peer: PeerId, theirs: &Endpoint) -> bool {
    let (a, b): (Option<IpAddr>, Option<IpAddr>) = (mine.udps.first().map(|a| a.ip()), theirs.udps.first().map(|a| a.ip()));
    wants_seal(mine.seal, maps, me, peer, a, b) || wants_seal(theirs.seal, maps, peer, me, b, a)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    fn ep(udps: &[&str], seal: Seal) -> Endpoint {
        Endpoint { udps: udps.iter().map(|s| a(s)).collect(), sctp_port: 5001, seal, salt: [0xab; SALT_LEN], cands: vec![] }
    }

    #[test]
    fn endpoints_round_trip_and_bad_ones_are_named() {
        let salt = "ab".repeat(SALT_LEN);
        let one = ep(&["127.0.0.1:4000"], Seal::BetweenHosts);
        assert_eq!(one.format(), format!("127.0.0.1:4000/5001/h{salt}"));
        let two = ep(&["127.0.0.1:4000", "[::1]:4002"], Seal::Always);
        assert_eq!(Endpoint::parse(1, &two.format()).unwrap(), two);
        let natted = Endpoint { cands: vec![a("198.18.0.1:4000"), a("198.18.0.1:5000")], ..one.clone() };
        assert_eq!(natted.format(), format!("127.0.0.1:4000/5001/h{salt}/198.18.0.1:4000,198.18.0.1:5000"));
        assert_eq!(Endpoint::parse(1, &natted.format()).unwrap(), natted);
        for s in [Seal::BetweenHosts, Seal::Always, Seal::BetweenSites, Seal::Never] {
            assert_eq!(Endpoint::parse(1, &ep(&["10.0.0.1:1"], s).format()).unwrap().seal, s);
        }
        // A rank of an older release: named as such.
        assert!(matches!(Endpoint::parse(2, "127.0.0.1:4000/5001"), Err(SctpError::OldRelease { rank: 2 })));
        let nine = ["127.0.0.1:1"; 9].join(",") + "/5001/h" + &salt;
        let bad = [
            "127.0.0.1:4000".to_string(),
            format!("x/1/h{salt}"),
            format!("127.0.0.1:4000/70000/h{salt}"),
            format!("127.0.0.1:4000,/1/h{salt}"),
            format!("/1/h{salt}"),
            format!("127.0.0.1:4000/1/x{salt}"),
            format!("127.0.0.1:4000/1/h{}", &salt[1..]),
            format!("127.0.0.1:4000/1/h{}zz", &salt[2..]),
            format!("127.0.0.1:4000/1/h{salt}/9"),
            format!("127.0.0.1:4000/1/h{salt}/"),
            "127.0.0.1:4000/1/hé".to_string() + &salt[3..],
            "127.0.0.1:4000/1/".to_string(),
            nine,
        ];
        for b in &bad {
            assert!(matches!(Endpoint::parse(3, b), Err(SctpError::BadEndpoint { rank: 3, .. })), "{b}");
        }
    }

    #[test]
    fn both_sides_agree_whether_a_link_is_sealed() {
        let none = Maps::default();
        let lo = |s| ep(&["127.0.0.1:1"], s);
        let net = |ip: &str, s| ep(&[ip], s);
        // On one host: plain unless one side insists; either insisting seals.
        assert!(!sealed_link(&none, 0, &lo(Seal::BetweenHosts), 1, &lo(Seal::BetweenHosts)));
        for (x, y) in [(Seal::Always, Seal::Never), (Seal::Never, Seal::Always), (Seal::Always, Seal::BetweenHosts)] {
            assert!(sealed_link(&none, 0, &lo(x), 1, &lo(y)) && sealed_link(&none, 1, &lo(y), 0, &lo(x)));
        }
        // Between hosts: sealed by default, from either side's view.
        let (p, q) = (net("10.0.0.1:1", Seal::BetweenHosts), net("10.0.0.2:1", Seal::Never));
        assert!(sealed_link(&none, 0, &p, 1, &q) && sealed_link(&none, 1, &q, 0, &p));
        let (p, q) = (net("10.0.0.1:1", Seal::Never), net("10.0.0.2:1", Seal::Never));
        assert!(!sealed_link(&none, 0, &p, 1, &q));
    }
}
