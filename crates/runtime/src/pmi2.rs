//! A rank that Slurm started with `srun --mpi=pmi2` rather than mpirun:
//! its job environment comes over PMI-2 (`wanmpi_bootstrap::pmi2`), and
//! the host map it learns there stands in for mpirun's `WANMPI_HOST_MAP`
//! (so ranks of one node share memory under `auto`).

use wanmpi_bootstrap::pmi2::Pmi2;
use wanmpi_bootstrap::JobEnv;
use wanmpi_engine::{ErrorClass, MpiError, MpiResult};

/// The job environment and the PMI-2 connection, or `None` when the
/// process was not started with PMI-2 (no `PMI_FD`).
pub(crate) fn bootstrap() -> MpiResult<Option<(JobEnv, Pmi2)>> {
    let boot = |e: wanmpi_bootstrap::BootstrapError| MpiError::new(ErrorClass::Other, format!("bootstrap over PMI-2: {e}"));
    let Some(mut pmi) = Pmi2::from_env().map_err(boot)? else { return Ok(None) };
    let (env, host_map) = pmi.job_env().map_err(boot)?;
    // Read by the transport plan; set during MPI init, before the runtime
    // starts any thread of its own (as `JobEnv::from_env` edits the
    // environment). A map the user gave wins.
    if std::env::var_os("WANMPI_HOST_MAP").is_none() {
        std::env::set_var("WANMPI_HOST_MAP", host_map);
    }
    Ok(Some((env, pmi)))
}
