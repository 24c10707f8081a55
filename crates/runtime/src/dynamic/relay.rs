//! The key/value exchange of two groups joining (`KeyValue` for the joint
//! transport's setup), carried by what the groups already have: each
//! group's communicator, and the one connection between their roots.
//!
//! A fence gathers every member's puts inside its group, the roots swap
//! their groups' tables, and each root broadcasts the other table to its
//! group. A member whose setup failed before the fence takes part with a
//! failure mark instead of its puts, so that nobody waits for it: every
//! fence that sees a mark fails, in both groups.

use std::collections::HashMap;

use wanmpi_bootstrap::port::RootLink;
use wanmpi_bootstrap::{BootstrapError, KeyValue};
use wanmpi_engine::coll;

use crate::comm::CommId;
use crate::runtime::Runtime;

const FAILED: &str = "!failed";

pub(super) struct Relay<'a> {
    pub rt: &'a Runtime,
    pub comm: CommId,
    pub root: usize,
    /// The connection to the other root (at this group's root only).
    pub stream: Option<&'a RootLink>,
    /// The accepting side writes first, so the roots never both wait.
    pub writes_first: bool,
    /// This process's rank among both groups, and their size.
    pub rank: u32,
    pub size: u32,
    pending: Vec<(String, String)>,
    table: HashMap<String, String>,
    /// Fences completed, whether they succeeded or not.
    pub fences: u32,
}

fn protocol(what: impl std::fmt::Display) -> BootstrapError {
    BootstrapError::Protocol(what.to_string())
}

impl<'a> Relay<'a> {
    pub fn new(rt: &'a Runtime, comm: CommId, root: usize, stream: Option<&'a RootLink>, writes_first: bool, rank: u32, size: u32) -> Relay<'a> {
        Relay { rt, comm, root, stream, writes_first, rank, size, pending: Vec::new(), table: HashMap::new(), fences: 0 }
    }

    /// This member's setup failed before its fence: take part in it anyway
    /// so that the others learn it.
    pub fn fail(&mut self) {
        let _ = self.exchange(true);
    }

    fn exchange(&mut self, failing: bool) -> Result<(), BootstrapError> {
        self.fences += 1;
        let mine: String = if failing { format!("{FAILED}\n") } else { self.pending.drain(..).map(|(k, v)| format!("{k} {v}\n")).collect() };
        let group = self.gather(mine.as_bytes()).map_err(protocol)?;
        // Every member of this group takes part in the broadcast below,
        // whatever the swap did: a failed swap is a failure mark.
        let mut theirs = Vec::new();
        let mut swap_error = None;
        if let Some(s) = self.stream {
            let swapped = if self.writes_first { s.send(&group).and_then(|()| s.recv()) } else { s.recv().and_then(|t| s.send(&group).map(|()| t)) };
            theirs = swapped.unwrap_or_else(|e| {
                swap_error = Some(e);
                format!("{FAILED}\n").into_bytes()
            });
        }
        let theirs = self.bcast_bytes(theirs).map_err(protocol)?;
        let mut failed = false;
        for text in [&group, &theirs] {
            for line in String::from_utf8_lossy(text).lines() {
                match line.split_once(' ') {
                    _ if line == FAILED => failed = true,
                    Some((k, v)) => {
                        self.table.insert(k.to_string(), v.to_string());
                    }
                    None => return Err(protocol(format!("a joining process sent a malformed entry {line:?}"))),
                }
            }
        }
        if let Some(e) = swap_error {
            return Err(protocol(format!("the connection to the other group's root failed: {e}")));
        }
        if failed {
            return Err(protocol("a process of the joining groups failed to set up its connections"));
        }
        Ok(())
    }

    /// Every member's bytes, concatenated in rank order, at every member.
    fn gather(&self, mine: &[u8]) -> wanmpi_engine::MpiResult<Vec<u8>> {
        let mut a = self.rt.adapter(self.comm)?;
        let n = a.size;
        let mut lens = vec![0u8; 8 * n];
        coll::allgather(&mut a, Some(&(mine.len() as u64).to_le_bytes()), &mut lens, 8).map_err(crate::coll_adapter::coll_error)?;
        let lens: Vec<usize> = lens.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")) as usize).collect();
        let block = lens.iter().copied().max().unwrap_or(0);
        let mut padded = mine.to_vec();
        padded.resize(block, 0);
        let mut all = vec![0u8; block * n];
        coll::allgather(&mut a, Some(&padded), &mut all, block).map_err(crate::coll_adapter::coll_error)?;
        Ok(lens.iter().enumerate().flat_map(|(i, &l)| all[i * block..i * block + l].iter().copied()).collect())
    }

    /// `bytes` as the root has them, at every member.
    fn bcast_bytes(&self, mut bytes: Vec<u8>) -> wanmpi_engine::MpiResult<Vec<u8>> {
        let mut a = self.rt.adapter(self.comm)?;
        let mut len = (bytes.len() as u64).to_le_bytes();
        coll::bcast(&mut a, &mut len, self.root).map_err(crate::coll_adapter::coll_error)?;
        bytes.resize(u64::from_le_bytes(len) as usize, 0);
        coll::bcast(&mut a, &mut bytes, self.root).map_err(crate::coll_adapter::coll_error)?;
        Ok(bytes)
    }
}

impl KeyValue for Relay<'_> {
    fn rank(&self) -> u32 {
        self.rank
    }
    fn size(&self) -> u32 {
        self.size
    }
    fn put(&mut self, key: &str, value: &str) -> Result<(), BootstrapError> {
        wanmpi_bootstrap::proto::check_item("key", key)?;
        wanmpi_bootstrap::proto::check_item("value", value)?;
        self.pending.push((key.to_string(), value.to_string()));
        Ok(())
    }
    fn fence(&mut self) -> Result<(), BootstrapError> {
        self.exchange(false)
    }
    fn get(&mut self, key: &str) -> Result<String, BootstrapError> {
        self.table.get(key).cloned().ok_or_else(|| BootstrapError::Missing(key.to_string()))
    }
}
