//! Communicators (MPI-3.1 chapter 6): a group, contexts that isolate its
//! traffic, and what the user hangs on it (name, info, error handler,
//! attributes). Creation lives in `comm_create.rs`.

use std::collections::HashMap;
use std::sync::Arc;

use crate::attr::Keyval;
use crate::errhandler::ErrHandler;
use crate::group::Group;
use crate::info::Info;
use crate::topo::Cart;

/// A communicator's handle inside the runtime.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CommId(pub u32);

pub const COMM_WORLD: CommId = CommId(0);
pub const COMM_SELF: CommId = CommId(1);

/// Context ids come in pairs: point-to-point traffic uses `2k`, collective
/// traffic `2k + 1`, so a collective never matches a user's receive.
pub const WORLD_PAIR: u32 = 0;
pub const SELF_PAIR: u32 = 1;

pub struct Comm {
    /// The local group (for an inter-communicator, this side's group).
    pub group: Arc<Group>,
    /// The remote group of an inter-communicator.
    pub remote: Option<Arc<Group>>,
    /// This process's rank in `group`.
    pub rank: usize,
    /// Context pair index: p2p context `2 * pair`, collectives `2 * pair + 1`.
    pub pair: u32,
    pub name: String,
    pub info: Info,
    pub errhandler: ErrHandler,
    /// Attributes (keyval, value) in the order they were set: MPI deletes
    /// them in reverse order (LIFO) when the communicator goes.
    pub attrs: Vec<(i32, usize)>,
    pub cart: Option<Cart>,
    /// Nonblocking collectives started so far (their schedules' number).
    pub coll_seq: u32,
    /// ULFM: revoked (by this process or another member); communication
    /// on it fails with MPIX_ERR_REVOKED (`ulfm/`).
    pub revoked: bool,
    /// ULFM: how many communicators with this pair and member set this
    /// process created before (`ulfm/identity.rs`).
    pub incarnation: u32,
}

impl Comm {
    pub fn new(group: Arc<Group>, remote: Option<Arc<Group>>, rank: usize, pair: u32, name: String) -> Comm {
        Comm {
            group,
            remote,
            rank,
            pair,
            name,
            info: Info::default(),
            errhandler: ErrHandler::Fatal,
            attrs: Vec::new(),
            cart: None,
            coll_seq: 0,
            revoked: false,
            incarnation: 0,
        }
    }
    pub fn p2p_ctx(&self) -> u32 {
        2 * self.pair
    }
    pub fn coll_ctx(&self) -> u32 {
        2 * self.pair + 1
    }
    pub fn is_inter(&self) -> bool {
        self.remote.is_some()
    }
    /// The group that ranks in point-to-point calls refer to.
    pub fn peer_group(&self) -> &Arc<Group> {
        self.remote.as_ref().unwrap_or(&self.group)
    }
    pub fn size(&self) -> usize {
        self.group.size()
    }
    pub fn attr(&self, k: i32) -> Option<usize> {
        self.attrs.iter().find(|a| a.0 == k).map(|a| a.1)
    }
    /// Sets attribute `k` (in its old place when it had one).
    pub fn set_attr(&mut self, k: i32, v: usize) {
        match self.attrs.iter_mut().find(|a| a.0 == k) {
            Some(a) => a.1 = v,
            None => self.attrs.push((k, v)),
        }
    }
    pub fn remove_attr(&mut self, k: i32) {
        self.attrs.retain(|a| a.0 != k);
    }
}

/// All communicators of the process, by id. Freed ids are not reused, so a
/// stale handle is detected.
#[derive(Default)]
pub struct CommTable {
    comms: Vec<Option<Comm>>,
    pub keyvals: HashMap<i32, Keyval>,
    pub next_keyval: i32,
}

impl CommTable {
    pub fn insert(&mut self, c: Comm) -> CommId {
        self.comms.push(Some(c));
        CommId((self.comms.len() - 1) as u32)
    }
    pub fn get(&self, id: CommId) -> Option<&Comm> {
        self.comms.get(id.0 as usize).and_then(|c| c.as_ref())
    }
    pub fn get_mut(&mut self, id: CommId) -> Option<&mut Comm> {
        self.comms.get_mut(id.0 as usize).and_then(|c| c.as_mut())
    }
    /// Whether any communicator holds an attribute with keyval `k`.
    pub fn any_attr(&self, k: i32) -> bool {
        self.comms.iter().flatten().any(|c| c.attr(k).is_some())
    }
    /// The live communicator using context pair `pair` (pairs are unique
    /// within a process).
    pub fn find_pair(&self, pair: u32) -> Option<CommId> {
        self.comms.iter().position(|c| c.as_ref().is_some_and(|c| c.pair == pair)).map(|i| CommId(i as u32))
    }
    pub fn remove(&mut self, id: CommId) -> Option<Comm> {
        self.comms.get_mut(id.0 as usize).and_then(|c| c.take())
    }
}
