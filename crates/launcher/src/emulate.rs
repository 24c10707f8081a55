//! `mpirun --emulate PROFILE`: bring up a WAN emulation with one emulated
//! host per rank, place rank i on host i (inside its network namespace,
//! publishing its 198.18.x.y address), and tear the emulation down when the
//! job ends, however it ends (the `Emulation` value tears down on drop).
//!
//! `--emulate-nat` puts hosts behind NAT (the emulator's `nat.rs`);
//! `--emulate-isolated` makes the hosts separate machines: ranks started by
//! `wanmpi-emu agent` (as ssh would) in hosts with their own `/tmp` and
//! `/dev/shm`, and mpirun itself moved into one more emulated host, so the
//! key/value service is reached over the emulated network, never through a
//! shared unix socket. Without it ranks run under `ip netns exec` and share
//! this machine's files (the default: what every emulated test measured).

use crate::error::LaunchError;
use crate::hosts::HostEntry;
use crate::spec::{BootstrapChoice, JobSpec};
use std::path::Path;
use wanmpi_emulator::{Emulation, LinkProfile, NatKind, Topology, UpOptions};

/// The launch agent that runs a rank inside an emulated host.
pub const NETNS_AGENT: &str = "ip netns exec {host}";

const CC_KEY: &str = "net.ipv4.tcp_congestion_control";

/// Emulated sites (`--emulate-sites SxH[xR]`): S sites of H hosts, R ranks
/// on each host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SiteLayout {
    pub sites: usize,
    pub hosts_per_site: usize,
    pub ranks_per_host: usize,
}

impl SiteLayout {
    pub fn parse(s: &str) -> Result<SiteLayout, LaunchError> {
        let bad = || LaunchError::Usage(format!("--emulate-sites {s:?}: expected SxH or SxHxR (sites x hosts per site x ranks per host), e.g. 3x3"));
        let n: Vec<usize> = s.split('x').map(|w| w.trim().parse::<usize>().map_err(|_| bad())).collect::<Result<_, _>>()?;
        let l = match n[..] {
            [a, b] => SiteLayout { sites: a, hosts_per_site: b, ranks_per_host: 1 },
            [a, b, c] => SiteLayout { sites: a, hosts_per_site: b, ranks_per_host: c },
            _ => return Err(bad()),
        };
        if l.sites == 0 || l.hosts_per_site == 0 || l.ranks_per_host == 0 {
            return Err(bad());
        }
        Ok(l)
    }

    pub fn hosts(&self) -> usize {
        self.sites * self.hosts_per_site
    }

    pub fn ranks(&self) -> usize {
        self.hosts() * self.ranks_per_host
    }
}

/// The topology of a job of `ranks` ranks over emulated sites: `wan` between
/// sites, `lan` inside each.
pub fn site_topology(layout: SiteLayout, wan: &str, lan: &str) -> Result<Topology, LaunchError> {
    let bad = |what: &str, e: wanmpi_emulator::EmuError| LaunchError::Usage(format!("{what}: {e}"));
    let wan = LinkProfile::parse(wan).map_err(|e| bad("--emulate", e))?;
    let lan = LinkProfile::parse(lan).map_err(|e| bad("--emulate-lan", e))?;
    let topo = Topology::sites(layout.sites, layout.hosts_per_site, lan, wan);
    topo.validate().map_err(|e| bad("--emulate-sites", e))?;
    Ok(topo)
}

/// The topology for `hosts` ranks: PROFILE is a topology file when such a
/// file exists, else a link profile (`delay=20ms,loss=1%`) for every link.
/// A file with fewer hosts than ranks gets more (on its default profile);
/// one with more keeps them and the extra hosts stay idle.
pub fn topology(profile: &str, hosts: usize) -> Result<Topology, LaunchError> {
    let bad = |e: wanmpi_emulator::EmuError| LaunchError::Usage(format!("--emulate {profile:?}: {e}"));
    let path = Path::new(profile);
    let mut topo = if path.is_file() {
        let text = std::fs::read_to_string(path).map_err(|e| LaunchError::Read(profile.to_string(), e))?;
        Topology::parse(&text).map_err(bad)?
    } else {
        Topology::uniform(hosts, LinkProfile::parse(profile).map_err(bad)?)
    };
    topo.hosts = topo.hosts.max(hosts);
    topo.validate().map_err(bad)?;
    Ok(topo)
}

