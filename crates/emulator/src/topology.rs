//! What to emulate: how many hosts, how many paths, which profile each
//! direction of each link has, and when links go down or up.
//!
//! Text form (one item per line, `#` starts a comment):
//!
//! ```text
//! hosts 4
//! paths 2                       # a second address/TUN per host (multihoming)
//! seed 42
//! default delay=20ms,loss=1%    # every link, both paths
//! 0 <-> 1 delay=40ms            # both directions between hosts 0 and 1 (keys on top of default)
//! 0 -> 2 loss=5%                # one direction only
//! 0 <-> 1 path=1 delay=5ms      # only on the second path (paths are 0 and 1)
//! * -> 3 rate=10mbit,queue=50ms # `*` is any host
//! at 2s down 0 <-> 1            # link failure 2 s after start
//! at 3500ms up 0 <-> 1
//! ```
//!
//! Sites: hosts grouped into sites joined by the WAN, with a LAN inside
//! each site. A link between two hosts of one site has the `lan` profile
//! (on its own, not on top of the default); every other link the default.
//! Overrides still apply on top of either.
//!
//! ```text
//! sites 3x3                     # 3 sites of 3 hosts: hosts 0-2, 3-5, 6-8 (sets hosts 9)
//! sites 0 0 1 1 1               # or the site of each host, in host order
//! lan delay=100us               # links inside a site
//! default delay=40ms            # links between sites
//! ```
//!
//! NAT in front of hosts (see `nat.rs`; the last line naming a host wins):
//!
//! ```text
//! nat * 1to1                    # every host: a cloud VM's 1:1 NAT
//! nat 1 masq                    # host 1 behind a masquerading firewall
//! nat 2 symmetric               # kinds: none, 1to1, masq, symmetric
//! nat site 1 masq               # every host of site 1 behind one router (masq or symmetric)
//! ```

use crate::error::{EmuError, Result};
use crate::nat::NatKind;
use crate::profile::LinkProfile;
use crate::units::{fmt_duration_ns, parse_duration_ns};
use std::fmt::Write as _;

/// Most hosts one emulation can hold (host i gets address .i+1 in a /24).
pub const MAX_HOSTS: usize = 250;

/// Which links a line applies to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkSel {
    /// `None` = any host.
    pub a: Option<usize>,
    pub b: Option<usize>,
    /// Also the direction b -> a.
    pub both: bool,
    /// `None` = every path.
    pub path: Option<u8>,
}

impl LinkSel {
    /// Both directions between two hosts, on every path.
    pub fn pair(a: usize, b: usize) -> Self {
        LinkSel { a: Some(a), b: Some(b), both: true, path: None }
    }

    /// Does this selector cover the direction `src -> dst` on `path`?
    pub fn matches(&self, src: usize, dst: usize, path: u8) -> bool {
        let host = |sel: Option<usize>, h: usize| sel.is_none_or(|s| s == h);
        let fwd = host(self.a, src) && host(self.b, dst);
        let back = self.both && host(self.a, dst) && host(self.b, src);
        (fwd || back) && self.path.is_none_or(|p| p == path)
    }

    fn fmt_into(&self, out: &mut String) {
        let h = |s: Option<usize>| s.map_or("*".to_string(), |v| v.to_string());
        let _ = write!(out, "{} {} {}", h(self.a), if self.both { "<->" } else { "->" }, h(self.b));
        if let Some(p) = self.path {
            let _ = write!(out, " path={p}");
        }
    }
}

/// A per-link override: `profile` keys applied on top of the default.
#[derive(Debug, Clone, PartialEq)]
pub struct Override {
    pub sel: LinkSel,
    pub profile: String,
}

/// A link going down or up at a time after the forwarder started.
#[derive(Debug, Clone, PartialEq)]
pub struct LinkEvent {
    pub at_ns: u64,
    pub sel: LinkSel,
    pub up: bool,
}

