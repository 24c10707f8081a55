//! Dynamic processes (MPI-4.0 chapter 11): ports and accept/connect
//! between jobs started separately, spawning through mpirun, joining over
//! a socket, and the spawned job's parent.
//!
//! Every way in ends the same: the two groups' roots hold a connection
//! that proved a port's secret, and `join::join_groups` makes the
//! inter-communicator. A spawn is an accept on a port of the root's own,
//! whose name travels to the children through mpirun
//! (`WANMPI_PARENT_PORT`); the children connect to it in MPI_Init.

mod join;
mod names;
mod relay;

pub use names::ENV_NAME_DIR;

use std::collections::HashMap;
use std::os::fd::{FromRawFd, RawFd};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use wanmpi_bootstrap::port::{self, AcceptError, Port};
use wanmpi_bootstrap::SpawnApp;
use wanmpi_engine::{ErrorClass, MpiError, MpiResult};

use crate::comm::{CommId, COMM_SELF};
use crate::runtime::Runtime;
use join::{RootLink, Side};

/// How long MPI_Comm_accept waits for a connector (seconds).
pub const ENV_ACCEPT_TIMEOUT: &str = "WANMPI_ACCEPT_TIMEOUT";
const DEFAULT_ACCEPT_TIMEOUT: Duration = Duration::from_secs(600);
/// How often a spawning root looks for mpirun's note of a failed spawn.
const SPAWN_SLICE: Duration = Duration::from_millis(250);
/// The address a port is named after (default `WANMPI_ADDR`, else loopback).
pub const ENV_PORT_HOST: &str = "WANMPI_PORT_HOST";
/// Set by mpirun in spawned processes: their parents' port.
pub const ENV_PARENT_PORT: &str = "WANMPI_PARENT_PORT";
pub const ENV_APPNUM: &str = "WANMPI_APPNUM";
pub const ENV_WDIR: &str = "WANMPI_WDIR";

/// What a process keeps for dynamic processes.
#[derive(Default)]
pub struct DynamicState {
    ports: Mutex<HashMap<String, Arc<Port>>>,
    parent: Mutex<Option<CommId>>,
    /// From mpirun, taken out of the environment at init.
    pub(crate) spawned: OnceLock<Spawned>,
    /// This job among jobs: equal in all its processes, different from
    /// other jobs' (names processes across jobs; orders groups that merge
    /// with equal `high`).
    pub(crate) job_uid: OnceLock<u64>,
    /// Peers joined from other jobs, in the order they were.
    joins: Mutex<Vec<Joined>>,
}

/// One join's new peers: ids `first..first + globals.len()`.
struct Joined {
    first: u32,
    /// Which group they are, for messages.
    what: String,
    /// Each one's (job uid, world rank in its job).
    globals: Vec<(u64, u32)>,
}

/// A process's name among jobs: its job's uid and its world rank there.
pub(crate) type Global = (u64, u32);
/// Bytes of a `Global` on the wire.
pub(crate) const GLOBAL_LEN: usize = 12;

impl DynamicState {
    fn joined(&self, first: u32, what: &str, globals: Vec<Global>) {
        self.joins.lock().unwrap_or_else(|e| e.into_inner()).push(Joined { first, what: what.to_string(), globals });
    }

    /// A peer id past this job's as a person reads it.
    pub(crate) fn describe(&self, peer: u32) -> Option<String> {
        let joins = self.joins.lock().unwrap_or_else(|e| e.into_inner());
        let j = joins.iter().find(|j| peer >= j.first && ((peer - j.first) as usize) < j.globals.len())?;
        let (_, rank) = j.globals[(peer - j.first) as usize];
        Some(format!("rank {rank} of {}", j.what))
    }
}

