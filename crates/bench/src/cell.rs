//! Running one cell of a grid on an emulation that is already up: wanmpi
//! through the launcher library, Open MPI and MPICH through their own
//! launchers with the namespace agent. Every run ends as a `Row`, whatever
//! happened.

use crate::exec::{run_limited, Early};
use crate::grid::{Cell, Implementation};
use crate::record::{Row, Status};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};
use wanmpi_emulator::Host;
use wanmpi_launcher::{emulate, JobSpec, OutputMode, StreamKind};

/// The program each implementation runs, and its arguments. `{size}` and
/// `{iters}` in an argument are replaced per cell.
#[derive(Debug, Clone)]
pub struct Programs {
    pub wanmpi: PathBuf,
    /// Compiled with mpicc.openmpi / mpicc.mpich (see `compile`).
    pub openmpi: Option<PathBuf>,
    pub mpich: Option<PathBuf>,
    pub args: Vec<String>,
    pub iters: u32,
}

/// What a cell runs on.
pub struct Context<'a> {
    /// The emulated hosts, one rank each.
    pub hosts: &'a [Host],
    /// Site of each host (empty: no sites).
    pub sites: &'a [usize],
    /// The remote-exec agent script (see `netns_files`).
    pub agent: &'a Path,
    pub programs: &'a Programs,
    pub limit: Duration,
    /// TCP congestion control in the hosts, recorded in the row.
    pub cc: &'a str,
    /// Non-zero (a signal number) ends the current run early.
    pub cancel: Option<std::sync::Arc<std::sync::atomic::AtomicUsize>>,
}

/// The subnet the hosts talk on (the emulator's first path).
pub const SUBNET: &str = "198.18.0.0/24";

fn expand(args: &[String], size: u64, iters: u32) -> Vec<String> {
    args.iter().map(|a| a.replace("{size}", &size.to_string()).replace("{iters}", &iters.to_string())).collect()
}

/// The command that runs `program args` with Open MPI or MPICH, one rank per
/// emulated host. Its launcher itself runs inside the first host, so that
/// its daemons' connections back to it cross the emulated network like the
/// ranks' own (the namespaces have no route to the machine's).
pub fn foreign_command(imp: &Implementation, hosts: &[Host], agent: &Path, program: &Path, args: &[String]) -> Command {
    let names: Vec<&str> = hosts.iter().map(|h| h.netns.as_str()).collect();
    let first = names.first().copied().unwrap_or_default();
    let mut c = Command::new("ip");
    c.args(["netns", "exec", first]);
    let np = hosts.len().to_string();
    match imp {
        Implementation::OpenMpi => {
            c.args(["mpirun.openmpi", "-n", &np, "--host", &names.join(",")]);
            c.args(["--mca", "plm_rsh_agent", &agent.display().to_string()]);
            // TCP only: the shared-memory BTL and UCX would bypass the emulator
            // (every namespace is on the same machine).
            c.args(["--mca", "pml", "ob1", "--mca", "btl", "tcp,self"]);
            // Ranks that busy-poll without yielding starve the forwarder and
            // each other on a small machine (8 ms round trips at 0 ms delay
            // on 2 cores); wanmpi also sleeps on its sockets when idle.
            c.args(["--mca", "mpi_yield_when_idle", "1"]);
            c.args(["--mca", "btl_tcp_if_include", SUBNET, "--mca", "oob_tcp_if_include", SUBNET]);
            c.env("OMPI_ALLOW_RUN_AS_ROOT", "1").env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
        }
        Implementation::Mpich => {
            c.args(["mpirun.mpich", "-launcher", "ssh", "-launcher-exec", &agent.display().to_string()]);
            // -localhost: the proxies call back to mpiexec by this name, which
            // the hosts files resolve to the first host (the machine's own
            // name resolves to each host's own address).
            c.args(["-localhost", first, "-hosts", &names.join(","), "-n", &np]);
            // Debian's MPICH is ch4:ucx: TCP on the emulated device only, no
            // shared memory between namespaces of one machine.
            c.args(["-genv", "UCX_TLS", "tcp,self", "-genv", "UCX_NET_DEVICES", "tun0"]);
        }
        Implementation::Wanmpi(_) => {}
    }
    c.arg(program).args(args);
    c
}