/// A whole emulation's description.
#[derive(Debug, Clone, PartialEq)]
pub struct Topology {
    pub hosts: usize,
    /// 1, or 2 for a second address per host (198.19.0.0/24).
    pub paths: u8,
    /// Seed of every link's loss and jitter draws.
    pub seed: u64,
    pub default: LinkProfile,
    pub overrides: Vec<Override>,
    pub schedule: Vec<LinkEvent>,
    /// Site of each host (empty: no sites, every link has the default).
    pub sites: Vec<usize>,
    /// Profile of links inside a site.
    pub lan: LinkProfile,
    /// NAT in front of hosts: (host, or None for every host; kind), the
    /// last matching entry wins.
    pub nat: Vec<(Option<usize>, NatKind)>,
    /// NAT in front of whole sites, one router per site: (site, or None
    /// for every site; kind), the last matching entry wins.
    pub site_nat: Vec<(Option<usize>, NatKind)>,
}

impl Topology {
    /// `hosts` hosts, one path, every link with `profile`.
    pub fn uniform(hosts: usize, profile: LinkProfile) -> Self {
        Topology {
            hosts,
            paths: 1,
            seed: 1,
            default: profile,
            overrides: Vec::new(),
            schedule: Vec::new(),
            sites: Vec::new(),
            lan: LinkProfile::default(),
            nat: Vec::new(),
            site_nat: Vec::new(),
        }
    }

    /// The NAT in front of site `site` as a whole.
    pub fn site_nat_of(&self, site: usize) -> NatKind {
        if self.sites.is_empty() {
            return NatKind::None;
        }
        self.site_nat.iter().rev().find(|(s, _)| s.is_none_or(|s| s == site)).map_or(NatKind::None, |(_, k)| *k)
    }

    /// Set every site's NAT: one kind for all sites, or one per site in order.
    pub fn set_site_nat(&mut self, kinds: &[NatKind]) -> Result<()> {
        self.site_nat = match kinds {
            [one] => vec![(None, *one)],
            many => many.iter().enumerate().map(|(i, k)| (Some(i), *k)).collect(),
        };
        Ok(())
    }

    /// The hosts of site `site`, in order (the first holds the site's
    /// public address when the site is behind NAT).
    pub fn site_hosts(&self, site: usize) -> Vec<usize> {
        (0..self.hosts).filter(|&h| !self.sites.is_empty() && self.site_of(h) == site).collect()
    }

    /// Number of sites (0 without sites).
    pub fn site_count(&self) -> usize {
        self.sites.iter().max().map_or(0, |m| m + 1)
    }

    /// The NAT in front of `host` (`None` unless a `nat` entry names it).
    pub fn nat_of(&self, host: usize) -> NatKind {
        self.nat.iter().rev().find(|(h, _)| h.is_none_or(|h| h == host)).map_or(NatKind::None, |(_, k)| *k)
    }

    /// Set every host's NAT from a list: one kind for all hosts, or one per
    /// host in host order (fewer than the hosts: the rest have none).
    pub fn set_nat(&mut self, kinds: &[NatKind]) -> Result<()> {
        if kinds.len() > self.hosts {
            return Err(EmuError::Parse(format!("{} NAT kinds for {} hosts", kinds.len(), self.hosts)));
        }
        self.nat = match kinds {
            [one] => vec![(None, *one)],
            many => many.iter().enumerate().map(|(i, k)| (Some(i), *k)).collect(),
        };
        Ok(())
    }

    /// `sites` sites of `per_site` hosts each (hosts in site order), LAN
    /// links inside a site and `wan` between sites.
    pub fn sites(sites: usize, per_site: usize, lan: LinkProfile, wan: LinkProfile) -> Self {
        let mut t = Topology::uniform(sites * per_site, wan);
        t.sites = (0..sites * per_site).map(|h| h / per_site.max(1)).collect();
        t.lan = lan;
        t
    }

    /// The site of `host` (every host is its own site when none are given).
    pub fn site_of(&self, host: usize) -> usize {
        if self.sites.is_empty() {
            host
        } else {
            self.sites.get(host).copied().unwrap_or(host)
        }
    }

