//! What a rank asks of whatever started it, beyond the key/value exchange
//! its transports use: mpirun's service (`Client`) or Slurm's PMI-2
//! (`pmi2::Pmi2`). The runtime holds one of these for the job's life.

use crate::{BootstrapError, Client, KeyValue, Push, SpawnRequest};

pub trait Launcher: KeyValue + Send {
    /// The rank ends cleanly (MPI_Finalize).
    fn finalize(&mut self) -> Result<(), BootstrapError>;
    /// The whole job must end (MPI_Abort, a fatal error).
    fn abort(&mut self, code: i32, message: &str) -> Result<(), BootstrapError>;
    /// Start the processes of MPI_Comm_spawn.
    fn spawn(&mut self, request: &SpawnRequest) -> Result<(), BootstrapError>;
    /// What the launcher pushed since the last look (deaths, ULFM
    /// agreements and revokes), without blocking. Launchers that push
    /// nothing (PMI-2) return nothing.
    fn poll_pushes(&mut self) -> Vec<Push> {
        Vec::new()
    }
    /// The descriptor pushes arrive on, to sleep on (None: no pushes).
    fn push_fd(&self) -> Option<std::os::fd::RawFd> {
        None
    }
    /// Joins a ULFM agreement decided by the launcher (mpirun's service only).
    fn agree_start(&mut self, _id: &str, _members: Vec<u32>, _acked: Vec<u32>, _value: Vec<u8>) -> Result<(), BootstrapError> {
        Err(BootstrapError::Protocol("fault-tolerant agreement needs mpirun (this launcher cannot decide it)".into()))
    }
    /// Tells the other members of a communicator that it is revoked.
    fn revoke(&mut self, _id: &str, _members: Vec<u32>) -> Result<(), BootstrapError> {
        Err(BootstrapError::Protocol("revoke needs mpirun (this launcher cannot relay it)".into()))
    }
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
    fn poll_pushes(&mut self) -> Vec<Push> {
        Client::poll_pushes(self)
    }
    fn push_fd(&self) -> Option<std::os::fd::RawFd> {
        Some(self.raw_fd())
    }
    fn agree_start(&mut self, id: &str, members: Vec<u32>, acked: Vec<u32>, value: Vec<u8>) -> Result<(), BootstrapError> {
        Client::agree_start(self, id, members, acked, value)
    }
    fn revoke(&mut self, id: &str, members: Vec<u32>) -> Result<(), BootstrapError> {
        Client::revoke(self, id, members)
    }
}
