//! The wanmpi launcher: `mpirun` / `mpiexec`, and the same as a library for
//! programs that start jobs themselves (the WAN emulator, the bench runner).
//!
//! It places ranks on hosts (`hosts`), gives each job a fresh random secret
//! and runs the bootstrap key/value service for it, starts every rank in a
//! process group of its own (directly, or through a launch agent such as
//! `ssh` or `ip netns exec {host}`), forwards output line by line, and ends
//! the whole job when one rank fails, saying which and why.
//!
//! Inside a Slurm allocation it takes the allocation's nodes and starts
//! ranks with srun (`job::slurm`); `--stage` copies programs to remote
//! hosts first (`job::stage`).
//!
//! It is not a resource manager: no scheduling, no daemons on remote hosts,
//! no stdin forwarding (ranks read /dev/null).
//!
//! ```no_run
//! use wanmpi_launcher::{run, JobSpec, OutputMode};
//! let mut spec = JobSpec::local("./hello", &[], 4);
//! spec.output = OutputMode::Capture;
//! let outcome = run(&spec).expect("job started");
//! assert_eq!(outcome.exit_code, 0);
//! ```

pub mod cli;
pub mod command;
pub mod emulate;
pub mod env_vars;
mod error;
pub mod hosts;
mod job;
mod output;
pub mod process;
mod routes;
mod socket_dir;
mod spec;
mod ssh_config;
mod stale_dirs;

pub use error::LaunchError;
pub use hosts::{HostEntry, Placement};
pub use job::run;
pub use spec::{BootstrapChoice, JobOutcome, JobSpec, OutputLine, OutputMode, RankEnd, RankResult, StreamKind};