    /// Check the numbers that the rest of the crate relies on.
    pub fn validate(&self) -> Result<()> {
        if self.hosts < 1 || self.hosts > MAX_HOSTS {
            return Err(EmuError::Parse(format!("hosts must be 1..={MAX_HOSTS}, got {}", self.hosts)));
        }
        if !self.sites.is_empty() && self.sites.len() != self.hosts {
            return Err(EmuError::Parse(format!("sites name {} hosts, but there are {}", self.sites.len(), self.hosts)));
        }
        if self.paths != 1 && self.paths != 2 {
            return Err(EmuError::Parse(format!("paths must be 1 or 2, got {}", self.paths)));
        }
        let check = |sel: &LinkSel| -> Result<()> {
            for h in [sel.a, sel.b].into_iter().flatten() {
                if h >= self.hosts {
                    return Err(EmuError::Parse(format!("host {h} out of range (hosts = {})", self.hosts)));
                }
            }
            if sel.path.is_some_and(|p| p >= self.paths) {
                return Err(EmuError::Parse(format!("path out of range (paths = {})", self.paths)));
            }
            Ok(())
        };
        for o in &self.overrides {
            check(&o.sel)?;
            LinkProfile::parse(&o.profile)?;
        }
        for e in &self.schedule {
            check(&e.sel)?;
        }
        if let Some(h) = self.nat.iter().filter_map(|(h, _)| *h).find(|h| *h >= self.hosts) {
            return Err(EmuError::Parse(format!("nat: host {h} out of range (hosts = {})", self.hosts)));
        }
        self.validate_site_nat()?;
        Ok(())
    }

    fn validate_site_nat(&self) -> Result<()> {
        if self.site_nat.is_empty() {
            return Ok(());
        }
        if self.sites.is_empty() {
            return Err(EmuError::Parse("`nat site` needs sites".into()));
        }
        if let Some(s) = self.site_nat.iter().filter_map(|(s, _)| *s).find(|s| *s >= self.site_count()) {
            return Err(EmuError::Parse(format!("nat site {s}: there are {} sites", self.site_count())));
        }
        for s in 0..self.site_count() {
            let kind = self.site_nat_of(s);
            if kind == NatKind::None {
                continue;
            }
            if !matches!(kind, NatKind::Masq | NatKind::Symmetric) {
                return Err(EmuError::Parse(format!("nat site {s} {kind}: a site's router masquerades (masq or symmetric)")));
            }
            if self.paths != 1 {
                return Err(EmuError::Parse("a site behind NAT has one path".into()));
            }
            if let Some(h) = self.site_hosts(s).into_iter().find(|&h| self.nat_of(h) != NatKind::None) {
                return Err(EmuError::Parse(format!("host {h} has NAT of its own in site {s}, which is behind NAT")));
            }
        }
        Ok(())
    }

    /// Number of one-way links (every ordered pair, on every path).
    pub fn link_count(&self) -> usize {
        self.paths as usize * self.hosts * self.hosts
    }

    /// Dense index of the direction `src -> dst` on `path`.
    pub fn link_index(&self, src: usize, dst: usize, path: u8) -> usize {
        (path as usize * self.hosts + src) * self.hosts + dst
    }

    /// Inverse of `link_index`.
    pub fn link_of_index(&self, idx: usize) -> (usize, usize, u8) {
        let n = self.hosts;
        ((idx / n) % n, idx % n, (idx / (n * n)) as u8)
    }

    /// The profile in force on `src -> dst` over `path`: the default with every
    /// matching override applied in file order.
    pub fn profile_for(&self, src: usize, dst: usize, path: u8) -> Result<LinkProfile> {
        let same_site = !self.sites.is_empty() && self.site_of(src) == self.site_of(dst);
        let mut p = if same_site { self.lan } else { self.default };
        for o in self.overrides.iter().filter(|o| o.sel.matches(src, dst, path)) {
            p.apply(&o.profile)?;
        }
        Ok(p)
    }

