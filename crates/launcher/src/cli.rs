//! The `mpirun` / `mpiexec` command line.

use crate::env_vars::parse_assignment;
use crate::error::LaunchError;
use crate::hosts::{self, HostEntry};
use crate::spec::{BootstrapChoice, JobSpec, OutputMode};
use clap::Parser;
use std::path::PathBuf;
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;
use std::time::Duration;

/// Starts the ranks of a wanmpi job and watches them. Options after PROGRAM
/// belong to PROGRAM.
#[derive(Debug, Parser)]
#[command(name = "mpirun", version, about, after_help = "Documentation: docs/launcher.md")]
pub struct Args {
    /// Number of ranks (also -np). Default: one per host slot.
    #[arg(short = 'n', long = "np", value_name = "N")]
    pub np: Option<u32>,
    /// Hosts and slots, e.g. a:2,b:2 (repeatable).
    #[arg(long = "host", value_name = "HOST[:SLOTS],...")]
    pub host: Vec<String>,
    /// Lines `host slots=N [addr=A]` or `host:N`; `#` comments.
    #[arg(long, value_name = "FILE")]
    pub hostfile: Option<PathBuf>,
    /// Command that runs a program on a host; `{host}` is replaced by the
    /// host name, otherwise the host is appended.
    #[arg(long, value_name = "CMD", default_value = "ssh")]
    pub launch_agent: String,
    /// Options for ssh as the launch agent, e.g. "-p 2222 -i KEY -J jump"
    /// (split on whitespace; repeatable).
    #[arg(long = "ssh-args", value_name = "ARGS", allow_hyphen_values = true)]
    pub ssh_args: Vec<String>,
    /// Export VAR (from this environment) or VAR=VALUE to every rank.
    #[arg(short = 'x', value_name = "VAR[=VALUE]")]
    pub export: Vec<String>,
    /// Set VAR=VALUE for every rank.
    #[arg(long = "env", value_name = "VAR=VALUE")]
    pub env: Vec<String>,
    /// Prefix each line of output with [rank].
    #[arg(long)]
    pub tag_output: bool,
    /// End the job (non-zero exit) if it runs longer than this (default:
    /// MPIEXEC_TIMEOUT from the environment, if set).
    #[arg(long, value_name = "SECONDS")]
    pub timeout: Option<f64>,
    /// Transport (WANMPI_TRANSPORT): auto (default: shared memory on a host, tcp in a site,
    /// --wan-transport between sites), or one for every peer: tcp, sctp, wamp, adaptive, shm.
    #[arg(long, value_name = "NAME")]
    pub transport: Option<String>,
    /// What carries traffic between sites under --transport auto (WANMPI_WAN_TRANSPORT):
    /// wamp (default), tcp, sctp, adaptive.
    #[arg(long, value_name = "NAME")]
    pub wan_transport: Option<String>,
    /// Eager/rendezvous threshold (WANMPI_EAGER_LIMIT).
    #[arg(long, value_name = "BYTES")]
    pub eager_limit: Option<u64>,
    /// Run the engine's progress thread (WANMPI_PROGRESS_THREAD=1).
    #[arg(long)]
    pub progress_thread: bool,
    /// What MPI_UNIVERSE_SIZE says: how many processes the job may usefully
    /// run in all, spawned ones included (WANMPI_UNIVERSE_SIZE). Unset by
    /// default, as MPICH's launcher leaves it: spawning is not limited.
    #[arg(long, value_name = "N")]
    pub universe_size: Option<u32>,
    /// Where the key/value service listens: auto, unix, tcp, unix:/PATH or tcp:HOST:PORT.
    #[arg(long, value_name = "KIND", default_value = "auto")]
    pub bootstrap: String,
    /// Every port the job listens or receives on (key/value service, tcp,
    /// sctp's and wamp's UDP) in LOW-HIGH, for firewalls (WANMPI_PORT_RANGE).
    #[arg(long, value_name = "LOW-HIGH")]
    pub port_range: Option<String>,
    /// Trust the network inside a site: tcp and sctp traffic between hosts
    /// of one site travels unencrypted (WANMPI_INSECURE_LAN=1). By default
    /// every tcp connection and sctp association between hosts is sealed
    /// (wamp always is); ranks of one host never are.
    #[arg(long)]
    pub insecure_lan: bool,
    /// WANMPI_ADDR for the ranks on HOST (repeatable).
    #[arg(long = "host-addr", value_name = "HOST=ADDR")]
    pub host_addr: Vec<String>,
    /// Every rank publishes its address inside this network, e.g.
    /// 198.19.0.0/16 (WANMPI_NET); default: the address the route toward
    /// the other hosts uses. `net=` in a hostfile overrides it per host.
    #[arg(long, value_name = "CIDR")]
    pub net: Option<String>,
    /// Every rank publishes this interface's address (WANMPI_IF); `if=` in
    /// a hostfile overrides it per host.
    #[arg(long = "if", value_name = "NAME")]
    pub iface: Option<String>,
    /// Allow more ranks than slots (wrap around the hosts).
    #[arg(long)]
    pub oversubscribe: bool,
    /// Run the job across a WAN emulation made for it: one emulated host per
    /// rank, every link with this profile (e.g. delay=20ms,loss=1%) or the
    /// topology in this file; torn down when the job ends.
    #[arg(long, value_name = "PROFILE|FILE", conflicts_with_all = ["host", "hostfile"])]
    pub emulate: Option<String>,
    /// TCP congestion control inside the emulated hosts (reno, cubic, bbr).
    /// Default: the kernel's.
    #[arg(long, value_name = "CC", requires = "emulate")]
    pub emulate_cc: Option<String>,
    /// MTU of the emulated hosts' devices (576..65000). Default 1500, a
    /// real WAN's packet size (loss is drawn per packet); 65000 was the
    /// default before and makes a long message meet far fewer losses.
    #[arg(long, value_name = "BYTES", requires = "emulate")]
    pub emulate_mtu: Option<u32>,
    /// Emulate sites: S sites of H hosts with R ranks on each host
    /// (`SxH` or `SxHxR`, e.g. 3x3). `--emulate` is then the profile of the
    /// links between sites, `--emulate-lan` that of links inside a site;
    /// ranks learn their sites (site-aware collectives, the WAN window).
    #[arg(long, value_name = "SxH[xR]", requires = "emulate")]
    pub emulate_sites: Option<String>,
    /// Profile of the links inside an emulated site.
    #[arg(long, value_name = "PROFILE", requires = "emulate_sites", default_value = "delay=100us")]
    pub emulate_lan: String,
    /// NAT in front of the emulated hosts: one kind for every host or one
    /// per host in order (none, 1to1, masq, symmetric), e.g. none,masq.
    /// With --emulate-isolated, mpirun's own host is the last.
    #[arg(long, value_name = "KIND[,KIND...]", requires = "emulate")]
    pub emulate_nat: Option<String>,
    /// NAT in front of whole emulated sites, one router per site shared by
    /// its hosts: one kind for every site or one per site in order (none,
    /// masq, symmetric).
    #[arg(long, value_name = "KIND[,KIND...]", requires = "emulate_sites")]
    pub emulate_site_nat: Option<String>,
    /// Emulated hosts as separate machines: each its own /tmp and /dev/shm,
    /// ranks started by the ssh-like `wanmpi-emu agent`, mpirun on one more
    /// emulated host of its own (the last), the key/value service over the
    /// emulated network.
    #[arg(long, requires = "emulate")]
    pub emulate_isolated: bool,
    /// A failing rank does not end the job: the others go on (their
    /// operations with it fail with MPIX_ERR_PROC_FAILED); the exit code
    /// comes from the survivors (WANMPI_TOLERATE_RANK_FAILURE=1).
    #[arg(long)]
    pub tolerate_rank_failure: bool,
    /// How long a peer's path may stay silent before the job gives the
    /// peer up, in seconds (WANMPI_OUTAGE_LIMIT; 600 by default). Senders
    /// wait meanwhile and everything resumes when the path answers again;
    /// a rank whose process dies is reported at once, whatever this is.
    #[arg(long, value_name = "SECONDS")]
    pub outage_limit: Option<String>,
    /// Seconds between SIGTERM and SIGKILL when ending ranks.
    #[arg(long, value_name = "SECONDS", default_value = "2")]
    pub grace: f64,
    /// Copy the program (and wanmpi's libmpi.so when it loads it) to each
    /// remote host first, into a per-job directory removed at the end.
    #[arg(long)]
    pub stage: bool,
    /// The program and its arguments.
    #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = false, value_name = "PROGRAM [ARGS]")]
    pub command: Vec<String>,
}