/// `--emulate-isolated`, `--emulate-nat` and `--emulate-site-nat` applied
/// to the topology: with isolation one more host for mpirun (the last,
/// returned), in a site of its own; the NAT kinds (one for all, or per host
/// in order, mpirun's host last; per site for `site_nat`) on top.
pub fn with_nat(mut topo: Topology, isolated: bool, (nat, site_nat): (Option<&str>, Option<&str>)) -> Result<(Topology, Option<usize>), LaunchError> {
    let bad = |e: wanmpi_emulator::EmuError| {
        LaunchError::Usage(format!("--emulate-nat {} --emulate-site-nat {}: {e}", nat.unwrap_or("-"), site_nat.unwrap_or("-")))
    };
    let driver = isolated.then_some(topo.hosts);
    if isolated {
        topo.hosts += 1;
        if let Some(last) = topo.sites.iter().max().copied() {
            topo.sites.push(last + 1);
        }
    }
    if let Some(list) = nat {
        topo.set_nat(&NatKind::parse_list(list).map_err(bad)?).map_err(bad)?;
    }
    if let Some(list) = site_nat {
        topo.set_site_nat(&NatKind::parse_list(list).map_err(bad)?).map_err(bad)?;
    }
    topo.validate().map_err(bad)?;
    Ok((topo, driver))
}

/// Make the job one across separate machines (`--emulate-isolated`): the
/// rank hosts named as the agent and their `/etc/hosts` know them, with
/// their public addresses; ranks started by `wanmpi-emu agent`; this
/// process moved into host `driver` (network, host name, files), so the
/// key/value service it starts listens there. mpirun is single-threaded
/// here, as entering a mount namespace needs.
pub fn isolate(spec: &mut JobSpec, emu: &Emulation, rank_hosts: usize, driver: usize) -> Result<(), LaunchError> {
    let fail = |e: wanmpi_emulator::EmuError| LaunchError::Emulation(e.to_string());
    for (i, h) in spec.hosts.iter_mut().enumerate().take(rank_hosts) {
        h.name = wanmpi_emulator::hostns::host_name(i);
        h.addr = Some(emu.nat(i).map_err(fail)?.public.to_string());
    }
    spec.launch_agent = emu.agent_command();
    // ranks cannot see a unix socket here: the service goes over TCP
    if spec.bootstrap == BootstrapChoice::Unix {
        spec.bootstrap = BootstrapChoice::Auto;
    }
    let cwd = std::env::current_dir().ok();
    emu.host_ns(driver).map_err(fail)?.enter().map_err(|e| LaunchError::Emulation(format!("entering emulated host {driver}: {e}")))?;
    // entering the mount namespace left us at its root; a shared file system's cwd is there too
    let back = cwd.filter(|d| d.is_dir()).unwrap_or_else(|| "/".into());
    std::env::set_current_dir(&back).map_err(|e| LaunchError::Emulation(format!("cd {} in emulated host {driver}: {e}", back.display())))?;
    Ok(())
}

/// Bring the emulation up, with `cc` as every host's TCP congestion control
/// when given. The forwarder is the `wanmpi-emu` binary (see the emulator's
/// `UpOptions`: `$WANMPI_EMU_BIN`, beside this program, or on `PATH`).
pub fn bring_up(topo: &Topology, cc: Option<&str>, mtu: Option<u32>) -> Result<Emulation, LaunchError> {
    if let Some(c) = cc {
        if !matches!(c, "reno" | "cubic" | "bbr") {
            return Err(LaunchError::Usage(format!("--emulate-cc {c}: expected reno, cubic or bbr")));
        }
    }
    let opts = UpOptions { congestion_control: cc.map(str::to_string), mtu, ..UpOptions::default() };
    Emulation::up(topo, &opts).map_err(|e| LaunchError::Emulation(e.to_string()))
}

/// The TCP congestion control in force inside emulated host `index`.
pub fn congestion_control(emu: &Emulation, index: usize) -> Result<String, LaunchError> {
    let path = format!("/proc/sys/{}", CC_KEY.replace('.', "/"));
    let read = emu.in_host(index, move || std::fs::read_to_string(&path)).map_err(|e| LaunchError::Emulation(e.to_string()))?;
    Ok(read?.trim().to_string())
}

/// One host entry per emulated host with `slots` slots, addressed on its
/// first path, in its site when the topology has sites.
pub fn hosts_of(emu: &Emulation, count: usize, slots: u32) -> Vec<HostEntry> {
    let topo = emu.topology();
    let site = |i: usize| (!topo.sites.is_empty()).then(|| format!("site{}", topo.site_of(i)));
    emu.hosts()
        .into_iter()
        .take(count)
        .enumerate()
        .map(|(i, h)| HostEntry { name: h.netns, slots, addr: h.addrs.first().map(|a| a.to_string()), site: site(i), ..HostEntry::default() })
        .collect()
}