    /// Parse the text form described in the module docs.
    pub fn parse(text: &str) -> Result<Self> {
        let mut t = Topology::uniform(2, LinkProfile::default());
        for (no, raw) in text.lines().enumerate() {
            let line = raw.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            parse_line(&mut t, line).map_err(|e| EmuError::Parse(format!("line {}: {e}", no + 1)))?;
        }
        t.validate()?;
        Ok(t)
    }

    /// The text form; `Topology::parse` reads it back to an equal value.
    pub fn to_text(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "hosts {}\npaths {}\nseed {}\ndefault {}", self.hosts, self.paths, self.seed, self.default);
        if !self.sites.is_empty() {
            let list: Vec<String> = self.sites.iter().map(|x| x.to_string()).collect();
            let _ = writeln!(s, "sites {}\nlan {}", list.join(" "), self.lan);
        }
        for (h, k) in &self.nat {
            let _ = writeln!(s, "nat {} {k}", h.map_or("*".to_string(), |h| h.to_string()));
        }
        for (site, k) in &self.site_nat {
            let _ = writeln!(s, "nat site {} {k}", site.map_or("*".to_string(), |h| h.to_string()));
        }
        for o in &self.overrides {
            o.sel.fmt_into(&mut s);
            let _ = writeln!(s, " {}", o.profile);
        }
        for e in &self.schedule {
            let _ = write!(s, "at {} {} ", fmt_duration_ns(e.at_ns), if e.up { "up" } else { "down" });
            e.sel.fmt_into(&mut s);
            s.push('\n');
        }
        s
    }
}

fn parse_line(t: &mut Topology, line: &str) -> Result<()> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let num = |w: Option<&&str>, what: &str| -> Result<u64> {
        w.and_then(|v| v.parse().ok()).ok_or_else(|| EmuError::Parse(format!("`{what}` needs a number")))
    };
    match words[0] {
        "hosts" => t.hosts = num(words.get(1), "hosts")? as usize,
        "paths" => t.paths = num(words.get(1), "paths")?.min(255) as u8,
        "seed" => t.seed = num(words.get(1), "seed")?,
        "default" => t.default = LinkProfile::parse(&words[1..].join(","))?,
        "lan" => t.lan = LinkProfile::parse(&words[1..].join(","))?,
        "nat" => {
            let bad = || EmuError::Parse("`nat` needs a host index (or *) and a kind, e.g. `nat 1 masq`, or `nat site S KIND`".into());
            if words.get(1) == Some(&"site") {
                let site = match words.get(2).copied().ok_or_else(bad)? {
                    "*" => None,
                    s => Some(s.parse::<usize>().map_err(|_| bad())?),
                };
                let kind = NatKind::parse(words.get(3).copied().ok_or_else(bad)?)?;
                if words.len() > 4 {
                    return Err(bad());
                }
                t.site_nat.push((site, kind));
                return Ok(());
            }
            let host = match words.get(1).copied().ok_or_else(bad)? {
                "*" => None,
                h => Some(h.parse::<usize>().map_err(|_| bad())?),
            };
            let kind = NatKind::parse(words.get(2).copied().ok_or_else(bad)?)?;
            if words.len() > 3 {
                return Err(bad());
            }
            t.nat.push((host, kind));
        }
        "sites" => {
            t.sites = parse_sites(&words[1..])?;
            t.hosts = t.sites.len();
        }
        "at" => {
            let at = words.get(1).ok_or_else(|| EmuError::Parse("`at` needs a time".into()))?;
            let up = match words.get(2).copied() {
                Some("up") => true,
                Some("down") => false,
                _ => return Err(EmuError::Parse("`at TIME` must be followed by up or down".into())),
            };
            let (sel, rest) = parse_sel(&words[3..])?;
            if !rest.is_empty() {
                return Err(EmuError::Parse(format!("unexpected `{}`", rest.join(" "))));
            }
            t.schedule.push(LinkEvent { at_ns: parse_duration_ns(at)?, sel, up });
        }
        _ => {
            let (sel, rest) = parse_sel(&words)?;
            let profile = rest.join(",");
            LinkProfile::parse(&profile)?;
            t.overrides.push(Override { sel, profile });
        }
    }
    Ok(())
}

