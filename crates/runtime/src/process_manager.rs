//! A rank that a process manager started rather than mpirun: Slurm's
//! `srun --mpi=pmi2` (`wanmpi_bootstrap::pmi2`, found by `PMI_FD`) or a
//! PMIx server such as `srun --mpi=pmix` (`wanmpi_bootstrap::pmix`, found by
//! `PMIX_NAMESPACE`). Its job environment comes over that interface, and
//! the host map it learns there stands in for mpirun's `WANMPI_HOST_MAP`
//! (so ranks of one node share memory under `auto`). The ranks of one
//! launch are one cluster: one site (`WANMPI_SITE_MAP` of zeros) unless the
//! user gave a map. A rank that cannot set up (no address its peers can
//! reach, say) ends the job through the manager's abort with the reason,
//! so the other ranks do not wait for it until they time out.

use wanmpi_bootstrap::pmi2::Pmi2;
use wanmpi_bootstrap::pmix::Pmix;
use wanmpi_bootstrap::{BootstrapError, JobEnv, Launcher};
use wanmpi_engine::{ErrorClass, MpiError, MpiResult};

/// What both interfaces offer the runtime.
trait Manager: Launcher {
    fn job_env(&mut self) -> Result<(JobEnv, String), BootstrapError>;
}

impl Manager for Pmi2 {
    fn job_env(&mut self) -> Result<(JobEnv, String), BootstrapError> {
        Pmi2::job_env(self)
    }
}

impl Manager for Pmix {
    fn job_env(&mut self) -> Result<(JobEnv, String), BootstrapError> {
        Pmix::job_env(self)
    }
}

/// The job environment and the manager's connection, or `None` when no
/// process manager started the process (neither `PMI_FD` nor
/// `PMIX_NAMESPACE`).
pub(crate) fn bootstrap() -> MpiResult<Option<(JobEnv, Box<dyn Launcher>)>> {
    let boot = |name: &str, e: BootstrapError| MpiError::new(ErrorClass::Other, format!("bootstrap over {name}: {e}"));
    let (name, mut pm): (&str, Box<dyn Manager>) = match Pmi2::from_env().map_err(|e| boot("PMI-2", e))? {
        Some(p) => ("PMI-2", Box::new(p)),
        None => match Pmix::from_env().map_err(|e| boot("PMIx", e))? {
            Some(p) => ("PMIx", Box::new(p)),
            None => return Ok(None),
        },
    };
    let (env, host_map) = match pm.job_env() {
        Ok(x) => x,
        Err(e) => {
            let text = format!("wanmpi: {e}");
            eprintln!("{text}");
            // Best effort: the error is returned either way.
            let _ = pm.abort(1, &text);
            return Err(boot(name, e));
        }
    };
    // Read by the transport plan and the site map; set during MPI init,
    // before the runtime starts any thread of its own (as
    // `JobEnv::from_env` edits the environment). Maps the user gave win.
    if std::env::var_os("WANMPI_HOST_MAP").is_none() {
        std::env::set_var("WANMPI_HOST_MAP", host_map);
    }
    if std::env::var_os("WANMPI_SITE_MAP").is_none() {
        std::env::set_var("WANMPI_SITE_MAP", vec!["0"; env.size as usize].join(","));
    }
    Ok(Some((env, pm as Box<dyn Launcher>)))
}
