//! wanmpi-farm: a latency-tolerant task farm over MPI (papers 000 §3 and
//! 001 §4.2), and the papers' execution-time model.
//!
//! Rank 0 of the communicator is the manager (create-task and
//! process-result); the others are workers (do-task). Workers keep tasks
//! requested ahead with receives pre-posted, ask for `fanout` tasks per
//! request, compute, and return results with MPI_Isend; the manager serves
//! requests in arrival order, round-robin, and names every task in flight
//! with a tag from a bounded pool, so independent tasks travel
//! independently. The farm runs on duplicates of the user's communicator
//! with `mpi_assert_allow_overtaking=true`, so the user's tags are untouched
//! and a worker's ANY_TAG receive takes whichever task is complete first.
//!
//! Beyond the paper: adaptive depth ([`depth`]), an end game (fewer tasks
//! asked near the end; a slow worker's tasks copied to idle ones, first
//! result wins), survival of lost workers when the job runs with
//! `mpirun --tolerate-rank-failure`, progress display and per-worker
//! statistics with the model's prediction beside the measured time.
//!
//! Only public MPI operations are used (the nonblocking ones through
//! [`raw`], which owns its buffers, behind the [`raw::MpiOps`] trait so the
//! C API (`crates/farm-capi`, `wanmpi_farm.h`) runs the same farm over a C
//! MPI library). Not here: the split of the manager into scheduler and
//! writer ranks (mpiBLAST).

pub mod book;
pub mod config;
pub mod depth;
pub mod error;
pub mod farm;
mod manager;
pub mod model;
mod poll;
pub mod progress;
pub mod raw;
pub mod report;
pub mod tags;
pub mod wire;
mod worker;
pub mod workload;

pub use config::{FarmConfig, ProgressMode};
pub use error::{FarmError, FarmResult};
pub use farm::{Farm, FarmBuilder};
pub use report::{FarmReport, WorkerRow};
pub use worker::WorkerReport;

use wanmpi::{Communicator, ErrHandler, Info, ALLOW_OVERTAKING};

/// What `run` returns on each process.
#[derive(Debug)]
pub enum Outcome {
    Manager(FarmReport),
    Worker(WorkerReport),
}

impl Outcome {
    pub fn report(&self) -> Option<&FarmReport> {
        match self {
            Outcome::Manager(r) => Some(r),
            Outcome::Worker(_) => None,
        }
    }
}

/// Runs the farm on every process of `comm` (collective: all must call).
/// Rank 0 manages, the others work. The manager prints the summary when
/// `cfg.print_summary` is set.
pub fn run<F: Farm + ?Sized>(comm: &Communicator, cfg: &FarmConfig, farm: &mut F) -> FarmResult<Outcome> {
    cfg.check()?;
    let size = comm.size();
    if size < 2 {
        return Err(FarmError::TooFewProcesses(size));
    }
    let mut info = Info::default();
    info.set(ALLOW_OVERTAKING, "true")?;
    let data = comm.duplicate_with_info(&info)?;
    let ctl = comm.duplicate()?;
    // Errors come back as values so a lost worker can be survived (when
    // the runtime tolerates rank failure; otherwise it ends the job).
    data.set_errhandler(ErrHandler::Return)?;
    ctl.set_errhandler(ErrHandler::Return)?;
    let out = run_raw(comm.rank(), size, raw::RawComm::new(&data), raw::RawComm::new(&ctl), cfg, farm);
    // Freeing is collective in spirit; with lost ranks it may fail, and the
    // farm's result stands either way.
    let _ = data.free();
    let _ = ctl.free();
    out
}

/// The farm on communicators the caller prepared: `data`, a duplicate with
/// `mpi_assert_allow_overtaking=true`, and `ctl`, a plain duplicate, both
/// with MPI_ERRORS_RETURN; `rank` and `size` are this process's in them.
/// For other MPI bindings (the C API in `wanmpi-farm-capi`); `run` does the
/// same for a Rust communicator.
pub fn run_raw<F: Farm + ?Sized>(
    rank: i32,
    size: i32,
    data: raw::RawComm,
    ctl: raw::RawComm,
    cfg: &FarmConfig,
    farm: &mut F,
) -> FarmResult<Outcome> {
    cfg.check()?;
    if size < 2 {
        return Err(FarmError::TooFewProcesses(size));
    }
    if rank == 0 {
        let r = manager::run_manager(farm, cfg, data, ctl, (size - 1) as usize)?;
        if cfg.print_summary {
            println!("{r}");
        }
        Ok(Outcome::Manager(r))
    } else {
        Ok(Outcome::Worker(worker::run_worker(farm, cfg, data, ctl)?))
    }
}

/// `run` for a closure-built farm, checking this process has its role's closures.
pub fn run_builder(comm: &Communicator, cfg: &FarmConfig, farm: &mut FarmBuilder<'_>) -> FarmResult<Outcome> {
    if comm.rank() == 0 && !farm.has_manager_parts() {
        return Err(FarmError::MissingClosure("create and process"));
    }
    if comm.rank() != 0 && !farm.has_worker_parts() {
        return Err(FarmError::MissingClosure("work"));
    }
    run(comm, cfg, farm)
}