/// Options of ours that take a value, to find where the program starts.
const TAKES_VALUE: &[&str] = &[
    "-n",
    "--np",
    "--host",
    "--hostfile",
    "--launch-agent",
    "--ssh-args",
    "-x",
    "--env",
    "--timeout",
    "--transport",
    "--wan-transport",
    "--eager-limit",
    "--universe-size",
    "--bootstrap",
    "--port-range",
    "--host-addr",
    "--net",
    "--if",
    "--grace",
    "--outage-limit",
    "--emulate",
    "--emulate-cc",
    "--emulate-mtu",
    "--emulate-sites",
    "--emulate-lan",
    "--emulate-nat",
    "--emulate-site-nat",
];

/// Rewrites the traditional `-np N` to `-n N`, only before the program.
pub fn normalize(argv: Vec<String>) -> Vec<String> {
    let mut out = Vec::with_capacity(argv.len());
    let mut it = argv.into_iter();
    if let Some(a0) = it.next() {
        out.push(a0);
    }
    let mut in_options = true;
    let mut skip_value = false;
    for a in it {
        if in_options && !skip_value {
            if a == "--" {
                in_options = false;
            } else if a == "-np" {
                out.push("-n".into());
                skip_value = true;
                continue;
            } else if TAKES_VALUE.contains(&a.as_str()) {
                skip_value = true;
            } else if !a.starts_with('-') {
                in_options = false;
            }
        } else {
            skip_value = false;
        }
        out.push(a);
    }
    out
}

