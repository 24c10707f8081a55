//! Errors of the farm.

use thiserror::Error;
use wanmpi::MpiError;

#[derive(Debug, Error)]
pub enum FarmError {
    #[error("MPI: {0}")]
    Mpi(#[from] MpiError),
    #[error("the farm needs at least 2 processes (a manager and a worker); this communicator has {0}")]
    TooFewProcesses(i32),
    #[error("task {id} is {len} bytes, over the farm's max_task_bytes of {max}")]
    TaskTooLarge { id: u64, len: usize, max: usize },
    #[error("result of task {id} is {len} bytes, over the farm's max_result_bytes of {max}")]
    ResultTooLarge { id: u64, len: usize, max: usize },
    #[error("malformed farm message from rank {from}: {why}")]
    Protocol { from: i32, why: String },
    #[error("every worker is lost; {left} of {total} tasks have no result")]
    AllWorkersLost { left: u64, total: u64 },
    #[error("the farm made no progress for {0:?} (limit FarmConfig::stall_timeout)")]
    Stalled(std::time::Duration),
    #[error("this process has no {0} closure, but its role in the farm needs one")]
    MissingClosure(&'static str),
    #[error("the farm's writer (rank {rank}) was lost, and with it the results processed there: {why}")]
    WriterLost { rank: i32, why: String },
    #[error("the farm's scheduler (rank 0) was lost: {0}")]
    SchedulerLost(String),
    #[error("bad farm configuration: {0}")]
    Config(String),
}

pub type FarmResult<T> = std::result::Result<T, FarmError>;