impl Runtime {
    /// The names among jobs of `members` (this process's peer ids), as
    /// bytes: what travels when groups are described to another process
    /// (inter-communicator creation), since peer ids are local.
    pub(crate) fn globals_of(&self, members: &[u32]) -> Vec<u8> {
        let me = self.job_uid();
        let joins = self.dynamic.joins.lock().unwrap_or_else(|e| e.into_inner());
        let global = |id: u32| -> Global {
            if id < self.size {
                return (me, id);
            }
            joins.iter().find_map(|j| j.globals.get(id.checked_sub(j.first)? as usize).copied()).unwrap_or((u64::MAX, id))
        };
        members
            .iter()
            .flat_map(|&id| {
                let (job, rank) = global(id);
                job.to_le_bytes().into_iter().chain(rank.to_le_bytes())
            })
            .collect()
    }

    /// This process's peer ids of the processes named in `bytes`: a
    /// process of a job this one never joined with is an error, not a
    /// guess.
    pub(crate) fn locals_of(&self, bytes: &[u8]) -> MpiResult<Vec<u32>> {
        let me = self.job_uid();
        let joins = self.dynamic.joins.lock().unwrap_or_else(|e| e.into_inner());
        bytes
            .chunks_exact(GLOBAL_LEN)
            .map(|c| {
                let job = u64::from_le_bytes(c[..8].try_into().expect("8 bytes"));
                let rank = u32::from_le_bytes(c[8..].try_into().expect("4 bytes"));
                if job == me && rank < self.size {
                    return Ok(rank);
                }
                joins
                    .iter()
                    .find_map(|j| j.globals.iter().position(|g| *g == (job, rank)).map(|i| j.first + i as u32))
                    .ok_or_else(|| {
                        MpiError::new(
                            ErrorClass::Group,
                            format!("rank {rank} of another job is not connected to this process (processes of two jobs talk only after a spawn, accept/connect or join that included both)"),
                        )
                    })
            })
            .collect()
    }
}

/// A job's uid from its name (`RuntimeOptions::job`); runtimes made
/// without one (`Runtime::over`) are one job together.
pub(crate) fn job_uid(job: Option<&str>) -> u64 {
    use std::hash::{Hash, Hasher};
    let Some(job) = job else { return 0 };
    let mut h = std::collections::hash_map::DefaultHasher::new();
    job.hash(&mut h);
    h.finish()
}

/// What a spawned process learns from mpirun.
#[derive(Debug, Clone, Default)]
pub struct Spawned {
    pub parent_port: Option<String>,
    pub appnum: Option<i32>,
}

impl Spawned {
    /// Takes the variables out of the environment (before any thread of
    /// ours exists: see `Runtime::init`) so that the program's own children
    /// do not think they were spawned; applies `wdir`.
    pub(crate) fn from_env() -> MpiResult<Spawned> {
        let take = |k: &str| {
            let v = std::env::var(k).ok();
            std::env::remove_var(k);
            v
        };
        if let Some(dir) = take(ENV_WDIR) {
            std::env::set_current_dir(&dir)
                .map_err(|e| MpiError::new(ErrorClass::Spawn, format!("cannot enter the spawn's working directory {dir:?}: {e}")))?;
        }
        Ok(Spawned { parent_port: take(ENV_PARENT_PORT), appnum: take(ENV_APPNUM).and_then(|v| v.parse().ok()) })
    }
}

fn port_error(e: impl std::fmt::Display) -> MpiError {
    MpiError::new(ErrorClass::Port, e.to_string())
}

fn accept_timeout() -> MpiResult<Duration> {
    match std::env::var(ENV_ACCEPT_TIMEOUT) {
        Err(_) => Ok(DEFAULT_ACCEPT_TIMEOUT),
        Ok(v) => match v.trim().parse::<f64>() {
            Ok(s) if s.is_finite() && s > 0.0 && s < 1e9 => Ok(Duration::from_secs_f64(s)),
            _ => Err(MpiError::new(ErrorClass::Arg, format!("{ENV_ACCEPT_TIMEOUT}={v:?}: expected a positive number of seconds"))),
        },
    }
}

