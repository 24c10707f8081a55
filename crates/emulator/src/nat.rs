//! NAT in front of an emulated host, done by the host's own kernel with
//! nftables (conntrack), never by the forwarder: the forwarder still sees
//! only public addresses (198.18.0.x), as the internet would.
//!
//! A NATed host has no public address on any interface. Its private address
//! (`10.<host>.0.2/24`, on a veth `eth0` whose peer `nat0` stays in the
//! host) is the source of its routes to the emulated networks through
//! `tun<path>`; the nft table `wemu_nat` in the host's namespace rewrites:
//!
//! - `1to1` (a cloud VM's public IP): outbound SNAT to the public address,
//!   ports kept (one private address behind it, so no port ever clashes);
//!   inbound to the public address DNAT to the private one. Everything
//!   reaches the host, and the host reaches its own public address.
//! - `masq` (a home or campus firewall, port-restricted cone): outbound
//!   SNAT keeping ports where it can; inbound only for conntrack entries
//!   made by outbound traffic (replies, and UDP hole punching: both sides
//!   send at once, each send opens the way for the other's).
//! - `symmetric`: as `masq`, but each new flow gets a random public port
//!   (`fully-random`), so the port a peer learns is useless to another.
//!
//! One namespace holds both the host and its NAT: locally generated packets
//! pass the `nat output` and `postrouting` hooks and conntrack as forwarded
//! ones would (checked by `tests/nat.rs`), so no router namespace is needed.

use crate::addr::{host_addr, tun_name};
use crate::error::{EmuError, Result};
use std::fmt::Write as _;
use std::io::Write as _;
use std::net::Ipv4Addr;
use std::process::{Command, Stdio};

/// The kinds of NAT an emulated host can sit behind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NatKind {
    /// The host holds its public address itself (the emulator's default).
    #[default]
    None,
    /// 1:1 NAT: a cloud VM's public address.
    OneToOne,
    /// Masquerading, port-restricted cone: nothing unsolicited gets in.
    Masq,
    /// Symmetric: a new public port for every destination.
    Symmetric,
}

impl NatKind {
    /// `none`, `1to1`, `masq`, `symmetric` (also `1:1`, `cone`, `sym`).
    pub fn parse(s: &str) -> Result<NatKind> {
        Ok(match s.trim() {
            "none" | "" => NatKind::None,
            "1to1" | "1:1" | "cloud" => NatKind::OneToOne,
            "masq" | "cone" | "firewall" => NatKind::Masq,
            "symmetric" | "sym" => NatKind::Symmetric,
            other => return Err(EmuError::Parse(format!("NAT kind `{other}`: expected none, 1to1, masq or symmetric"))),
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            NatKind::None => "none",
            NatKind::OneToOne => "1to1",
            NatKind::Masq => "masq",
            NatKind::Symmetric => "symmetric",
        }
    }

    /// Parse `KIND[,KIND...]`: one kind for every host, or one per host.
    pub fn parse_list(s: &str) -> Result<Vec<NatKind>> {
        s.split(',').map(NatKind::parse).collect()
    }
}

impl std::fmt::Display for NatKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The private address of host `index` behind NAT: `10.<index>.0.2`.
pub fn private_addr(index: usize) -> Ipv4Addr {
    Ipv4Addr::new(10, index as u8, 0, 2)
}

/// Prefix length of a NATed host's private network.
pub const PRIVATE_PREFIX_LEN: u8 = 24;

/// The interface holding the private address, and its veth peer.
pub const PRIVATE_DEV: &str = "eth0";
const PEER_DEV: &str = "nat0";

/// Where a host is reached, and where it thinks it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NatInfo {
    pub kind: NatKind,
    /// The address others reach it at on path 0 (on no interface of the
    /// host when it is NATed).
    pub public: Ipv4Addr,
    /// Its own address when NATed (None without NAT: the public one is its own).
    pub private: Option<Ipv4Addr>,
}

/// Where host `host` of `topo` is: behind its own NAT, its site's, or none.
pub fn info(topo: &crate::topology::Topology, host: usize) -> NatInfo {
    let site = topo.site_of(host);
    let site_kind = topo.site_nat_of(site);
    if !topo.sites.is_empty() && site_kind != NatKind::None {
        let members = topo.site_hosts(site);
        let k = members.iter().position(|&h| h == host).unwrap_or(0);
        let first = members.first().copied().unwrap_or(host);
        return NatInfo { kind: site_kind, public: host_addr(first, 0), private: Some(crate::sitenat::lan_addr(site, k)) };
    }
    let kind = topo.nat_of(host);
    NatInfo { kind, public: host_addr(host, 0), private: (kind != NatKind::None).then(|| private_addr(host)) }
}

/// `ip -batch` lines that give a NATed host its private address and routes
/// (instead of the public address on each TUN).
pub fn ip_commands(index: usize, paths: u8, mtu: u32) -> String {
    let private = private_addr(index);
    let mut s = format!(
        "link set lo up\nlink add {PRIVATE_DEV} type veth peer name {PEER_DEV}\n\
         addr add {private}/{PRIVATE_PREFIX_LEN} dev {PRIVATE_DEV}\nlink set {PRIVATE_DEV} up\nlink set {PEER_DEV} up\n"
    );
    for p in 0..paths {
        let dev = tun_name(p);
        let net = host_addr(0, p).octets();
        let _ = write!(
            s,
            "link set {dev} mtu {mtu} txqueuelen 1000 up\nroute add {}.{}.{}.0/{} dev {dev} src {private}\n",
            net[0],
            net[1],
            net[2],
            crate::addr::PREFIX_LEN
        );
    }
    s
}