fn seconds(what: &str, s: f64) -> Result<Duration, LaunchError> {
    Duration::try_from_secs_f64(s).map_err(|_| LaunchError::Usage(format!("{what}: {s} is not a number of seconds")))
}

impl Args {
    /// The job these options describe.
    pub fn to_spec(&self) -> Result<JobSpec, LaunchError> {
        let (program, args) = self.command.split_first().ok_or_else(|| LaunchError::Usage("no program given".into()))?;
        let mut spec = JobSpec::local(program, &[], 0);
        spec.args = args.to_vec();
        spec.np = self.np;
        let mut hosts: Vec<HostEntry> = Vec::new();
        for h in &self.host {
            hosts.extend(hosts::parse_host_list(h)?);
        }
        if let Some(f) = &self.hostfile {
            let name = f.display().to_string();
            let text = std::fs::read_to_string(f).map_err(|e| LaunchError::Read(name.clone(), e))?;
            hosts.extend(hosts::parse_hostfile(&name, &text)?);
        }
        for ha in &self.host_addr {
            let (h, a) = ha
                .split_once('=')
                .filter(|(h, a)| !h.is_empty() && !a.is_empty())
                .ok_or_else(|| LaunchError::Usage(format!("--host-addr {ha:?}: expected HOST=ADDR")))?;
            let mut found = false;
            for e in hosts.iter_mut().filter(|e| e.name == h) {
                e.addr = Some(a.to_string());
                found = true;
            }
            if !found {
                return Err(LaunchError::Usage(format!("--host-addr {ha}: {h} is not one of the hosts")));
            }
        }
        spec.hosts = hosts;
        spec.oversubscribe = self.oversubscribe;
        spec.launch_agent = self.launch_agent.clone();
        spec.ssh_args = self.ssh_args.iter().flat_map(|a| a.split_whitespace().map(str::to_string)).collect();
        let lookup = |n: &str| std::env::var(n).ok();
        for x in &self.export {
            spec.env.push(parse_assignment(x, lookup)?);
        }
        for e in &self.env {
            if !e.contains('=') {
                return Err(LaunchError::Usage(format!("--env {e}: expected VAR=VALUE")));
            }
            spec.env.push(parse_assignment(e, lookup)?);
        }
        if let Some(n) = &self.net {
            wanmpi_bootstrap::route::parse_net(n).map_err(|e| LaunchError::Usage(format!("--net: {e}")))?;
            spec.env.push((wanmpi_bootstrap::ENV_NET.into(), n.clone()));
        }
        if let Some(i) = self.iface.as_ref().filter(|i| !i.is_empty()) {
            spec.env.push((wanmpi_bootstrap::ENV_IF.into(), i.clone()));
        }
        spec.tag_output = self.tag_output;
        // MPIEXEC_TIMEOUT, as MPICH's and Open MPI's launchers read it, when --timeout is not given.
        let from_env = match lookup("MPIEXEC_TIMEOUT") {
            Some(v) => Some(v.trim().parse::<f64>().map_err(|_| LaunchError::Usage(format!("MPIEXEC_TIMEOUT={v:?}: expected seconds")))?),
            None => None,
        };
        spec.timeout = self.timeout.or(from_env).map(|t| seconds("--timeout", t)).transpose()?;
        spec.transport = self.transport.clone();
        spec.wan_transport = self.wan_transport.clone();
        spec.eager_limit = self.eager_limit;
        spec.progress_thread = self.progress_thread;
        if let Some(n) = self.universe_size {
            spec.env.push(("WANMPI_UNIVERSE_SIZE".into(), n.to_string()));
        }
        spec.tolerate_rank_failure = self.tolerate_rank_failure;
        if let Some(limit) = &self.outage_limit {
            wanmpi_transport::outage::parse(limit).map_err(|e| LaunchError::Usage(format!("--outage-limit: {e}")))?;
            spec.env.push((wanmpi_transport::outage::ENV.into(), limit.trim().to_string()));
        }
        spec.insecure_lan = self.insecure_lan;
        spec.bootstrap = match self.bootstrap.as_str() {
            "auto" => BootstrapChoice::Auto,
            "unix" => BootstrapChoice::Unix,
            "tcp" => BootstrapChoice::Tcp,
            other => {
                wanmpi_bootstrap::BootstrapAddr::parse(other)?;
                BootstrapChoice::Address(other.to_string())
            }
        };
        spec.port_range = self
            .port_range
            .as_deref()
            .map(|r| wanmpi_bootstrap::PortRange::parse(r).map_err(|e| LaunchError::Usage(format!("--port-range {e}"))))
            .transpose()?;
        spec.grace = seconds("--grace", self.grace)?;
        spec.stage = self.stage;
        spec.output = OutputMode::Forward;
        Ok(spec)
    }
}