impl Runtime {
    /// MPI_Open_port (§11.2.2): a port others can MPI_Comm_connect to.
    pub fn open_port(&self) -> MpiResult<String> {
        let advertise = std::env::var(ENV_PORT_HOST)
            .or_else(|_| std::env::var(wanmpi_bootstrap::ENV_ADDR))
            .ok()
            .filter(|a| !a.trim().is_empty())
            .unwrap_or_else(|| "127.0.0.1".into());
        let loopback = advertise.parse::<std::net::IpAddr>().is_ok_and(|a| a.is_loopback());
        let bind = if loopback { "127.0.0.1" } else { "0.0.0.0" };
        let range = wanmpi_bootstrap::PortRange::from_env().map_err(|e| MpiError::new(ErrorClass::Arg, e))?;
        let p = Port::open(bind, advertise.trim(), range).map_err(port_error)?;
        let name = p.name();
        self.dynamic.ports.lock().unwrap_or_else(|e| e.into_inner()).insert(name.clone(), Arc::new(p));
        Ok(name)
    }

    /// MPI_Close_port.
    pub fn close_port(&self, name: &str) -> MpiResult<()> {
        match self.dynamic.ports.lock().unwrap_or_else(|e| e.into_inner()).remove(name.trim()) {
            Some(_) => Ok(()),
            None => Err(port_error(format!("{name:?} is not a port this process opened"))),
        }
    }

    /// MPI_Comm_accept (§11.2.3): collective over `comm`; `port` matters at
    /// `root` only.
    pub fn comm_accept(&self, port: Option<&str>, root: usize, comm: CommId) -> MpiResult<CommId> {
        let link = self.is_root(comm, root)?.then(|| -> RootLink {
            let name = port.ok_or_else(|| port_error("no port name at the root"))?;
            let p = self.dynamic.ports.lock().unwrap_or_else(|e| e.into_inner()).get(name.trim()).cloned();
            let p = p.ok_or_else(|| port_error(format!("{name:?} is not a port this process opened (MPI_Open_port)")))?;
            let size = self.comm_size(comm)? as u32;
            p.accept(size, accept_timeout()?, &format!("rank {}", self.rank)).map_err(|e| match e {
                AcceptError::Failed(t) => MpiError::new(ErrorClass::Spawn, t),
                e => port_error(format!("MPI_Comm_accept: {e}")),
            })
        });
        self.join_groups(comm, root, Side::Accept, link, "the job that connected to this one")
    }

    /// MPI_Comm_connect (§11.2.3).
    pub fn comm_connect(&self, port: Option<&str>, root: usize, comm: CommId) -> MpiResult<CommId> {
        let link = self.is_root(comm, root)?.then(|| -> RootLink {
            let name = port.ok_or_else(|| port_error("no port name at the root"))?;
            let size = self.comm_size(comm)? as u32;
            port::connect(name, size, wanmpi_bootstrap::timeout_from_env())
                .map_err(|e| port_error(format!("MPI_Comm_connect to {}: {e}", name.trim())))
        });
        self.join_groups(comm, root, Side::Connect, link, "the job this one connected to")
    }

    /// MPI_Comm_spawn(_multiple) (§11.8): mpirun starts `apps` (significant
    /// at `root`, where a bad argument is the error every rank returns) as
    /// a job of their own, which connects back.
    pub fn comm_spawn(&self, apps: Option<MpiResult<Vec<SpawnApp>>>, root: usize, comm: CommId) -> MpiResult<CommId> {
        let link = self.is_root(comm, root)?.then(|| -> RootLink {
            let mut apps = apps.ok_or_else(|| MpiError::new(ErrorClass::Spawn, "no command at the root"))??;
            for a in &mut apps {
                a.program = resolve_program(&a.program, a.wdir.as_deref());
            }
            let spawn_err = |t: String| MpiError::new(ErrorClass::Spawn, t);
            // Children on other hosts need an address they can reach.
            let p = match std::env::var(wanmpi_bootstrap::ENV_ADDR).ok().filter(|a| !a.trim().is_empty()) {
                Some(addr) => {
                    let range = wanmpi_bootstrap::PortRange::from_env().map_err(spawn_err)?;
                    Port::open("0.0.0.0", addr.trim(), range)
                }
                None => Port::open("127.0.0.1", "127.0.0.1", None),
            }
            .map_err(|e| spawn_err(e.to_string()))?;
            let request = wanmpi_bootstrap::SpawnRequest { port: p.name(), apps };
            {
                let mut kv = self.kv.lock().unwrap_or_else(|e| e.into_inner());
                let kv = kv.as_mut().ok_or_else(|| spawn_err("MPI_Comm_spawn needs a job started by mpirun".into()))?;
                kv.spawn(&request).map_err(|e| spawn_err(format!("mpirun refused the spawn: {e}")))?;
            }
            let size = self.comm_size(comm)? as u32;
            let limit = wanmpi_bootstrap::timeout_from_env();
            let deadline = std::time::Instant::now() + limit;
            // Wait on the port in slices: between them, mpirun's note (for
            // when it cannot reach this port) may say the spawn failed.
            loop {
                let slice = deadline.saturating_duration_since(std::time::Instant::now()).min(SPAWN_SLICE);
                match p.accept(size, slice, &format!("rank {}", self.rank)) {
                    Ok(peer) => return Ok(peer),
                    Err(AcceptError::TimedOut(_)) => {}
                    Err(e) => return Err(spawn_err(e.to_string())),
                }
                if let Some(why) = self.spawn_failure_note(&request.port) {
                    return Err(spawn_err(why));
                }
                if std::time::Instant::now() >= deadline {
                    return Err(spawn_err(format!("the spawned processes did not connect within {} s", limit.as_secs_f64())));
                }
            }
        });
        self.join_groups(comm, root, Side::Accept, link, "the job this one spawned")
    }