/// The result line of a program: a CSV header with `rtt_us` (a ping-pong's
/// round trip) or `time_us` (a run time, e.g. crates/bench/c/farm.c) and
/// optionally `mb_per_s`, then a line whose first field is `size`. Either
/// goes into the row's `rtt_us` column.
pub fn parse_result(stdout: &str, size: u64) -> Option<(f64, Option<f64>)> {
    let mut cols: Option<(usize, Option<usize>)> = None;
    let mut found = None;
    for line in stdout.lines() {
        let f: Vec<&str> = line.trim().split(',').map(str::trim).collect();
        if let Some(rtt) = f.iter().position(|x| *x == "rtt_us" || *x == "time_us") {
            cols = Some((rtt, f.iter().position(|x| *x == "mb_per_s")));
            continue;
        }
        let Some((rtt, mbs)) = cols else { continue };
        if f.first().and_then(|x| x.parse::<u64>().ok()) == Some(size) {
            if let Some(r) = f.get(rtt).and_then(|x| x.parse::<f64>().ok()) {
                found = Some((r, mbs.and_then(|i| f.get(i)).and_then(|x| x.parse::<f64>().ok())));
            }
        }
    }
    found
}

/// The column `name` of the result line for `size`, when the program
/// printed one (e.g. the ping-pong's `max_rtt_us`).
pub fn result_column(stdout: &str, size: u64, name: &str) -> Option<f64> {
    let mut col = None;
    let mut found = None;
    for line in stdout.lines() {
        let f: Vec<&str> = line.trim().split(',').map(str::trim).collect();
        if f.iter().any(|x| *x == "rtt_us" || *x == "time_us") {
            col = f.iter().position(|x| *x == name);
            continue;
        }
        if f.first().and_then(|x| x.parse::<u64>().ok()) == Some(size) {
            found = col.and_then(|i| f.get(i)).and_then(|x| x.parse::<f64>().ok()).or(found);
        }
    }
    found
}

/// The last non-empty line of `text`, for a row's note.
fn last_line(text: &str) -> String {
    text.lines().rev().map(str::trim).find(|l| !l.is_empty()).unwrap_or("").chars().take(200).collect()
}

struct Ran {
    status: Status,
    stdout: String,
    note: String,
}

fn run_wanmpi(ctx: &Context, transport: &str, args: Vec<String>) -> Ran {
    let mut spec = JobSpec::local(&ctx.programs.wanmpi.display().to_string(), &[], 0);
    spec.args = args;
    spec.transport = Some(transport.to_string());
    spec.hosts = ctx
        .hosts
        .iter()
        .enumerate()
        .map(|(i, h)| wanmpi_launcher::HostEntry {
            name: h.netns.clone(),
            slots: 1,
            addr: h.addrs.first().map(|a| a.to_string()),
            site: ctx.sites.get(i).map(|s| format!("site{s}")),
            ..Default::default()
        })
        .collect();
    spec.np = Some(ctx.hosts.len() as u32);
    spec.launch_agent = emulate::NETNS_AGENT.into();
    spec.bootstrap = wanmpi_launcher::BootstrapChoice::Unix;
    spec.output = OutputMode::Capture;
    spec.timeout = Some(ctx.limit);
    spec.grace = Duration::from_secs(1);
    spec.cancel = ctx.cancel.clone();
    let outcome = match wanmpi_launcher::run(&spec) {
        Ok(o) => o,
        Err(e) => return Ran { status: Status::Failed, stdout: String::new(), note: e.to_string() },
    };
    let text = |k: StreamKind| outcome.output.iter().filter(|l| l.stream == k).map(|l| l.text.as_str()).collect::<Vec<_>>().join("\n");
    let (stdout, stderr) = (text(StreamKind::Stdout), text(StreamKind::Stderr));
    if stderr.contains("unknown transport") {
        return Ran { status: Status::Skipped, stdout, note: format!("transport {transport} unknown to the runtime") };
    }
    match outcome.exit_code {
        0 => Ran { status: Status::Ok, stdout, note: String::new() },
        124 => Ran { status: Status::Timeout, stdout, note: format!("ran past {} s", ctx.limit.as_secs_f64()) },
        _ => {
            let why = outcome.failure.unwrap_or_default();
            Ran { status: Status::Failed, stdout, note: format!("{why}; {}", last_line(&stderr)) }
        }
    }
}

/// How long a program that printed its result may take to exit.
const EXIT_GRACE: Duration = Duration::from_secs(10);
/// The note of a run whose result stands but whose program did not exit.
pub const HUNG_NOTE: &str = "result printed but the program did not exit";

