//! A rank that Slurm started with `srun --mpi=pmi2` rather than mpirun:
//! its job environment comes over PMI-2 (`wanmpi_bootstrap::pmi2`), and
//! the host map it learns there stands in for mpirun's `WANMPI_HOST_MAP`
//! (so ranks of one node share memory under `auto`). The ranks of one
//! Slurm step are one cluster: one site (`WANMPI_SITE_MAP` of zeros)
//! unless the user gave a map. A rank that cannot set up (no address its
//! peers can reach, say) ends the step through PMI-2's abort with the
//! reason, so the other ranks do not wait for it until they time out.

use wanmpi_bootstrap::pmi2::Pmi2;
use wanmpi_bootstrap::{JobEnv, Launcher};
use wanmpi_engine::{ErrorClass, MpiError, MpiResult};

/// The job environment and the PMI-2 connection, or `None` when the
/// process was not started with PMI-2 (no `PMI_FD`).
pub(crate) fn bootstrap() -> MpiResult<Option<(JobEnv, Pmi2)>> {
    let boot = |e: wanmpi_bootstrap::BootstrapError| MpiError::new(ErrorClass::Other, format!("bootstrap over PMI-2: {e}"));
    let Some(mut pmi) = Pmi2::from_env().map_err(boot)? else { return Ok(None) };
    let (env, host_map) = match pmi.job_env() {
        Ok(x) => x,
        Err(e) => {
            let text = format!("wanmpi: {e}");
            eprintln!("{text}");
            // Best effort: the error is returned either way.
            let _ = pmi.abort(1, &text);
            return Err(boot(e));
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
    Ok(Some((env, pmi)))
}