/// Runs the job, inside an emulation made for it with `--emulate`. The
/// emulation is a local value: it is torn down on every way out of here.
fn launch(args: &Args, mut spec: JobSpec) -> Result<crate::JobOutcome, LaunchError> {
    let Some(profile) = &args.emulate else { return crate::run(&spec) };
    let layout = args.emulate_sites.as_deref().map(crate::emulate::SiteLayout::parse).transpose()?;
    let np = match (args.np, layout) {
        (Some(n), _) => n as usize,
        (None, Some(l)) => l.ranks(),
        (None, None) => return Err(LaunchError::Usage("--emulate needs -n N (one emulated host per rank)".into())),
    };
    let per_host = layout.map_or(1, |l| l.ranks_per_host);
    let topo = match layout {
        Some(l) if np > l.ranks() => {
            return Err(LaunchError::Usage(format!(
                "-n {np}: --emulate-sites {} holds {} ranks",
                args.emulate_sites.as_deref().unwrap_or(""),
                l.ranks()
            )))
        }
        Some(l) => crate::emulate::site_topology(l, profile, &args.emulate_lan)?,
        None => crate::emulate::topology(profile, np)?,
    };
    let rank_hosts = np.div_ceil(per_host.max(1));
    let nat = (args.emulate_nat.as_deref(), args.emulate_site_nat.as_deref());
    let (topo, driver) = crate::emulate::with_nat(topo, args.emulate_isolated, nat)?;
    let emu = crate::emulate::bring_up(&topo, args.emulate_cc.as_deref(), args.emulate_mtu)?;
    let cc = crate::emulate::congestion_control(&emu, 0).unwrap_or_else(|e| format!("unknown ({e})"));
    let origin = if args.emulate_cc.is_some() { "set by --emulate-cc" } else { "the kernel's default" };
    let mtu = args.emulate_mtu.unwrap_or(wanmpi_emulator::DEFAULT_MTU);
    let shape = match layout {
        Some(l) => {
            format!("{} sites x {} hosts x {} ranks, links {profile} between sites, {} inside", l.sites, l.hosts_per_site, per_host, args.emulate_lan)
        }
        None => format!("{np} hosts, links {profile}"),
    };
    eprintln!("mpirun: emulation {} up: {shape}, MTU {mtu}; TCP congestion control {cc} ({origin})", emu.id());
    crate::emulate::place_on(&mut spec, &emu, np, per_host);
    if let Some(d) = driver {
        crate::emulate::isolate(&mut spec, &emu, rank_hosts, d)?;
        eprintln!("mpirun: emulated hosts are separate machines (--emulate-isolated): mpirun on host {d}, ranks through `{}`", spec.launch_agent);
    }
    let outcome = crate::run(&spec);
    match emu.down() {
        Ok(Some(c)) if std::env::var("WANMPI_STATS").is_ok_and(|v| v == "1") => eprint!("{}", emulation_summary(&c)),
        Ok(_) => {}
        Err(e) => eprintln!("mpirun: tearing the emulation down: {e}"),
    }
    outcome
}