/// Place the job's `np` ranks on the emulated hosts, `per_host` on each, in
/// order. The key/value service stays on a Unix socket: the namespaces
/// share this machine's filesystem.
pub fn place_on(spec: &mut JobSpec, emu: &Emulation, np: usize, per_host: usize) {
    spec.hosts = hosts_of(emu, np.div_ceil(per_host.max(1)), per_host.max(1) as u32);
    spec.np = Some(np as u32);
    spec.oversubscribe = false;
    spec.launch_agent = NETNS_AGENT.to_string();
    if spec.bootstrap == BootstrapChoice::Auto {
        spec.bootstrap = BootstrapChoice::Unix;
    }
    // Multihoming by configuration: with two paths, sctp ranks use both
    // (docs/sctp.md), unless the user chose their own addresses.
    let chosen = |k: &str| spec.env.iter().any(|(n, _)| n == k) || (spec.pass_wanmpi_env && std::env::var_os(k).is_some());
    if let Some(nets) = sctp_path_nets(emu.topology().paths) {
        if !chosen("WANMPI_SCTP_ADDRS") && !chosen("WANMPI_SCTP_PATH_NETS") {
            spec.env.push(("WANMPI_SCTP_PATH_NETS".into(), nets));
        }
    }
}

/// The networks of the emulator's further paths (host i is
/// 198.(18+p).0.(i+1)/24 on path p), in which every sctp rank finds its own
/// address for path p (WANMPI_SCTP_PATH_NETS); None with one path.
pub fn sctp_path_nets(paths: u8) -> Option<String> {
    use wanmpi_emulator::addr::{host_addr, PREFIX_LEN};
    let nets: Vec<String> = (1..paths)
        .map(|p| {
            let a = host_addr(0, p).octets();
            format!("{}.{}.{}.0/{PREFIX_LEN}", a[0], a[1], a[2])
        })
        .collect();
    (!nets.is_empty()).then(|| nets.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_path_network_for_sctp() {
        assert_eq!(sctp_path_nets(1), None);
        assert_eq!(sctp_path_nets(2).as_deref(), Some("198.19.0.0/24"));
    }

    #[test]
    fn site_layouts() {
        let l = SiteLayout::parse("3x2x2").unwrap();
        assert_eq!((l.hosts(), l.ranks()), (6, 12));
        assert_eq!(SiteLayout::parse("3x3").unwrap().ranks_per_host, 1);
        for bad in ["3", "0x3", "3x", "axb", "1x2x3x4"] {
            assert!(SiteLayout::parse(bad).is_err(), "{bad}");
        }
        let t = site_topology(SiteLayout::parse("2x2").unwrap(), "delay=40ms", "delay=100us").unwrap();
        assert_eq!(t.sites, [0, 0, 1, 1]);
        assert_eq!(t.profile_for(0, 1, 0).unwrap().delay_ns, 100_000);
        assert_eq!(t.profile_for(1, 2, 0).unwrap().delay_ns, 40_000_000);
    }

    #[test]
    fn nat_and_isolation_shape_the_topology() {
        let t = topology("delay=5ms", 2).unwrap();
        let (t1, driver) = with_nat(t.clone(), true, (Some("none,masq,1to1"), None)).unwrap();
        assert_eq!((t1.hosts, driver), (3, Some(2)));
        assert_eq!([t1.nat_of(0), t1.nat_of(1), t1.nat_of(2)], [NatKind::None, NatKind::Masq, NatKind::OneToOne]);
        let (t2, driver) = with_nat(t.clone(), false, (Some("symmetric"), None)).unwrap();
        assert_eq!((t2.hosts, driver, t2.nat_of(1)), (2, None, NatKind::Symmetric));
        assert!(with_nat(t.clone(), false, (Some("none,masq,masq"), None)).is_err(), "more kinds than hosts");
        assert!(with_nat(t, false, (Some("cgnat"), None)).is_err());
        let s = site_topology(SiteLayout::parse("2x2").unwrap(), "delay=40ms", "delay=100us").unwrap();
        let (s1, driver) = with_nat(s, true, (None, Some("none,masq"))).unwrap();
        assert_eq!((s1.hosts, driver, s1.sites.clone()), (5, Some(4), vec![0, 0, 1, 1, 2]), "mpirun's host a site of its own");
        assert_eq!((s1.site_nat_of(1), s1.site_nat_of(2)), (NatKind::Masq, NatKind::None));
    }

    #[test]
    fn profile_or_file() {
        let t = topology("delay=20ms,loss=1%", 3).unwrap();
        assert_eq!(t.hosts, 3);
        assert!(topology("delay=twenty", 2).is_err());
        let dir = std::env::temp_dir().join(format!("wanmpi-emtopo-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("topo.conf");
        std::fs::write(&f, "hosts 4\ndefault delay=5ms\n0 <-> 3 delay=40ms\n").unwrap();
        let t = topology(f.to_str().unwrap(), 2).unwrap();
        assert_eq!(t.hosts, 4, "a file's extra hosts stay");
        std::fs::write(&f, "hosts 2\ndefault delay=5ms\n").unwrap();
        assert_eq!(topology(f.to_str().unwrap(), 5).unwrap().hosts, 5, "more ranks than the file's hosts");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