/// Public ports a rebound NAT maps to (`Emulation::rebind_nat`): away from
/// Linux's ephemeral ports (32768-60999), so every flow gets a new one.
pub const REBOUND_PORTS: (u16, u16) = (10000, 29999);

/// The nft ruleset (table `ip wemu_nat`) of host `index` behind `kind`.
pub fn ruleset(index: usize, paths: u8, kind: NatKind) -> String {
    rules(index, paths, kind, false)
}

/// The ruleset after a rebinding: outbound flows mapped to random ports of
/// `REBOUND_PORTS` (a new port for every flow, whatever its source port),
/// replacing the table as one nft transaction.
pub fn rebound_ruleset(index: usize, paths: u8, kind: NatKind) -> String {
    format!("delete table ip wemu_nat\n{}", rules(index, paths, kind, true))
}

fn rules(index: usize, paths: u8, kind: NatKind, rebound: bool) -> String {
    let private = private_addr(index);
    let (mut pre, mut out, mut post, mut input) = (String::new(), String::new(), String::new(), String::new());
    for p in 0..paths {
        let (dev, public) = (tun_name(p), host_addr(index, p));
        match kind {
            NatKind::None => {}
            NatKind::OneToOne => {
                let _ = writeln!(pre, "    iifname \"{dev}\" ip daddr {public} dnat to {private}");
                // the host reaches its own public address (hairpin), as on a cloud VM
                let _ = writeln!(out, "    ip daddr {public} dnat to {private}");
                let _ = write!(post, "{}", snat(&dev, public, rebound, ""));
            }
            NatKind::Masq | NatKind::Symmetric => {
                let random = if kind == NatKind::Symmetric { " fully-random" } else { "" };
                let _ = write!(post, "{}", snat(&dev, public, rebound, random));
                let _ = writeln!(input, "    iifname \"{dev}\" ct state established,related accept\n    iifname \"{dev}\" drop");
            }
        }
    }
    format!(
        "table ip wemu_nat {{\n  chain pre {{\n    type nat hook prerouting priority -100;\n{pre}  }}\n  \
         chain out {{\n    type nat hook output priority -100;\n{out}  }}\n  \
         chain post {{\n    type nat hook postrouting priority 100;\n{post}  }}\n  \
         chain in {{\n    type filter hook input priority 0;\n{input}  }}\n}}\n"
    )
}

/// The SNAT rule(s) out of `dev`: ports kept where they can be, or (rebound)
/// TCP and UDP to random ports of `REBOUND_PORTS`, the rest (ICMP) as before.
fn snat(dev: &str, public: Ipv4Addr, rebound: bool, flags: &str) -> String {
    let plain = format!("    oifname \"{dev}\" snat to {public}{flags}\n");
    if !rebound {
        return plain;
    }
    let (lo, hi) = REBOUND_PORTS;
    format!("    oifname \"{dev}\" meta l4proto {{ tcp, udp }} snat to {public}:{lo}-{hi} random\n{plain}")
}

/// Load `rules` with `nft -f -` inside namespace `ns`.
pub fn load(ns: &str, rules: &str) -> Result<()> {
    let cmd_text = format!("ip netns exec {ns} nft -f -");
    let mut child = crate::netns::command_in(ns, "nft")?
        .args(["-f", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| EmuError::io(format!("running `{cmd_text}` (is nftables installed? scripts/install-deps)"), e))?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(rules.as_bytes()).map_err(|e| EmuError::io(format!("feeding `{cmd_text}`"), e))?;
    }
    let out = child.wait_with_output().map_err(|e| EmuError::io(format!("waiting for `{cmd_text}`"), e))?;
    if out.status.success() {
        return Ok(());
    }
    Err(EmuError::Command { cmd: cmd_text, status: out.status.to_string(), stderr: String::from_utf8_lossy(&out.stderr).trim().to_string() })
}

/// Whether `nft` can be run here (for a clear error before anything is made).
pub fn nft_present() -> bool {
    Command::new("nft").arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_parse_and_print() {
        for k in [NatKind::None, NatKind::OneToOne, NatKind::Masq, NatKind::Symmetric] {
            assert_eq!(NatKind::parse(k.as_str()).unwrap(), k);
        }
        assert_eq!(NatKind::parse_list("none,masq").unwrap(), [NatKind::None, NatKind::Masq]);
        assert!(NatKind::parse("full-cone").is_err());
    }

    #[test]
    fn rules_per_kind() {
        let one = ruleset(1, 1, NatKind::OneToOne);
        assert!(one.contains("iifname \"tun0\" ip daddr 198.18.0.2 dnat to 10.1.0.2"), "{one}");
        assert!(one.contains("oifname \"tun0\" snat to 198.18.0.2\n"), "{one}");
        let masq = ruleset(2, 2, NatKind::Masq);
        assert!(!masq.contains("dnat"), "{masq}");
        assert!(masq.contains("oifname \"tun1\" snat to 198.19.0.3\n"), "{masq}");
        assert!(masq.contains("iifname \"tun0\" drop"), "{masq}");
        assert!(ruleset(2, 1, NatKind::Symmetric).contains("snat to 198.18.0.3 fully-random"));
        let re = rebound_ruleset(2, 1, NatKind::Masq);
        assert!(
            re.starts_with("delete table ip wemu_nat\n") && re.contains("meta l4proto { tcp, udp } snat to 198.18.0.3:10000-29999 random\n"),
            "{re}"
        );
        assert_eq!(private_addr(1), Ipv4Addr::new(10, 1, 0, 2));
    }
}
