//! What a rank asks of whatever started it, beyond the key/value exchange
//! its transports use: mpirun's service (`Client`) or Slurm's PMI-2
//! (`pmi2::Pmi2`). The runtime holds one of these for the job's life.

use crate::{BootstrapError, Client, KeyValue, SpawnRequest};

pub trait Launcher: KeyValue + Send {
    /// The rank ends cleanly (MPI_Finalize).
    fn finalize(&mut self) -> Result<(), BootstrapError>;
    /// The whole job must end (MPI_Abort, a fatal error).
    fn abort(&mut self, code: i32, message: &str) -> Result<(), BootstrapError>;
    /// Start the processes of MPI_Comm_spawn.
    fn spawn(&mut self, request: &SpawnRequest) -> Result<(), BootstrapError>;
}

impl Launcher for Client {
    fn finalize(&mut self) -> Result<(), BootstrapError> {
        Client::finalize(self)
    }
    fn abort(&mut self, code: i32, message: &str) -> Result<(), BootstrapError> {
        Client::abort(self, code, message)
    }
    fn spawn(&mut self, request: &SpawnRequest) -> Result<(), BootstrapError> {
        Client::spawn(self, request)
    }
}
