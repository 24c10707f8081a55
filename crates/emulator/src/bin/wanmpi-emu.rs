//! `wanmpi-emu`: bring up, inspect, drive and tear down a WAN emulation.
//! See docs/emulator.md.

use clap::{Parser, Subcommand};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use wanmpi_emulator::state::{self, DEFAULT_ROOT};
use wanmpi_emulator::{down_all, down_dir, EmuError, Emulation, LinkProfile, NatKind, Topology, UpOptions};

#[derive(Parser)]
#[command(name = "wanmpi-emu", version, about = "WAN emulator: hosts in network namespaces joined by emulated links")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(clap::Args)]
struct Which {
    /// State directory of the emulation (default: the only one under /run/wanmpi-emu).
    #[arg(long)]
    state: Option<PathBuf>,
    /// Emulation id (its state directory is /run/wanmpi-emu/ID).
    #[arg(long, conflicts_with = "state")]
    id: Option<String>,
}

#[derive(Subcommand)]
enum Cmd {
    /// Create the hosts and start the forwarder; prints the state directory.
    Up {
        #[arg(long)]
        hosts: Option<usize>,
        /// Uniform profile for every link, e.g. delay=20ms,jitter=1ms,loss=1%,rate=100mbit,queue=50ms.
        #[arg(long)]
        profile: Option<String>,
        /// Topology file with per-pair profiles and a link schedule (see docs/emulator.md).
        #[arg(long)]
        config: Option<PathBuf>,
        /// Seed of the loss and jitter draws.
        #[arg(long)]
        seed: Option<u64>,
        /// Give every host a second address/TUN (198.19.0.0/24).
        #[arg(long)]
        second_path: bool,
        /// State directory to create (default /run/wanmpi-emu/<id>).
        #[arg(long)]
        state: Option<PathBuf>,
        /// TCP congestion control in every host (reno, cubic, bbr).
        #[arg(long)]
        cc: Option<String>,
        /// MTU of the hosts' devices (576..65000, default 1500, a real WAN's;
        /// 65000 makes a TCP segment one forwarder read).
        #[arg(long)]
        mtu: Option<u32>,
        /// NAT in front of the hosts: one kind for all or one per host in
        /// order (none, 1to1, masq, symmetric), e.g. none,masq.
        #[arg(long, value_name = "KIND[,KIND...]")]
        nat: Option<String>,
    },
    /// Stop the forwarder, delete the namespaces, remove the state; prints final counters.
    Down {
        #[command(flatten)]
        which: Which,
        /// Tear down every emulation under /run/wanmpi-emu.
        #[arg(long)]
        all: bool,
    },
    /// Per-link counters: packets, bytes, drops by reason, queue high-water.
    Status {
        #[command(flatten)]
        which: Which,
        /// Also links without traffic.
        #[arg(long)]
        all: bool,
        /// Machine-readable lines instead of a table.
        #[arg(long)]
        raw: bool,
    },
    /// List hosts: index, namespace, public addresses, NAT kind, private address.
    Hosts {
        #[command(flatten)]
        which: Which,
    },
    /// Run a command inside a host (index, h<i>, namespace name or address).
    Exec {
        #[command(flatten)]
        which: Which,
        host: String,
        #[arg(last = true, required = true)]
        cmd: Vec<String>,
    },
    /// Launch agent used as ssh is: run CMD (one string for `sh -c`) in HOST
    /// as a separate machine (its network, /tmp, /dev/shm, host name).
    /// STATE is the emulation's state directory or id, e.g.
    /// `mpirun --launch-agent "wanmpi-emu agent /run/wanmpi-emu/3fa2c1"`.
    Agent {
        state: String,
        host: String,
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, required = true)]
        cmd: Vec<String>,
    },
    /// A NATed host's mappings: forget them all (expire) or give every flow
    /// a new public port (rebind).
    Nat {
        #[command(flatten)]
        which: Which,
        host: String,
        #[arg(value_parser = ["expire", "rebind"])]
        action: String,
    },
    /// Take both directions between two hosts down or up.
    Link {
        #[command(flatten)]
        which: Which,
        a: String,
        b: String,
        #[arg(value_parser = ["up", "down"])]
        action: String,
        /// Only this path (0 or 1).
        #[arg(long)]
        path: Option<u8>,
    },
    /// Run the forwarder (started by `up`; not for direct use).
    #[command(hide = true)]
    Forward {
        #[arg(long)]
        state: PathBuf,
    },
    /// Hold a host's mount and UTS namespaces (started by `up`; not for direct use).
    #[command(hide = true)]
    Hold {
        #[arg(long)]
        state: PathBuf,
        #[arg(long)]
        host: usize,
    },
}