    /// Why mpirun says the spawn waiting on `port` failed, if it does.
    fn spawn_failure_note(&self, port: &str) -> Option<String> {
        use wanmpi_bootstrap::KeyValue;
        let mut kv = self.kv.lock().unwrap_or_else(|e| e.into_inner());
        kv.as_mut()?.get(&wanmpi_bootstrap::failure_key(port)).ok().map(|n| wanmpi_bootstrap::read_failure_note(&n))
    }

    /// MPI_Comm_join (§11.9): the two processes at the ends of the
    /// connected socket `fd` (which stays open). Each opens a port and
    /// sends its name; the smaller name accepts, the other connects.
    pub fn comm_join(&self, fd: RawFd) -> MpiResult<CommId> {
        let mine = self.open_port()?;
        let limit = wanmpi_bootstrap::timeout_from_env();
        let (side, link): (Side, RootLink) = match swap_names(fd, &mine, limit) {
            Err(e) => (Side::Connect, Err(e)),
            Ok(theirs) if mine < theirs => {
                let p = self.dynamic.ports.lock().unwrap_or_else(|e| e.into_inner()).get(&mine).cloned().expect("just opened");
                (Side::Accept, p.accept(1, limit, "MPI_Comm_join").map_err(port_error))
            }
            Ok(theirs) => (Side::Connect, port::connect(&theirs, 1, limit).map_err(port_error)),
        };
        let _ = self.close_port(&mine);
        self.join_groups(COMM_SELF, 0, side, Some(link), "the process joined by MPI_Comm_join")
    }

    /// MPI_Publish_name (see `names`).
    pub fn publish_name(&self, service: &str, port: &str) -> MpiResult<()> {
        names::publish(service, port)
    }

    /// MPI_Lookup_name.
    pub fn lookup_name(&self, service: &str) -> MpiResult<String> {
        names::lookup(service)
    }

    /// MPI_Unpublish_name.
    pub fn unpublish_name(&self, service: &str) -> MpiResult<()> {
        names::unpublish(service)
    }