/// `SxH` (S sites of H hosts) or one site index per host.
fn parse_sites(words: &[&str]) -> Result<Vec<usize>> {
    let bad = || EmuError::Parse("`sites` needs SxH (e.g. 3x3) or a site index per host".into());
    if let [one] = words {
        if let Some((a, b)) = one.split_once('x') {
            let (n, per) = (a.parse::<usize>().map_err(|_| bad())?, b.parse::<usize>().map_err(|_| bad())?);
            if n == 0 || per == 0 || n * per > MAX_HOSTS {
                return Err(EmuError::Parse(format!("`sites {one}`: need 1..={MAX_HOSTS} hosts in all")));
            }
            return Ok((0..n * per).map(|h| h / per).collect());
        }
    }
    let list: Vec<usize> = words.iter().map(|w| w.parse().map_err(|_| bad())).collect::<Result<_>>()?;
    if list.is_empty() {
        return Err(bad());
    }
    Ok(list)
}

/// `A -> B [path=P]` or `A <-> B [path=P]`; returns the words left over.
fn parse_sel<'a, 'b>(words: &'b [&'a str]) -> Result<(LinkSel, &'b [&'a str])> {
    if words.len() < 3 {
        return Err(EmuError::Parse("expected `A -> B` or `A <-> B`".into()));
    }
    let host = |w: &str| -> Result<Option<usize>> {
        if w == "*" {
            Ok(None)
        } else {
            w.parse().map(Some).map_err(|_| EmuError::Parse(format!("`{w}`: expected a host index or *")))
        }
    };
    let both = match words[1] {
        "<->" => true,
        "->" => false,
        w => return Err(EmuError::Parse(format!("`{w}`: expected -> or <->"))),
    };
    let mut sel = LinkSel { a: host(words[0])?, b: host(words[2])?, both, path: None };
    let mut rest = &words[3..];
    if let Some(p) = rest.first().and_then(|w| w.strip_prefix("path=")) {
        sel.path = Some(p.parse().map_err(|_| EmuError::Parse(format!("`path={p}`: expected 0 or 1")))?);
        rest = &rest[1..];
    }
    Ok((sel, rest))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "hosts 4\npaths 2\nseed 7\ndefault delay=20ms,loss=1%\n\
        0 <-> 1 delay=40ms\n0 -> 2 loss=5%   # one way\n0 <-> 1 path=1 delay=5ms\n\
        * -> 3 rate=10mbit,queue=50ms\nat 2s down 0 <-> 1\nat 3500ms up 0 <-> 1\n";

    #[test]
    fn resolves_profiles_in_order() {
        let t = Topology::parse(SAMPLE).unwrap();
        assert_eq!((t.hosts, t.paths, t.seed), (4, 2, 7));
        assert_eq!(t.profile_for(1, 0, 0).unwrap().delay_ns, 40_000_000);
        assert_eq!(t.profile_for(0, 1, 1).unwrap().delay_ns, 5_000_000);
        let p = t.profile_for(0, 2, 0).unwrap();
        assert!((p.loss - 0.05).abs() < 1e-12);
        assert_eq!(p.delay_ns, 20_000_000);
        assert!((t.profile_for(2, 0, 0).unwrap().loss - 0.01).abs() < 1e-12);
        assert_eq!(t.profile_for(2, 3, 1).unwrap().rate_bps, 10_000_000);
        assert_eq!(t.profile_for(3, 2, 1).unwrap().rate_bps, 0);
        assert_eq!(t.schedule.len(), 2);
        assert!(t.schedule[1].up && t.schedule[1].at_ns == 3_500_000_000);
    }

    #[test]
    fn text_round_trip() {
        let t = Topology::parse(SAMPLE).unwrap();
        assert_eq!(Topology::parse(&t.to_text()).unwrap(), t);
    }

    #[test]
    fn link_indices_are_dense_and_invertible() {
        let t = Topology::parse(SAMPLE).unwrap();
        let mut seen = vec![false; t.link_count()];
        for path in 0..2 {
            for s in 0..4 {
                for d in 0..4 {
                    let i = t.link_index(s, d, path);
                    assert!(!seen[i]);
                    seen[i] = true;
                    assert_eq!(t.link_of_index(i), (s, d, path));
                }
            }
        }
    }

    #[test]
    fn sites_give_lan_links_inside_and_the_default_between() {
        let t = Topology::parse("sites 3x2\nlan delay=100us\ndefault delay=40ms,loss=1%\n2 <-> 3 delay=50ms\n").unwrap();
        assert_eq!(t.hosts, 6);
        assert_eq!(t.sites, [0, 0, 1, 1, 2, 2]);
        let inside = t.profile_for(2, 3, 0).unwrap();
        assert_eq!((inside.delay_ns, inside.loss), (50_000_000, 0.0), "override on top of the LAN profile");
        let lan = t.profile_for(4, 5, 0).unwrap();
        assert_eq!((lan.delay_ns, lan.loss), (100_000, 0.0));
        let wan = t.profile_for(1, 4, 0).unwrap();
        assert_eq!(wan.delay_ns, 40_000_000);
        assert!((wan.loss - 0.01).abs() < 1e-12);
        assert_eq!(Topology::parse(&t.to_text()).unwrap(), t);
        let listed = Topology::parse("sites 0 0 1\n").unwrap();
        assert_eq!((listed.hosts, listed.site_of(2)), (3, 1));
        assert_eq!(Topology::sites(2, 2, LinkProfile::default(), LinkProfile::default()).sites, [0, 0, 1, 1]);
        for bad in ["sites", "sites 0x3", "sites 3xq", "sites a b", "sites 0 1\nhosts 3"] {
            assert!(Topology::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn nat_entries() {
        let t = Topology::parse("hosts 3\nnat * 1to1\nnat 1 masq\n").unwrap();
        assert_eq!([t.nat_of(0), t.nat_of(1), t.nat_of(2)], [NatKind::OneToOne, NatKind::Masq, NatKind::OneToOne]);
        assert_eq!(Topology::parse(&t.to_text()).unwrap(), t);
        assert_eq!(Topology::uniform(2, LinkProfile::default()).nat_of(1), NatKind::None);
        let mut u = Topology::uniform(3, LinkProfile::default());
        u.set_nat(&[NatKind::None, NatKind::Symmetric]).unwrap();
        assert_eq!([u.nat_of(0), u.nat_of(1), u.nat_of(2)], [NatKind::None, NatKind::Symmetric, NatKind::None]);
        assert!(u.set_nat(&[NatKind::Masq; 4]).is_err());
        let s = Topology::parse("sites 2x2\nnat site 1 masq\n").unwrap();
        assert_eq!((s.site_nat_of(0), s.site_nat_of(1), s.site_hosts(1)), (NatKind::None, NatKind::Masq, vec![2, 3]));
        assert_eq!(Topology::parse(&s.to_text()).unwrap(), s);
        for bad in [
            "hosts 2\nnat 2 masq",
            "nat 0 full",
            "nat masq",
            "nat 0 masq extra",
            "nat site 0 masq",
            "sites 2x2\nnat site 2 masq",
            "sites 2x2\nnat site 1 1to1",
            "sites 2x2\nnat site 1 masq\nnat 3 1to1",
            "sites 2x2\npaths 2\nnat site 0 masq",
        ] {
            assert!(Topology::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn rejects_out_of_range() {
        assert!(Topology::parse("hosts 2\n0 -> 5 delay=1ms").is_err());
        assert!(Topology::parse("hosts 2\n0 -> 1 path=1 delay=1ms").is_err());
        assert!(Topology::parse("hosts 0").is_err());
        assert!(Topology::parse("at soon down 0 -> 1").is_err());
    }
}
