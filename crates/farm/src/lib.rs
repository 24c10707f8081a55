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
//! MPI library).
//!
//! Optionally the manager is split as in mpiBLAST (`FarmConfig::writer`):
//! rank 0 schedules (create-task, requests, end game, lost workers), the
//! writer rank receives every result and runs process-result, and tells
//! the scheduler of each answer in batches ([`wire::Answer`]).

pub mod book;
pub mod config;
pub mod depth;
pub mod error;
pub mod farm;
pub mod ledger;
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
mod writer;

pub use config::{FarmConfig, ProgressMode};
pub use error::{FarmError, FarmResult};
pub use farm::{Farm, FarmBuilder};
pub use report::{FarmReport, WorkerRow};
pub use worker::WorkerReport;
pub use writer::WriterReport;

use wanmpi::{Communicator, ErrHandler, Info, ALLOW_OVERTAKING};

/// What `run` returns on each process.
#[derive(Debug)]
pub enum Outcome {
    /// Rank 0: the manager, or the scheduler when there is a writer.
    Manager(FarmReport),
    Worker(WorkerReport),
    /// The writer rank (only with `FarmConfig::writer`): the results were
    /// processed here, so the user's result state is in this process.
    Writer(WriterReport),
}

impl Outcome {
    pub fn report(&self) -> Option<&FarmReport> {
        match self {
            Outcome::Manager(r) => Some(r),
            Outcome::Worker(_) | Outcome::Writer(_) => None,
        }
    }
    /// True on the process where `process_result` ran: the manager, or the
    /// writer when there is one.
    pub fn has_results(&self) -> bool {
        match self {
            Outcome::Manager(r) => r.writer.is_none(),
            Outcome::Writer(_) => true,
            Outcome::Worker(_) => false,
        }
    }
}

/// Runs the farm on every process of `comm` (collective: all must call).
/// Rank 0 manages, the others work; with `cfg.writer`, that rank takes the
/// results (`process_result` runs there) and rank 0 only schedules. Rank 0
/// prints the summary when `cfg.print_summary` is set.
pub fn run<F: Farm + ?Sized>(comm: &Communicator, cfg: &FarmConfig, farm: &mut F) -> FarmResult<Outcome> {
    cfg.check()?;
    let size = comm.size();
    cfg.check_size(size)?;
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
pub fn run_raw<F: Farm + ?Sized>(rank: i32, size: i32, data: raw::RawComm, ctl: raw::RawComm, cfg: &FarmConfig, farm: &mut F) -> FarmResult<Outcome> {
    cfg.check()?;
    cfg.check_size(size)?;
    let workers = cfg.worker_ranks(size);
    if rank == 0 {
        let r = manager::run_manager(farm, cfg, data, ctl, workers)?;
        if cfg.print_summary {
            println!("{r}");
        }
        Ok(Outcome::Manager(r))
    } else if Some(rank) == cfg.writer {
        Ok(Outcome::Writer(writer::run_writer(farm, cfg, rank, data, ctl, workers.len())?))
    } else {
        Ok(Outcome::Worker(worker::run_worker(farm, cfg, data, ctl)?))
    }
}

/// `run` for a closure-built farm, checking this process has its role's closures.
pub fn run_builder(comm: &Communicator, cfg: &FarmConfig, farm: &mut FarmBuilder<'_>) -> FarmResult<Outcome> {
    let rank = comm.rank();
    let (create, work, process) = farm.parts();
    let missing = match (rank == 0, Some(rank) == cfg.writer, cfg.writer.is_some()) {
        (true, _, false) if !(create && process) => Some("create and process"),
        (true, _, true) if !create => Some("create"),
        (false, true, _) if !process => Some("process"),
        (false, false, _) if !work => Some("work"),
        _ => None,
    };
    if let Some(what) = missing {
        return Err(FarmError::MissingClosure(what));
    }
    run(comm, cfg, farm)
}
