//! Names of processes among jobs: this job's uid and a world rank. Peer
//! ids are each process's own (a joined process takes the next free id),
//! so groups that travel between processes travel as these names.

use wanmpi_engine::{ErrorClass, MpiError, MpiResult};

use super::DynamicState;
use crate::runtime::Runtime;

/// One join's new peers: ids `first..first + globals.len()`.
pub(super) struct Joined {
    first: u32,
    /// Which group they are, for messages.
    what: String,
    /// Each one's (job uid, world rank in its job).
    globals: Vec<Global>,
}

/// A process's name among jobs: its job's uid and its world rank there.
pub(crate) type Global = (u64, u32);
/// Bytes of a `Global` on the wire.
pub(crate) const GLOBAL_LEN: usize = 12;

impl DynamicState {
    pub(super) fn joined(&self, first: u32, what: &str, globals: Vec<Global>) {
        self.joins.lock().unwrap_or_else(|e| e.into_inner()).push(Joined { first, what: what.to_string(), globals });
    }

    /// A peer id past this job's as a person reads it.
    pub(crate) fn describe(&self, peer: u32) -> Option<String> {
        let joins = self.joins.lock().unwrap_or_else(|e| e.into_inner());
        let j = joins.iter().find(|j| peer >= j.first && ((peer - j.first) as usize) < j.globals.len())?;
        let (_, rank) = j.globals[(peer - j.first) as usize];
        Some(format!("rank {rank} of {}", j.what))
    }
}

impl Runtime {
    /// The names among jobs of `members` (this process's peer ids), as
    /// bytes: what travels when groups are described to another process
    /// (inter-communicator creation), since peer ids are local.
    pub(crate) fn globals_of(&self, members: &[u32]) -> Vec<u8> {
        let me = self.job_uid();
        let joins = self.dynamic.joins.lock().unwrap_or_else(|e| e.into_inner());
        let global = |id: u32| -> Global {
            if id < self.size {
                return (me, id);
            }
            joins.iter().find_map(|j| j.globals.get(id.checked_sub(j.first)? as usize).copied()).unwrap_or((u64::MAX, id))
        };
        members
            .iter()
            .flat_map(|&id| {
                let (job, rank) = global(id);
                job.to_le_bytes().into_iter().chain(rank.to_le_bytes())
            })
            .collect()
    }

    /// This process's peer ids of the processes named in `bytes`: a
    /// process of a job this one never joined with is an error, not a
    /// guess.
    pub(crate) fn locals_of(&self, bytes: &[u8]) -> MpiResult<Vec<u32>> {
        let me = self.job_uid();
        let joins = self.dynamic.joins.lock().unwrap_or_else(|e| e.into_inner());
        bytes
            .chunks_exact(GLOBAL_LEN)
            .map(|c| {
                let job = u64::from_le_bytes(c[..8].try_into().expect("8 bytes"));
                let rank = u32::from_le_bytes(c[8..].try_into().expect("4 bytes"));
                if job == me && rank < self.size {
                    return Ok(rank);
                }
                joins
                    .iter()
                    .find_map(|j| j.globals.iter().position(|g| *g == (job, rank)).map(|i| j.first + i as u32))
                    .ok_or_else(|| {
                        MpiError::new(
                            ErrorClass::Group,
                            format!("rank {rank} of another job is not connected to this process (processes of two jobs talk only after a spawn, accept/connect or join that included both)"),
                        )
                    })
            })
            .collect()
    }
}

/// A job's uid from its name (`RuntimeOptions::job`); runtimes made
/// without one (`Runtime::over`) are one job together.
pub(crate) fn job_uid(job: Option<&str>) -> u64 {
    use std::hash::{Hash, Hasher};
    let Some(job) = job else { return 0 };
    let mut h = std::collections::hash_map::DefaultHasher::new();
    job.hash(&mut h);
    h.finish()
}

/// A key for a context agreement from a process's name (`globals_of`
/// bytes): the same at every participant, whichever job it is in.
pub(crate) fn name_key(name: &[u8]) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    name.hash(&mut h);
    h.finish()
}
