//! What makes an emulated host a machine of its own, as the API sees it:
//! where it is behind NAT, its NAT mappings expired or rebound on demand,
//! and its namespaces to enter (the launch agent's way in).

use crate::emulation::{find_forwarder, Emulation};
use crate::error::{EmuError, Result};
use crate::hostns::HostNs;
use crate::nat::{self, NatInfo, NatKind};
use crate::netns;
use crate::state::State;
use std::os::unix::process::CommandExt;
use std::process::Command;

impl Emulation {
    /// The NAT in front of host `index`: its kind, public and private address.
    pub fn nat(&self, index: usize) -> Result<NatInfo> {
        if index >= self.host_count() {
            return Err(EmuError::NoSuchHost(index.to_string()));
        }
        Ok(nat::info(self.topology(), index))
    }

    /// Forget every NAT mapping of host `index` (its conntrack table), as a
    /// NAT whose mappings timed out: replies on them no longer get in until
    /// the host sends again (a masq host then gets its old ports back).
    /// A host of a site behind NAT: its site's router, every host of the site.
    pub fn expire_nat(&self, index: usize) -> Result<()> {
        if self.nat(index)?.kind == NatKind::None {
            return Err(EmuError::Parse(format!("host {index} is not behind NAT")));
        }
        let ns = self.nat_netns(index)?;
        netns::in_netns(&ns, crate::conntrack::flush_current)?.map_err(|e| EmuError::io(format!("flushing the conntrack table of {ns}"), e))
    }

    /// The namespace doing host `index`'s NAT: its site's router, or its own.
    fn nat_netns(&self, index: usize) -> Result<String> {
        let site = self.topology().site_of(index);
        if !self.topology().sites.is_empty() && self.topology().site_nat_of(site) != NatKind::None {
            return Ok(State::router_name(&self.state().id, site));
        }
        Ok(self.host(index)?.netns)
    }

    /// Rebind host `index`'s NAT: every flow, old or new, gets a new public
    /// port (random, in `nat::REBOUND_PORTS`) from its next packet on, as
    /// when a NAT reboots or a carrier moves a flow; the old mappings are
    /// gone. A host rebound again gets new ports again.
    pub fn rebind_nat(&self, index: usize) -> Result<()> {
        let kind = self.nat(index)?.kind;
        if kind == NatKind::None {
            return Err(EmuError::Parse(format!("host {index} is not behind NAT")));
        }
        let site = self.topology().site_of(index);
        let rules = if self.nat_netns(index)? == self.host(index)?.netns {
            nat::rebound_ruleset(index, self.topology().paths, kind)
        } else {
            crate::sitenat::ruleset(site, kind, self.nat(index)?.public, true)
        };
        nat::load(&self.nat_netns(index)?, &rules)?;
        self.expire_nat(index)
    }

    /// The namespaces (network, host name, files) of host `index`, held by
    /// its holder process.
    pub fn host_ns(&self, index: usize) -> Result<HostNs> {
        let p = self.state().holder(index).ok_or_else(|| EmuError::state(&self.state().dir, format!("no holder recorded for host {index}")))?;
        HostNs::open(&self.host(index)?.netns, p)
    }

    /// A `Command` that runs `program` inside host `index` as a separate
    /// machine: its network, host name, `/tmp`, `/dev/shm` (the launch
    /// agent's way in; `command` enters only the network). It starts in
    /// the caller's working directory when that exists in the host (a
    /// shared file system), else in `/`; `Command::current_dir` would be
    /// undone by entering the mount namespace.
    pub fn isolated_command(&self, index: usize, program: impl AsRef<std::ffi::OsStr>) -> Result<Command> {
        use std::os::unix::ffi::OsStrExt;
        let ns = self.host_ns(index)?;
        let cwd = std::env::current_dir().ok().and_then(|d| std::ffi::CString::new(d.as_os_str().as_bytes()).ok());
        let root = std::ffi::CString::from(c"/");
        let mut cmd = Command::new(program);
        // SAFETY: the closure only calls setns and chdir on strings made
        // before the fork, which are async-signal-safe.
        unsafe {
            cmd.pre_exec(move || {
                ns.enter()?;
                if cwd.as_ref().is_none_or(|d| libc::chdir(d.as_ptr()) != 0) {
                    libc::chdir(root.as_ptr());
                }
                Ok(())
            });
        }
        Ok(cmd)
    }

    /// The launch agent into this emulation's hosts, as words for mpirun's
    /// `--launch-agent`: `wanmpi-emu agent STATE_DIR` (the binary found as
    /// binary that runs the forwarder, recorded in the state).
    pub fn agent_command(&self) -> String {
        let exe = self.state().exe.clone().unwrap_or_else(find_forwarder);
        format!("{} agent {}", exe.display(), self.state().dir.display())
    }
}
