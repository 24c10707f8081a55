//! Running one job: place ranks, start the key/value service, start every
//! rank, then watch them (see `watch`) until the job ends.

mod bootstrap;
mod slurm;
mod spawn;
mod ssh_mux;
mod stage;
mod watch;

use crate::command;
use crate::env_vars::{self, Identity};
use crate::error::LaunchError;
use crate::hosts::{self, Placement};
use crate::output::Sink;
use crate::process;
use crate::spec::{JobOutcome, JobSpec, StreamKind};
use std::io::Write;
use std::sync::mpsc::{channel, Sender};
use std::sync::Arc;
use wanmpi_bootstrap::{JobEnv, ServerEvent};
use watch::{Rank, Watch};

/// What the watcher hears about.
pub(crate) enum Event {
    Exited { rank: u32, status: std::process::ExitStatus },
    OutputClosed { rank: u32 },
    Kv(ServerEvent),
}

/// Runs a job to its end. `Err` only when it could not be started; a job
/// whose ranks fail is an `Ok` outcome with a non-zero `exit_code`.
pub fn run(spec: &JobSpec) -> Result<JobOutcome, LaunchError> {
    // Inside a Slurm allocation: its nodes and srun, unless told otherwise.
    let in_allocation = slurm::adopt(spec, |k| std::env::var(k).ok())?;
    let spec = in_allocation.as_ref().unwrap_or(spec);
    let placements = hosts::place(&spec.hosts, spec.np, spec.oversubscribe)?;
    if placements.is_empty() {
        return Err(LaunchError::Usage("a job needs at least one rank".into()));
    }
    let size = u32::try_from(placements.len()).map_err(|_| LaunchError::Usage("too many ranks".into()))?;
    let local: Vec<bool> = placements.iter().map(|p| hosts::is_local(&p.host)).collect();
    let mut secret = [0u8; 32];
    getrandom::getrandom(&mut secret).map_err(|e| LaunchError::Random(e.to_string()))?;
    let job_id = new_job_id()?;
    // What killed mpiruns of this user left (`stale_dirs.rs`).
    crate::stale_dirs::sweep();
    let own_env: Vec<(String, String)> = std::env::vars().collect();
    let mut common = env_vars::common(spec, &own_env);
    // The ranks' port range (--port-range, -x or passed through) confines
    // the key/value service too; a bad one is mpirun's usage error, not
    // every rank's failure.
    let port_range = wanmpi_bootstrap::PortRange::from_lookup(|k| common.get(k).map(str::to_string)).map_err(LaunchError::Usage)?;
    let (tx, rx) = channel::<Event>();
    let kv_tx = tx.clone();
    let service = bootstrap::start(
        spec,
        &job_id,
        &placements,
        (size, port_range),
        secret,
        Box::new(move |e| {
            let _ = kv_tx.send(Event::Kv(e));
        }),
    )?;
    let (host_map, site_map) = hosts::rank_maps(&placements);
    // A host map the user gave wins: ranks on one machine that must not
    // share memory (different containers) say so with distinct hosts.
    if common.get(env_vars::ENV_HOST_MAP).is_none() {
        common.set(env_vars::ENV_HOST_MAP, &host_map);
        // Indexed like our host map: what ranks route toward (issue 14).
        if let Some(a) = service.host_addrs() {
            common.set(wanmpi_bootstrap::ENV_HOST_ADDRS, &a);
        }
    }
    if let Some(sites) = site_map {
        common.set(env_vars::ENV_SITE_MAP, &sites);
    }
    let sink = Sink { mode: spec.output, tag: spec.tag_output, captured: Arc::default(), lost: Arc::default() };
    // Handed to each rank on a pipe (see `command`), never in its
    // environment or on a command line.
    // A spawned job's parent port secret follows on the same line.
    let secret_line = match &spec.parent_port_secret {
        Some(port) => format!("{} {}\n", JobEnv::secret_hex(&secret), JobEnv::secret_hex(port)),
        None => format!("{}\n", JobEnv::secret_hex(&secret)),
    };
    let agent = spec.agent_words();
    let rank_hosts: Vec<(&str, bool)> = placements.iter().zip(&local).map(|(p, l)| (p.host.as_str(), *l)).collect();
    // Staging opens each host's connection first, so every remote host shares one.
    let mux = ssh_mux::Mux::plan(&agent, &rank_hosts, &job_id, spec.stage)?;
    let agent_for = |host: &str| mux.as_ref().map_or_else(|| agent.clone(), |m| m.agent_for(&agent, host));
    let staged = stage::prepare(spec, &placements, &local, agent_for, &job_id)?;
    // First every rank that opens its own connection (the first on each
    // host), then the others, once their host's shared connection is up.
    let mut order: Vec<usize> = (0..placements.len()).collect();
    let mut opened: std::collections::HashSet<&str> = std::collections::HashSet::new();
    let mut first_pass = Vec::new();
    order.retain(|&i| {
        let h = placements[i].host.as_str();
        let waits = mux.as_ref().is_some_and(|m| m.shares(h)) && !opened.insert(h);
        if !waits {
            first_pass.push(i);
        }
        waits
    });
    let mut started: Vec<Option<Rank>> = placements.iter().map(|_| None).collect();
    for (pass, indices) in [first_pass, order].into_iter().enumerate() {
        for i in indices {
            let p = &placements[i];
            let rank = i as u32;
            let agent = match &mux {
                Some(m) => {
                    if pass == 1 && !m.wait_for_master(&p.host, ssh_mux::MASTER_WAIT) {
                        // The rank connects on its own: slower, still right.
                        let _ = writeln!(std::io::stderr(), "mpirun: no shared ssh connection to {} yet; rank {rank} opens its own", p.host);
                    }
                    m.agent_for(&agent, &p.host)
                }
                None => agent.clone(),
            };
            let id = Identity { rank, size, bootstrap: service.address_for(&p.host), job_id: &job_id, place: p };
            let (program, args, app_env) = spec.command_of(rank);
            let mut env = env_vars::for_rank(&common, &id);
            if let Some(alt) = service.alternates_for(&p.host) {
                env.set(wanmpi_bootstrap::ENV_BOOTSTRAP_ALT, &alt);
            }
            for (k, v) in app_env {
                env.set(k, v);
            }
            let staged_program = staged.as_ref().and_then(|s| s.program_on(&p.host, program));
            if let Some(dir) = staged.as_ref().and_then(|s| s.lib_dir(&p.host)) {
                let path = env.get("LD_LIBRARY_PATH").map_or_else(|| dir.to_string(), |v| format!("{dir}:{v}"));
                env.set("LD_LIBRARY_PATH", &path);
            }
            let cmd = command::build(&agent, &p.host, local[i], &env, staged_program.as_deref().unwrap_or(program), args);
            match start_rank(rank, p, &cmd, secret_line.as_bytes(), &sink, &tx) {
                Ok(pid) => started[i] = Some(Rank::new(p.host.clone(), pid)),
                Err(error) => {
                    // Nothing may outlive a failed start.
                    for r in started.iter().flatten() {
                        process::signal_group(r.pid, libc::SIGKILL);
                    }
                    return Err(LaunchError::Spawn { rank, host: p.host.clone(), program: program.to_string(), error });
                }
            }
        }
    }
    let ranks: Vec<Rank> = started.into_iter().flatten().collect();
    drop(tx);
    let mut watch = Watch::new(spec, ranks, rx, sink.lost.clone());
    watch.children.notes = Some(service.notes());
    watch.deaths = Some(service.deaths());
    let mut outcome = watch.run();
    // Stopping the service reports what it had only counted.
    drop(service);
    // The copies go while the hosts' connections are still up.
    drop(staged);
    drop(mux);
    watch.after_service(&mut outcome);
    let mut children = std::mem::take(&mut watch.children);
    children.finish(&mut outcome, &mut |m| {
        if spec.output == crate::spec::OutputMode::Forward {
            let _ = writeln!(std::io::stderr(), "mpirun: {m}");
        }
    });
    outcome.output = std::mem::take(&mut *sink.captured.lock().unwrap_or_else(|p| p.into_inner()));
    outcome.job_id = job_id;
    Ok(outcome)
}

