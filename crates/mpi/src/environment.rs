//! The MPI environment (MPI-3.1 §8): initialization, finalization, timers.

use std::sync::Arc;

use wanmpi_runtime::{Runtime, COMM_SELF, COMM_WORLD};

use crate::communicator::Communicator;
use crate::Result;

/// The initialized MPI environment. Dropping it finalizes MPI.
pub struct Universe {
    rt: Arc<Runtime>,
}

/// MPI_Init: joins the job started by `mpirun` (or runs alone when started
/// directly).
pub fn initialize() -> Result<Universe> {
    Ok(Universe { rt: Runtime::init()? })
}

impl Universe {
    /// MPI_COMM_WORLD.
    pub fn world(&self) -> Communicator {
        Communicator::from_id(self.rt.clone(), COMM_WORLD)
    }
    /// MPI_COMM_SELF.
    pub fn self_comm(&self) -> Communicator {
        Communicator::from_id(self.rt.clone(), COMM_SELF)
    }
    /// MPI_Wtime: seconds since initialization.
    pub fn wtime(&self) -> f64 {
        self.rt.wtime()
    }
    /// MPI_Abort: ends every process of the job.
    pub fn abort(&self, code: i32) -> ! {
        self.rt.abort(code, "")
    }
    /// MPI_Finalize, explicitly (dropping the universe does it too).
    pub fn finalize(self) -> Result<()> {
        let r = self.rt.finalize();
        std::mem::forget(self);
        r
    }
    /// The runtime, for crates layered on wanmpi (the farm, benchmarks).
    pub fn runtime(&self) -> &Arc<Runtime> {
        &self.rt
    }
}

impl Drop for Universe {
    fn drop(&mut self) {
        if !self.rt.is_finalized() {
            if let Err(e) = self.rt.finalize() {
                eprintln!("wanmpi: MPI_Finalize failed: {e}");
            }
        }
    }
}