/// What the emulated network did to the job's packets (WANMPI_STATS=1):
/// drops the profile asked for (loss, a full queue) apart from the
/// forwarder's own (a destination that refused a packet, no buffer left).
fn emulation_summary(c: &wanmpi_emulator::Counters) -> String {
    let mut t = wanmpi_emulator::LinkCounters::default();
    for l in &c.links {
        let k = &l.counters;
        t.offered_pkts += k.offered_pkts;
        t.delivered_pkts += k.delivered_pkts;
        t.drop_loss += k.drop_loss;
        t.drop_queue += k.drop_queue;
        t.drop_down += k.drop_down;
        t.drop_other += k.drop_other;
    }
    let mut s = format!(
        "mpirun: emulated links: {} packets offered, {} delivered; dropped {} by loss, {} by a full queue, {} on a down link, {} by the forwarder (refused or no buffer; pool empty {} times)\n",
        t.offered_pkts, t.delivered_pkts, t.drop_loss, t.drop_queue, t.drop_down, t.drop_other, c.global.pool_exhausted
    );
    for l in c.links.iter().filter(|l| l.counters.drop_other > 0) {
        s += &format!("  host {} -> host {}: {} dropped by the forwarder\n", l.src, l.dst, l.counters.drop_other);
    }
    s
}