    /// MPI_Comm_get_parent: the inter-communicator to the spawning job, if
    /// this process was spawned and has not disconnected from it.
    pub fn comm_get_parent(&self) -> Option<CommId> {
        *self.dynamic.parent.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Forgets the parent communicator when it is freed or disconnected.
    pub(crate) fn forget_parent(&self, comm: CommId) {
        let mut p = self.dynamic.parent.lock().unwrap_or_else(|e| e.into_inner());
        if *p == Some(comm) {
            *p = None;
        }
    }

    /// See `DynamicState::job_uid`.
    pub(crate) fn job_uid(&self) -> u64 {
        self.dynamic.job_uid.get().copied().unwrap_or(0)
    }

    /// MPI_APPNUM: which command of its spawn this process runs.
    pub fn appnum(&self) -> Option<i32> {
        self.dynamic.spawned.get().and_then(|s| s.appnum)
    }

    /// At init of a spawned process: connect to the parents.
    pub(crate) fn connect_to_parent(&self) -> MpiResult<()> {
        let Some(port) = self.dynamic.spawned.get().and_then(|s| s.parent_port.clone()) else { return Ok(()) };
        let link = (self.rank == 0).then(|| -> RootLink {
            let size = self.size;
            port::connect(&port, size, wanmpi_bootstrap::timeout_from_env())
                .map_err(|e| port_error(format!("MPI_Comm_connect to {}: {e}", port.trim())))
        });
        let c = self
            .join_groups(crate::comm::COMM_WORLD, 0, Side::Connect, link, "the parent job")
            .map_err(|e| MpiError::new(e.class, format!("connecting to the spawning job: {}", e.msg)))?;
        // MPI-4.0 §11.8.2: the parent communicator's default name.
        self.comm_set_name(c, "MPI_COMM_PARENT")?;
        *self.dynamic.parent.lock().unwrap_or_else(|e| e.into_inner()) = Some(c);
        Ok(())
    }

    fn is_root(&self, comm: CommId, root: usize) -> MpiResult<bool> {
        Ok(self.comm_rank(comm)? == root)
    }
}

/// The command as the spawning process means it: a relative path (and a
/// bare name of a file there, as MPICH's launcher finds `spawn1`) against
/// the `wdir` info key or this process's working directory; other bare
/// names are left for the PATH where the children start.
fn resolve_program(program: &str, wdir: Option<&str>) -> String {
    let p = std::path::Path::new(program);
    if p.is_absolute() {
        return program.to_string();
    }
    let base = match wdir {
        Some(w) => std::path::PathBuf::from(w),
        None => match std::env::current_dir() {
            Ok(d) => d,
            Err(_) => return program.to_string(),
        },
    };
    let here = base.join(p);
    if program.contains('/') || here.is_file() {
        return here.to_string_lossy().into_owned();
    }
    program.to_string()
}

/// Sends `mine` over the caller's socket and reads the other end's name.
fn swap_names(fd: RawFd, mine: &str, limit: Duration) -> MpiResult<String> {
    use std::io::{BufRead, BufReader, Write};
    let io = |e: std::io::Error| MpiError::new(ErrorClass::Arg, format!("MPI_Comm_join: the socket: {e}"));
    // SAFETY: the caller's socket, borrowed: ManuallyDrop keeps it open.
    let sock = std::mem::ManuallyDrop::new(unsafe { std::net::TcpStream::from_raw_fd(fd) });
    let s: &std::net::TcpStream = &sock;
    let old = s.read_timeout().map_err(io)?;
    s.set_read_timeout(Some(limit)).map_err(io)?;
    let r = (|| {
        (&*s).write_all(format!("{mine}\n").as_bytes())?;
        // One line each way and nothing after it: a buffered reader takes
        // nothing that belongs to the caller.
        let mut theirs = String::new();
        if BufReader::new(s).read_line(&mut theirs)? == 0 {
            return Err(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "closed before the other end's port name"));
        }
        Ok(theirs.trim().to_string())
    })();
    let _ = s.set_read_timeout(old);
    r.map_err(io)
}

#[cfg(test)]
mod tests {
    use super::resolve_program;

    #[test]
    fn commands_resolve_against_the_spawning_directory() {
        let d = std::env::temp_dir().join(format!("wanmpi-resolve-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("prog"), b"").unwrap();
        let w = d.to_str().unwrap();
        assert_eq!(resolve_program("prog", Some(w)), format!("{w}/prog"));
        assert_eq!(resolve_program("./sub/x", Some(w)), format!("{w}/./sub/x"));
        assert_eq!(resolve_program("python3", Some(w)), "python3", "a bare name not there is for the PATH");
        assert_eq!(resolve_program("/bin/true", Some(w)), "/bin/true");
        std::fs::remove_dir_all(&d).unwrap();
    }
}
