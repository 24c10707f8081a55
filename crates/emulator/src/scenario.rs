//! Ready-made NAT scenarios (issue 26) for tests of any crate: which host
//! sits behind which NAT, where mpirun runs and where the ranks go, brought
//! up with a hostfile naming the rank hosts by name with their public
//! addresses (`addr=`) and the ssh-like agent (`agent.rs`), so a job runs
//! as it would across separate machines.
//!
//! ```no_run
//! use wanmpi_emulator::scenario;
//! # fn main() -> Result<(), wanmpi_emulator::EmuError> {
//! let s = scenario::by_name("cloud").expect("known").up("delay=10ms", &Default::default())?;
//! let status = s.mpirun("/path/to/mpirun".as_ref(), &[], "/path/to/hello".as_ref(), &[])?.status();
//! # let _ = status; Ok(()) }
//! ```

use crate::emulation::{Emulation, UpOptions};
use crate::error::{EmuError, Result};
use crate::hostns::host_name;
use crate::nat::NatKind;
use crate::profile::LinkProfile;
use crate::topology::Topology;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Who is behind what, where mpirun runs and where the ranks go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scenario {
    pub name: &'static str,
    /// What it stands for.
    pub about: &'static str,
    /// The NAT of each host, in host order.
    pub nat: &'static [NatKind],
    /// The host mpirun runs on.
    pub driver: usize,
    /// The host of each rank, in rank order (one rank per host).
    pub ranks: &'static [usize],
    /// The site of each host (empty: every host a site of its own).
    pub sites: &'static [usize],
    /// The NAT in front of each site as a whole (one router per site).
    pub site_nat: &'static [NatKind],
}

use NatKind::{Masq, None as Open, OneToOne, Symmetric};

/// The issue's four scenarios, both sites behind symmetric NATs, a campus
/// (two hosts behind one router), and the control (no NAT) that must pass
/// on any code.
pub const SCENARIOS: [Scenario; 7] = [
    Scenario {
        name: "open",
        about: "no NAT: two public hosts, mpirun on the first",
        nat: &[Open, Open],
        driver: 0,
        ranks: &[0, 1],
        sites: &[],
        site_nat: &[],
    },
    Scenario {
        name: "cloud",
        about: "cloud regions: each VM behind 1:1 NAT, mpirun on the first",
        nat: &[OneToOne, OneToOne],
        driver: 0,
        ranks: &[0, 1],
        sites: &[],
        site_nat: &[],
    },
    Scenario {
        name: "firewall",
        about: "one site behind a masquerading firewall that lets nothing in, mpirun at the public site",
        nat: &[Open, Masq],
        driver: 0,
        ranks: &[0, 1],
        sites: &[],
        site_nat: &[],
    },
    Scenario {
        name: "both-masq",
        about: "both sites behind masquerading NATs, mpirun at the first",
        nat: &[Masq, Masq],
        driver: 0,
        ranks: &[0, 1],
        sites: &[],
        site_nat: &[],
    },
    Scenario {
        name: "laptop",
        about: "mpirun on a laptop behind NAT, ranks on two public hosts",
        nat: &[Masq, Open, Open],
        driver: 0,
        ranks: &[1, 2],
        sites: &[],
        site_nat: &[],
    },
    Scenario {
        name: "symmetric",
        about: "both sites behind symmetric NATs, mpirun on a public host (a relay both reach)",
        nat: &[Open, Symmetric, Symmetric],
        driver: 0,
        ranks: &[1, 2],
        sites: &[],
        site_nat: &[],
    },
    Scenario {
        name: "campus",
        about: "a campus cluster: two hosts behind one masquerading router, mpirun and a rank on a public host",
        nat: &[Open, Open, Open],
        driver: 0,
        ranks: &[0, 1, 2],
        sites: &[0, 1, 1],
        site_nat: &[Open, Masq],
    },
];

/// The scenario called `name`.
pub fn by_name(name: &str) -> Option<Scenario> {
    SCENARIOS.iter().copied().find(|s| s.name == name)
}

/// A scenario brought up: the emulation (torn down on drop) and the
/// hostfile (in the state directory, which every host sees).
pub struct Setup {
    pub scenario: Scenario,
    pub emu: Emulation,
    pub hostfile: PathBuf,
}

impl Scenario {
    /// Bring it up with `profile` on every link.
    pub fn up(&self, profile: &str, opts: &UpOptions) -> Result<Setup> {
        let mut topo = Topology::uniform(self.nat.len(), LinkProfile::parse(profile)?);
        topo.set_nat(self.nat)?;
        if !self.sites.is_empty() {
            topo.sites = self.sites.to_vec();
            topo.set_site_nat(self.site_nat)?;
        }
        topo.validate()?;
        let emu = Emulation::up(&topo, opts)?;
        let hostfile = emu.state_dir().join("scenario.hosts");
        std::fs::write(&hostfile, self.hostfile_text(&emu)?).map_err(|e| EmuError::io(format!("writing {}", hostfile.display()), e))?;
        Ok(Setup { scenario: *self, emu, hostfile })
    }

    /// One line per rank host: its name (as the agent and `/etc/hosts`
    /// know it), its public address, and its site when there are sites.
    pub fn hostfile_text(&self, emu: &Emulation) -> Result<String> {
        let mut s = String::new();
        for &h in self.ranks {
            s.push_str(&format!("{} slots=1 addr={}", host_name(h), emu.nat(h)?.public));
            if let Some(site) = self.sites.get(h) {
                s.push_str(&format!(" site=site{site}"));
            }
            s.push('\n');
        }
        Ok(s)
    }
}

impl Setup {
    /// The launch agent's words for mpirun (`--launch-agent`).
    pub fn agent(&self) -> String {
        self.emu.agent_command()
    }

    /// `mpirun --launch-agent AGENT --hostfile F -n RANKS EXTRA... PROGRAM
    /// ARGS...`, to run inside the driver host as a separate machine (its
    /// own network, `/tmp`, host name), with no `WANMPI_*` of the caller's.
    pub fn mpirun(&self, mpirun: &Path, extra: &[&str], program: &Path, args: &[&str]) -> Result<Command> {
        let mut c = self.emu.isolated_command(self.scenario.driver, mpirun)?;
        c.arg("--launch-agent").arg(self.agent()).arg("--hostfile").arg(&self.hostfile);
        c.arg("-n").arg(self.scenario.ranks.len().to_string()).args(extra).arg(program).args(args);
        for (k, _) in std::env::vars().filter(|(k, _)| k.starts_with("WANMPI_") || k.starts_with("SLURM_")) {
            c.env_remove(k);
        }
        c.stdin(Stdio::null());
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scenarios_are_consistent() {
        for s in SCENARIOS {
            assert!(s.driver < s.nat.len(), "{}", s.name);
            assert!(s.ranks.iter().all(|&r| r < s.nat.len()), "{}", s.name);
            assert!(s.sites.is_empty() || s.sites.len() == s.nat.len(), "{}", s.name);
        }
        assert_eq!(by_name("cloud").map(|s| s.nat), Some(&[NatKind::OneToOne, NatKind::OneToOne][..]));
        assert!(by_name("nowhere").is_none());
    }
}