fn run_foreign(ctx: &Context, imp: &Implementation, size: u64, args: Vec<String>) -> Ran {
    let prog = match imp {
        Implementation::OpenMpi => ctx.programs.openmpi.as_deref(),
        _ => ctx.programs.mpich.as_deref(),
    };
    let Some(prog) = prog else {
        return Ran { status: Status::Skipped, stdout: String::new(), note: format!("no {imp} program (is {imp} installed?)") };
    };
    let cmd = foreign_command(imp, ctx.hosts, ctx.agent, prog, &args);
    let seen = |out: &str| parse_result(out, size).is_some();
    let early = Early { seen: &seen, grace: EXIT_GRACE };
    let ran = match run_limited(cmd, ctx.limit, ctx.cancel.as_deref(), Some(early)) {
        Ok(f) => f,
        Err(e) => return Ran { status: Status::Failed, stdout: String::new(), note: format!("cannot start: {e}") },
    };
    kill_leftovers(ctx.hosts);
    match ran.status {
        None if ran.hung_after_result => {
            Ran { status: Status::Ok, stdout: ran.stdout, note: format!("{HUNG_NOTE} within {} s; killed", EXIT_GRACE.as_secs()) }
        }
        None => Ran { status: Status::Timeout, stdout: ran.stdout, note: format!("ran past {} s", ctx.limit.as_secs_f64()) },
        Some(s) if s.success() => Ran { status: Status::Ok, stdout: ran.stdout, note: String::new() },
        Some(s) => Ran { status: Status::Failed, stdout: ran.stdout, note: format!("{s}; {}", last_line(&ran.stderr)) },
    }
}

/// Daemons of another MPI that outlived their launcher (it was killed at the
/// time limit) are still in our namespaces: end them, since the namespaces
/// are ours and so is everything in them.
pub fn kill_leftovers(hosts: &[Host]) {
    for h in hosts {
        let Ok(out) = Command::new("ip").args(["netns", "pids", &h.netns]).output() else { continue };
        for pid in String::from_utf8_lossy(&out.stdout).split_whitespace().filter_map(|p| p.parse::<i32>().ok()) {
            if pid > 1 {
                // SAFETY: kill has no memory preconditions.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
        }
    }
}

/// Runs one cell to a row.
pub fn run_cell(ctx: &Context, cell: &Cell) -> Row {
    let start = Instant::now();
    let args = expand(&ctx.programs.args, cell.size, ctx.programs.iters);
    let ran = match &cell.implementation {
        Implementation::Wanmpi(t) => run_wanmpi(ctx, t, args),
        other => run_foreign(ctx, other, cell.size, args),
    };
    let mut row = Row {
        cell: cell.clone(),
        status: ran.status,
        rtt_us: None,
        mb_per_s: None,
        cc: ctx.cc.to_string(),
        seconds: start.elapsed().as_secs_f64(),
        note: ran.note,
    };
    if row.status == Status::Ok {
        match parse_result(&ran.stdout, cell.size) {
            Some((rtt, mbs)) => {
                (row.rtt_us, row.mb_per_s) = (Some(rtt), mbs);
                // Across an outage (--outage), how long the job stood still.
                if let Some(longest) = result_column(&ran.stdout, cell.size, "max_rtt_us") {
                    row.note = format!("longest round trip {:.3} s", longest / 1e6);
                }
            }
            None => (row.status, row.note) = (Status::Failed, format!("no result line for size {} in the output", cell.size)),
        }
    }
    row
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn result_lines() {
        let out = "bytes,iters,rtt_us,mb_per_s\n30720,20,812.500,75.61\n307200,20,9000.1,68.2\n";
        assert_eq!(parse_result(out, 30720), Some((812.5, Some(75.61))));
        assert_eq!(parse_result(out, 307200), Some((9000.1, Some(68.2))));
        assert_eq!(parse_result(out, 1), None);
        assert_eq!(parse_result("30720,20,812.5,75.6\n", 30720), None, "no header, no result");
        let farm = "results: 700/700 ok\nbytes,tasks,workers,maxreqs,time_us,bound_us,ratio\n12288,700,7,10,2450000,2400000,1.021\n";
        assert_eq!(parse_result(farm, 12288), Some((2450000.0, None)));
        let pp = "bytes,iters,rtt_us,mb_per_s,max_rtt_us\n1,400,44000.0,0.01,60512345\n";
        assert_eq!(result_column(pp, 1, "max_rtt_us"), Some(60512345.0));
        assert_eq!(result_column(out, 30720, "max_rtt_us"), None);
        assert_eq!(expand(&["--sizes".into(), "{size}".into(), "--iters={iters}".into()], 7, 3), vec!["--sizes", "7", "--iters=3"]);
    }
}
