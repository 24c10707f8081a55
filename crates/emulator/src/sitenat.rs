//! A whole site behind one NAT router (`nat site S masq|symmetric`), as a
//! campus or a home network: the site's hosts are on a private LAN
//! (`172.16.<site>.0/24`, a bridge in the router namespace
//! `wemu<id>-hr<site>`, a veth `eth0` into each host) and reach the other
//! sites through the router, which holds the site's public address (that of
//! the site's first host, on the TUN the forwarder made there) and
//! masquerades with nftables. Hosts of the site talk directly over the LAN
//! (not through the forwarder: no emulated delay between them); from
//! outside only the site's one public address is seen, and nothing
//! unsolicited gets in (the router's `forward` and `input` filters).

use crate::addr::{host_addr, tun_name, PREFIX_LEN};
use crate::error::Result;
use crate::nat::NatKind;
use crate::netns;
use std::net::Ipv4Addr;

/// The router's own address on site `site`'s LAN.
pub fn router_lan_addr(site: usize) -> Ipv4Addr {
    Ipv4Addr::new(172, 16, site as u8, 1)
}

/// The LAN address of the `k`-th host (0-based, in host order) of site `site`.
pub fn lan_addr(site: usize, k: usize) -> Ipv4Addr {
    Ipv4Addr::new(172, 16, site as u8, (k + 2) as u8)
}

/// Configure site `site`'s router `router` and its hosts `hosts` (index,
/// namespace), the first holding the public address.
pub fn configure(router: &str, site: usize, kind: NatKind, hosts: &[(usize, String)], mtu: u32) -> Result<()> {
    let Some(&(first, _)) = hosts.first() else { return Ok(()) };
    let (public, gw, tun) = (host_addr(first, 0), router_lan_addr(site), tun_name(0));
    let mut r = format!(
        "link set lo up\nlink set {tun} mtu {mtu} txqueuelen 1000 up\naddr add {public}/{PREFIX_LEN} dev {tun}\n\
         link add br0 type bridge\naddr add {gw}/24 dev br0\nlink set br0 up\n"
    );
    for (h, ns) in hosts {
        r.push_str(&format!("link add v{h} type veth peer name eth0 netns {ns}\nlink set v{h} master br0 up\n"));
    }
    netns::ip_batch(router, &r)?;
    let wan = host_addr(0, 0).octets();
    for (k, (_, ns)) in hosts.iter().enumerate() {
        let mine = lan_addr(site, k);
        let b = format!(
            "link set lo up\naddr add {mine}/24 dev eth0\nlink set eth0 up\nroute add {}.{}.{}.0/{PREFIX_LEN} via {gw} src {mine}\n",
            wan[0], wan[1], wan[2]
        );
        netns::ip_batch(ns, &b)?;
    }
    crate::nat::load(router, &ruleset(site, kind, public, false))
}

/// The router's nft table: SNAT of the LAN out of the TUN, nothing
/// unsolicited in; `rebound`: TCP and UDP to random ports of
/// `nat::REBOUND_PORTS`, replacing the table (`Emulation::rebind_nat`).
pub fn ruleset(site: usize, kind: NatKind, public: Ipv4Addr, rebound: bool) -> String {
    let random = if kind == NatKind::Symmetric { " fully-random" } else { "" };
    let (lo, hi) = crate::nat::REBOUND_PORTS;
    let (replace, ports) = if rebound {
        (
            "delete table ip wemu_nat\n",
            format!("    oifname \"tun0\" ip saddr 172.16.{site}.0/24 meta l4proto {{ tcp, udp }} snat to {public}:{lo}-{hi} random\n"),
        )
    } else {
        ("", String::new())
    };
    format!(
        "{replace}table ip wemu_nat {{\n  chain post {{\n    type nat hook postrouting priority 100;\n{ports}    \
         oifname \"tun0\" ip saddr 172.16.{site}.0/24 snat to {public}{random}\n  }}\n  \
         chain through {{\n    type filter hook forward priority 0;\n    iifname \"tun0\" ct state established,related accept\n    iifname \"tun0\" drop\n  }}\n  \
         chain in {{\n    type filter hook input priority 0;\n    iifname \"tun0\" ct state established,related accept\n    iifname \"tun0\" drop\n  }}\n}}\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_and_rules() {
        assert_eq!(
            (router_lan_addr(1), lan_addr(1, 0), lan_addr(1, 1)),
            ("172.16.1.1".parse().unwrap(), "172.16.1.2".parse().unwrap(), "172.16.1.3".parse().unwrap())
        );
        let r = ruleset(1, NatKind::Symmetric, "198.18.0.3".parse().unwrap(), false);
        assert!(r.contains("ip saddr 172.16.1.0/24 snat to 198.18.0.3 fully-random"), "{r}");
        assert!(r.contains("chain through"), "{r}");
    }
}