/// The whole program: parse, run, exit with the job's code.
pub fn main() -> ! {
    let args = Args::parse_from(normalize(std::env::args().collect()));
    let code = match args.to_spec().and_then(|mut spec| {
        let cancel = Arc::new(AtomicUsize::new(0));
        for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM, signal_hook::consts::SIGHUP] {
            signal_hook::flag::register_usize(sig, cancel.clone(), sig as usize)?;
        }
        spec.cancel = Some(cancel);
        launch(&args, spec)
    }) {
        Ok(outcome) => outcome.exit_code,
        Err(e) => {
            eprintln!("mpirun: {e}");
            match e {
                LaunchError::Spawn { .. } => 127,
                // like wanmpi-emu: "cannot do this here" rather than "failed"
                LaunchError::Emulation(ref m) if m.starts_with("needs root") => 77,
                LaunchError::Emulation(_) => 1,
                _ => 2,
            }
        }
    };
    std::process::exit(code)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Vec<String> {
        s.split(' ').map(String::from).collect()
    }

    #[test]
    fn np_is_rewritten_only_before_the_program() {
        assert_eq!(normalize(v("mpirun -np 4 ./p -np 2")), v("mpirun -n 4 ./p -np 2"));
        assert_eq!(normalize(v("mpirun -x -np -np 3 p")), v("mpirun -x -np -n 3 p"));
        assert_eq!(normalize(v("mpirun -- -np")), v("mpirun -- -np"));
    }

    #[test]
    fn options_after_the_program_belong_to_it() {
        let a = Args::try_parse_from(normalize(v("mpirun -np 2 --tag-output ./prog --flag -n 5 x"))).unwrap();
        assert_eq!(a.np, Some(2));
        assert!(a.tag_output);
        assert_eq!(a.command, v("./prog --flag -n 5 x"));
        let spec = a.to_spec().unwrap();
        assert_eq!(spec.program, "./prog");
        assert_eq!(spec.args, v("--flag -n 5 x"));
    }

    #[test]
    fn spec_from_options() {
        let a = Args::try_parse_from(v(
            "mpirun --host h1:2,198.18.0.3 --host-addr h1=198.18.0.1 -x A=1 --env B=2 --timeout 1.5 --transport sctp --eager-limit 100 --progress-thread --bootstrap tcp --launch-agent ip_netns_exec_{host} prog",
        ))
        .unwrap();
        let s = a.to_spec().unwrap();
        assert_eq!(s.hosts.len(), 2);
        assert_eq!(s.hosts[0].addr.as_deref(), Some("198.18.0.1"));
        assert_eq!(s.hosts[1].addr.as_deref(), Some("198.18.0.3"));
        assert_eq!(s.env, vec![("A".to_string(), "1".to_string()), ("B".to_string(), "2".to_string())]);
        assert_eq!(s.timeout, Some(Duration::from_millis(1500)));
        assert_eq!((s.transport.as_deref(), s.eager_limit, s.progress_thread), (Some("sctp"), Some(100), true));
        assert_eq!(s.bootstrap, BootstrapChoice::Tcp);
        assert!(Args::try_parse_from(v("mpirun --host h1 --host-addr h9=1.2.3.4 p")).unwrap().to_spec().is_err());
        assert!(Args::try_parse_from(v("mpirun --bootstrap carrier-pigeon p")).unwrap().to_spec().is_err());
        assert!(Args::try_parse_from(v("mpirun --timeout -1 p")).map(|a| a.to_spec().is_err()).unwrap_or(true));
        assert!(Args::try_parse_from(v("mpirun -n 2")).is_err());
    }

    #[test]
    fn net_and_if_reach_the_ranks_and_a_bad_network_is_a_usage_error() {
        let a = Args::try_parse_from(normalize(v("mpirun --net 198.19.0.0/16 --if tun1 --host [2001:2::2]:2 prog --net x"))).unwrap();
        assert_eq!(a.command, v("prog --net x"));
        let s = a.to_spec().unwrap();
        assert_eq!(s.env, vec![("WANMPI_NET".to_string(), "198.19.0.0/16".to_string()), ("WANMPI_IF".to_string(), "tun1".to_string())]);
        assert_eq!((s.hosts[0].name.as_str(), s.hosts[0].slots), ("2001:2::2", 2));
        let e = Args::try_parse_from(v("mpirun --net 198.19.0.0/40 p")).unwrap().to_spec().unwrap_err();
        assert!(matches!(e, LaunchError::Usage(ref m) if m.contains("--net")), "{e}");
    }

    #[test]
    fn ssh_args_go_right_after_ssh() {
        let a = Args::try_parse_from(
            normalize(v("mpirun --ssh-args -p_2222 --ssh-args -J_jump --host far -np 1 prog -p"))
                .into_iter()
                .map(|w| w.replace('_', " "))
                .collect::<Vec<_>>(),
        )
        .unwrap();
        let s = a.to_spec().unwrap();
        assert_eq!(s.agent_words(), v("ssh -p 2222 -J jump"));
        assert_eq!(a.command, v("prog -p"));
        let mut s = s;
        s.launch_agent = "/usr/bin/ssh -q".into();
        assert_eq!(s.agent_words(), v("/usr/bin/ssh -p 2222 -J jump -q"));
        // Not ssh: the words are the agent's own.
        s.launch_agent = "ip netns exec {host}".into();
        assert_eq!(s.agent_words(), v("ip netns exec {host}"));
    }

    #[test]
    fn outage_limit_becomes_the_ranks_variable() {
        let s = Args::try_parse_from(normalize(v("mpirun -np 2 --outage-limit 90 p"))).unwrap().to_spec().unwrap();
        assert!(s.env.contains(&("WANMPI_OUTAGE_LIMIT".to_string(), "90".to_string())), "{:?}", s.env);
        let e = Args::try_parse_from(v("mpirun --outage-limit soon p")).unwrap().to_spec().unwrap_err();
        assert!(matches!(e, LaunchError::Usage(ref m) if m.contains("--outage-limit")), "{e}");
    }

    #[test]
    fn emulate_options() {
        let a =
            Args::try_parse_from(normalize(v("mpirun -np 2 --emulate delay=20ms,loss=1% --emulate-cc reno --tolerate-rank-failure ./pp --iters 3")))
                .unwrap();
        assert_eq!((a.emulate.as_deref(), a.emulate_cc.as_deref()), (Some("delay=20ms,loss=1%"), Some("reno")));
        assert!(a.to_spec().unwrap().tolerate_rank_failure);
        assert_eq!(a.command, v("./pp --iters 3"));
        assert!(Args::try_parse_from(v("mpirun --emulate delay=1ms --host a p")).is_err(), "--emulate places ranks itself");
        assert!(Args::try_parse_from(v("mpirun --emulate-cc reno p")).is_err(), "--emulate-cc needs --emulate");
        let a = Args::try_parse_from(normalize(v("mpirun -n 2 --emulate delay=1ms --emulate-nat none,masq --emulate-isolated p"))).unwrap();
        assert_eq!((a.emulate_nat.as_deref(), a.emulate_isolated), (Some("none,masq"), true));
        assert!(Args::try_parse_from(v("mpirun -n 2 --emulate-nat masq p")).is_err(), "--emulate-nat needs --emulate");
        assert!(Args::try_parse_from(v("mpirun -n 2 --emulate-isolated p")).is_err(), "--emulate-isolated needs --emulate");
        assert!(Args::try_parse_from(v("mpirun -n 2 --emulate delay=1ms --emulate-site-nat masq p")).is_err(), "needs --emulate-sites");
    }
}