fn state_dir(w: &Which) -> Result<PathBuf, EmuError> {
    if let Some(s) = &w.state {
        return Ok(s.clone());
    }
    if let Some(id) = &w.id {
        return Ok(Path::new(DEFAULT_ROOT).join(id));
    }
    let all = state::list(Path::new(DEFAULT_ROOT));
    match all.len() {
        1 => Ok(all[0].clone()),
        0 => Err(EmuError::state(DEFAULT_ROOT, "no emulation is up")),
        n => Err(EmuError::state(DEFAULT_ROOT, format!("{n} emulations are up; pick one with --id or --state"))),
    }
}

fn topology(
    hosts: Option<usize>,
    profile: Option<String>,
    config: Option<PathBuf>,
    seed: Option<u64>,
    second: bool,
    nat: Option<String>,
) -> Result<Topology, EmuError> {
    let mut t = match config {
        Some(p) => {
            let text = std::fs::read_to_string(&p).map_err(|e| EmuError::Parse(format!("{}: {e}", p.display())))?;
            Topology::parse(&text)?
        }
        None => Topology::uniform(2, LinkProfile::default()),
    };
    if let Some(h) = hosts {
        t.hosts = h;
    }
    if let Some(p) = profile {
        t.default = LinkProfile::parse(&p)?;
    }
    if let Some(s) = seed {
        t.seed = s;
    }
    if second {
        t.paths = 2;
    }
    if let Some(n) = nat {
        t.set_nat(&NatKind::parse_list(&n)?)?;
    }
    t.validate()?;
    Ok(t)
}

/// A host's public addresses, then `nat=KIND private=ADDR` when NATed (a
/// host of a site behind NAT: the site's public address).
fn host_line(emu: &Emulation, h: &wanmpi_emulator::Host) -> String {
    let mut words: Vec<String> = h.addrs.iter().map(|a| a.to_string()).collect();
    if let Ok(n) = emu.nat(h.index) {
        if let Some(p) = n.private {
            words = vec![n.public.to_string(), format!("nat={} private={p}", n.kind)];
        }
    }
    words.join(" ")
}

fn run(cli: Cli) -> Result<(), EmuError> {
    match cli.cmd {
        Cmd::Up { hosts, profile, config, seed, second_path, state, cc, mtu, nat } => {
            let topo = topology(hosts, profile, config, seed, second_path, nat)?;
            let opts = UpOptions { forwarder_exe: None, state_dir: state, congestion_control: cc, mtu };
            let emu = Emulation::up(&topo, &opts)?;
            eprintln!("emulation {} up: {} hosts, default link {}", emu.id(), emu.host_count(), topo.default);
            for h in emu.hosts() {
                eprintln!("  host {}  netns {}  {}", h.index, h.netns, host_line(&emu, &h));
            }
            println!("{}", emu.detach().display());
        }
        Cmd::Down { which, all } => {
            if all {
                for (d, r) in down_all(Path::new(DEFAULT_ROOT)) {
                    match r {
                        Ok(_) => eprintln!("removed {}", d.display()),
                        Err(e) => eprintln!("{}: {e}", d.display()),
                    }
                }
            } else if let Some(c) = down_dir(&state_dir(&which)?)? {
                print!("{}", c.to_table(false));
            }
        }
        Cmd::Status { which, all, raw } => {
            let emu = Emulation::attach(&state_dir(&which)?)?;
            let c = emu.counters()?;
            print!("{}", if raw { c.to_text() } else { c.to_table(all) });
        }
        Cmd::Hosts { which } => {
            let emu = Emulation::attach(&state_dir(&which)?)?;
            for h in emu.hosts() {
                println!("{} {} {}", h.index, h.netns, host_line(&emu, &h));
            }
        }
        Cmd::Exec { which, host, cmd } => {
            let emu = Emulation::attach(&state_dir(&which)?)?;
            let i = emu.resolve_host(&host)?;
            let mut c = emu.command(i, &cmd[0])?;
            c.args(&cmd[1..]);
            // exec replaces us: exit status and signals are the command's own
            let e = c.exec();
            return Err(EmuError::Forwarder(format!("exec {}: {e}", cmd[0])));
        }
        Cmd::Nat { which, host, action } => {
            let emu = Emulation::attach(&state_dir(&which)?)?;
            let i = emu.resolve_host(&host)?;
            if action == "rebind" {
                emu.rebind_nat(i)?;
            } else {
                emu.expire_nat(i)?;
            }
        }
        Cmd::Link { which, a, b, action, path } => {
            let emu = Emulation::attach(&state_dir(&which)?)?;
            let (a, b) = (emu.resolve_host(&a)?, emu.resolve_host(&b)?);
            emu.set_link(a, b, action == "up", path)?;
        }
        Cmd::Forward { state } => wanmpi_emulator::forwarder::run(&state)?,
        Cmd::Hold { state, host } => wanmpi_emulator::hostns::hold(&state, host)?,
        Cmd::Agent { state, host, cmd } => return Err(wanmpi_emulator::agent::run(&state, &host, &cmd)),
    }
    Ok(())
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("wanmpi-emu: {e}");
            ExitCode::from(if matches!(e, EmuError::NotPermitted(_)) { 77 } else { 1 })
        }
    }
}
