//! Bootstrap: how the processes of one job find each other before any MPI
//! traffic. The launcher runs a small key/value service; each process
//! publishes its endpoint (`put`), waits at a `fence`, then reads its peers'
//! endpoints (`get`).
//!
//! This crate holds the `KeyValue` contract that transports use during setup,
//! an in-process implementation for tests (`LocalKv`), the environment
//! variables the launcher hands every rank (`JobEnv`), the service the
//! launcher runs (`server`) and the client each rank uses (`Client`), which
//! proves the job secret before anything else (`auth`) and, over TCP, seals
//! every line after it (`sealed_lines`), the job's port range every
//! listening socket binds in (`ports`), and which local address peers can
//! reach (`route`: by the kernel's route, a network or an interface). It
//! also holds what every sealed channel of a job shares: the AEAD and key
//! derivation (`seal`) and the rule of which transport connections are
//! sealed (`seal_policy`). A rank that Slurm's `srun --mpi=pmi2` started
//! bootstraps through PMI-2 instead (`pmi2`); either way the runtime holds
//! a `Launcher`.
//!
//! It is not a general database: keys and values are short words, and the
//! table lives only as long as the job.

mod addr;
pub mod auth;
pub mod candidates;
mod client;
mod env;
mod launcher;
mod local;
mod own_addr;
pub mod pmi2;
mod pmi_job;
pub mod pmix;
pub mod port;
pub mod ports;
pub mod proto;
pub mod push;
pub mod reflect;
pub mod route;
pub mod seal;
pub mod seal_policy;
pub mod sealed_lines;
pub mod server;
pub mod service_addrs;
mod spawn;
mod timeout;

pub use addr::{BootstrapAddr, Stream};
pub use candidates::{Candidate, Candidates, Kind as CandidateKind};
pub use client::Client;
pub use env::{JobEnv, ENV_ADDR, ENV_BOOTSTRAP, ENV_JOB_ID, ENV_RANK, ENV_SECRET, ENV_SECRET_FD, ENV_SIZE, ENV_TRANSPORT};
pub use launcher::Launcher;
pub use local::{local_kv_world, LocalKv};
pub use own_addr::{ENV_HOST_ADDRS, ENV_HOST_MAP, ENV_IF, ENV_NET};
pub use ports::{PortRange, ENV_PORT_RANGE};
pub use push::Push;
pub use server::{Deaths, Notes, Server, ServerConfig, ServerEvent};
pub use service_addrs::{ENV_BOOTSTRAP_ALT, ENV_SSH_CLIENT};
pub use spawn::{failure_key, failure_note, read_failure_note, SpawnApp, SpawnRequest, ENV_APPNUM, ENV_PARENT_PORT, ENV_WDIR, MAX_SPAWN};
pub use timeout::{timeout_from_env, DEFAULT_TIMEOUT, ENV_BOOTSTRAP_TIMEOUT};

use thiserror::Error;

#[derive(Debug, Error)]
pub enum BootstrapError {
    #[error("bootstrap environment variable {var}: {problem}")]
    BadEnv { var: &'static str, problem: String },
    #[error("key {0:?} was never published")]
    Missing(String),
    #[error("key/value service: {0}")]
    Protocol(String),
    #[error("timed out after {0:?} waiting for {1}")]
    Timeout(std::time::Duration, String),
    #[error("bad bootstrap address {0:?}: {1}")]
    BadAddress(String, String),
    #[error("the key/value service refused this rank: {0}")]
    Refused(String),
    /// A rank of a job that spans hosts has no address its peers can
    /// reach (only loopback): the text names the rank, its host and the fix.
    #[error("{0}")]
    Unreachable(String),
    #[error("I/O error talking to the key/value service: {0}")]
    Io(#[from] std::io::Error),
}

/// The exchange every transport uses at setup. Keys and values are short
/// strings without whitespace or newlines.
pub trait KeyValue {
    fn rank(&self) -> u32;
    fn size(&self) -> u32;
    /// Publishes `value` under `key`; visible to others after the next fence.
    fn put(&mut self, key: &str, value: &str) -> Result<(), BootstrapError>;
    /// Returns when every rank of the job has reached the same fence.
    fn fence(&mut self) -> Result<(), BootstrapError>;
    /// Reads a key published before the last fence.
    fn get(&mut self, key: &str) -> Result<String, BootstrapError>;
    /// Reads several keys, in order. A remote implementation sends them
    /// together: one round trip, not one per key (a job's setup reads
    /// every peer's endpoint once per transport).
    fn get_many(&mut self, keys: &[String]) -> Result<Vec<String>, BootstrapError> {
        keys.iter().map(|k| self.get(k)).collect()
    }
    /// Where the job's UDP reflector answers (reflect.rs): the key/value
    /// service's own address when it is reached over TCP; None otherwise.
    fn reflector(&self) -> Option<std::net::SocketAddr> {
        None
    }
    /// The address the key/value service sees this rank's connection come
    /// from (a reflexive candidate, `candidates`); None when it cannot say
    /// (a Unix socket, an in-process exchange, PMI-2).
    fn seen_from(&mut self) -> Option<std::net::IpAddr> {
        None
    }
}
