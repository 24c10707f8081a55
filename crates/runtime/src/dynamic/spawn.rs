//! MPI_Comm_spawn(_multiple) from the parent's side (an accept on a port
//! of the root's own, whose name mpirun hands the children) and the
//! child's (its parent, connected in MPI_Init).

use std::time::Duration;

use wanmpi_bootstrap::port::AcceptError;
use wanmpi_bootstrap::{SpawnApp, ENV_APPNUM, ENV_PARENT_PORT, ENV_WDIR};
use wanmpi_engine::{ErrorClass, MpiError, MpiResult};

use super::join::{Meeting, Side};
use super::new_port;
use crate::comm::CommId;
use crate::runtime::Runtime;

/// How often a spawning root looks for mpirun's note of a failed spawn.
const SPAWN_SLICE: Duration = Duration::from_millis(250);

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
        // The parent port is the job environment's (`JobEnv::parent_port`:
        // its secret comes on the secret pipe); without a launcher there is
        // no parent, and the variable must not reach the program's children.
        if std::env::var_os(wanmpi_bootstrap::ENV_RANK).is_none() {
            take(ENV_PARENT_PORT);
        }
        Ok(Spawned { parent_port: None, appnum: take(ENV_APPNUM).and_then(|v| v.parse().ok()) })
    }
}

impl Runtime {
    /// MPI_Comm_spawn(_multiple) (§11.8): mpirun starts `apps` (significant
    /// at `root`, where a bad argument is the error every rank returns) as
    /// a job of their own, which connects back.
    pub fn comm_spawn(&self, apps: Option<MpiResult<Vec<SpawnApp>>>, root: usize, comm: CommId) -> MpiResult<CommId> {
        let link = self.is_root(comm, root)?.then(|| -> Meeting {
            let mut apps = apps.ok_or_else(|| MpiError::new(ErrorClass::Spawn, "no command at the root"))??;
            for a in &mut apps {
                a.program = resolve_program(&a.program, a.wdir.as_deref());
            }
            let spawn_err = |t: String| MpiError::new(ErrorClass::Spawn, t);
            // Children on other hosts reach it as they would MPI_Open_port's.
            let p = new_port(self.dynamic.published_addr.get().map(String::as_str)).map_err(spawn_err)?;
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
        let mut kv = self.kv.lock().unwrap_or_else(|e| e.into_inner());
        kv.as_mut()?.get(&wanmpi_bootstrap::failure_key(port)).ok().map(|n| wanmpi_bootstrap::read_failure_note(&n))
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

    /// MPI_APPNUM: which command of its spawn this process runs.
    pub fn appnum(&self) -> Option<i32> {
        self.dynamic.spawned.get().and_then(|s| s.appnum)
    }

    /// At init of a spawned process: connect to the parents.
    pub(crate) fn connect_to_parent(&self) -> MpiResult<()> {
        let Some(port) = self.dynamic.spawned.get().and_then(|s| s.parent_port.clone()) else { return Ok(()) };
        let c = self
            .connect_as(Some(&port), 0, crate::comm::COMM_WORLD, "the parent job")
            .map_err(|e| MpiError::new(e.class, format!("connecting to the spawning job: {}", e.msg)))?;
        // MPI-4.0 §11.8.2: the parent communicator's default name.
        self.comm_set_name(c, "MPI_COMM_PARENT")?;
        *self.dynamic.parent.lock().unwrap_or_else(|e| e.into_inner()) = Some(c);
        Ok(())
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