/// Starts one rank with a thread per output stream and one waiting for it.
fn start_rank(rank: u32, _p: &Placement, cmd: &command::RankCommand, secret: &[u8], sink: &Sink, tx: &Sender<Event>) -> std::io::Result<u32> {
    let mut child = process::spawn(cmd, secret)?;
    let pid = child.id();
    let streams: [(StreamKind, Option<Box<dyn std::io::Read + Send>>); 2] = [
        (StreamKind::Stdout, child.stdout.take().map(|s| Box::new(s) as Box<dyn std::io::Read + Send>)),
        (StreamKind::Stderr, child.stderr.take().map(|s| Box::new(s) as Box<dyn std::io::Read + Send>)),
    ];
    for (kind, pipe) in streams {
        let (sink, tx) = (sink.clone(), tx.clone());
        let spawned = std::thread::Builder::new().name(format!("rank{rank}-out")).spawn(move || {
            if let Some(p) = pipe {
                sink.pump(rank, kind, p);
            }
            let _ = tx.send(Event::OutputClosed { rank });
        });
        if let Err(e) = spawned {
            process::signal_group(pid, libc::SIGKILL);
            let _ = child.wait();
            return Err(e);
        }
    }
    let tx = tx.clone();
    // An agent's stdin stays open until it ends: on a remote host its
    // closing ends the rank (`command::REMOTE_STEP`), so it closes when
    // mpirun ends the agent or dies, not before.
    let keep_open = child.stdin.take();
    let argv0 = cmd.argv.first().cloned().unwrap_or_default();
    std::thread::Builder::new().name(format!("rank{rank}-wait")).spawn(move || {
        let status = child.wait();
        drop(keep_open);
        // wait() only fails if the child was already reaped, which nothing else does.
        if let Ok(status) = status {
            let status = slurm::step_status(&argv0, status);
            let _ = tx.send(Event::Exited { rank, status });
        }
    })?;
    Ok(pid)
}

fn new_job_id() -> Result<String, LaunchError> {
    let mut b = [0u8; 4];
    getrandom::getrandom(&mut b).map_err(|e| LaunchError::Random(e.to_string()))?;
    Ok(format!("{}-{}", std::process::id(), b.iter().map(|x| format!("{x:02x}")).collect::<String>()))
}
