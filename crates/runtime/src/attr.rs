//! Attribute caching on communicators (MPI-3.1 §6.7): keyvals with copy and
//! delete callbacks, values as pointer-sized integers (the C API stores
//! `void*`).

use std::sync::Arc;

use crate::comm::CommId;

/// Called when a communicator is duplicated: `Some(value)` copies the
/// attribute to the new communicator, `None` leaves it out. An `Err` is an
/// MPI error code returned by a user callback.
pub type CopyFn = Arc<dyn Fn(CommId, i32, usize) -> Result<Option<usize>, i32> + Send + Sync>;
/// Called when an attribute is deleted or its communicator freed.
pub type DeleteFn = Arc<dyn Fn(CommId, i32, usize) -> Result<(), i32> + Send + Sync>;

#[derive(Clone)]
pub struct Keyval {
    pub copy: Option<CopyFn>,
    pub delete: Option<DeleteFn>,
    /// MPI_Comm_free_keyval was called; attributes already set stay valid.
    pub freed: bool,
}

/// The first keyval handed to users; lower numbers are the predefined
/// attributes (MPI_TAG_UB, ...), answered by the API layers.
pub const FIRST_USER_KEYVAL: i32 = 100;

use wanmpi_engine::{error::err, ErrorClass, MpiError, MpiResult};

use crate::p2p::comm_ref;
use crate::runtime::Runtime;

/// Drops a freed keyval once no communicator holds an attribute with it.
fn forget_if_unused(st: &mut crate::runtime::State, k: i32) {
    if st.comms.keyvals.get(&k).is_some_and(|kv| kv.freed) && !st.comms.any_attr(k) {
        st.comms.keyvals.remove(&k);
    }
}

fn callback_error(what: &str, code: i32) -> MpiError {
    MpiError::new(ErrorClass::Other, format!("attribute {what} callback returned error code {code}"))
}

impl Runtime {
    /// MPI_Comm_create_keyval.
    pub fn create_keyval(&self, copy: Option<CopyFn>, delete: Option<DeleteFn>) -> i32 {
        let mut st = self.lock();
        let t = &mut st.comms;
        t.next_keyval = t.next_keyval.max(FIRST_USER_KEYVAL);
        let k = t.next_keyval;
        t.next_keyval += 1;
        t.keyvals.insert(k, Keyval { copy, delete, freed: false });
        k
    }

    /// MPI_Comm_free_keyval: the keyval lives on while attributes use it
    /// (their delete callbacks still run); freeing it again meanwhile, as a
    /// delete callback may, is allowed (MPICH's keyval_double_free tests).
    pub fn free_keyval(&self, k: i32) -> MpiResult<()> {
        let mut st = self.lock();
        match st.comms.keyvals.get_mut(&k) {
            Some(kv) => kv.freed = true,
            None => return err(ErrorClass::Keyval, format!("keyval {k} is not valid")),
        }
        forget_if_unused(&mut st, k);
        Ok(())
    }

    fn keyval(&self, k: i32) -> MpiResult<Keyval> {
        self.lock().comms.keyvals.get(&k).cloned().ok_or_else(|| MpiError::new(ErrorClass::Keyval, format!("keyval {k} is not valid")))
    }

    /// MPI_Comm_set_attr (an existing value is deleted first, with its callback).
    pub fn set_attr(&self, comm: CommId, k: i32, value: usize) -> MpiResult<()> {
        let kv = self.keyval(k)?;
        if kv.freed {
            return err(ErrorClass::Keyval, format!("keyval {k} was freed"));
        }
        let old = comm_ref(&self.lock(), comm)?.attr(k);
        if let (Some(old), Some(del)) = (old, &kv.delete) {
            del(comm, k, old).map_err(|c| callback_error("delete", c))?;
        }
        let mut st = self.lock();
        if let Some(c) = st.comms.get_mut(comm) {
            c.set_attr(k, value);
        }
        Ok(())
    }

    /// MPI_Comm_get_attr for user keyvals.
    pub fn get_attr(&self, comm: CommId, k: i32) -> MpiResult<Option<usize>> {
        let st = self.lock();
        if !st.comms.keyvals.contains_key(&k) {
            return err(ErrorClass::Keyval, format!("keyval {k} is not valid"));
        }
        Ok(comm_ref(&st, comm)?.attr(k))
    }

    /// MPI_Comm_delete_attr.
    pub fn delete_attr(&self, comm: CommId, k: i32) -> MpiResult<()> {
        let kv = self.keyval(k)?;
        let old = comm_ref(&self.lock(), comm)?.attr(k);
        let Some(old) = old else { return err(ErrorClass::Keyval, format!("keyval {k} has no value on this communicator")) };
        if let Some(del) = &kv.delete {
            del(comm, k, old).map_err(|c| callback_error("delete", c))?;
        }
        let mut st = self.lock();
        if let Some(c) = st.comms.get_mut(comm) {
            c.remove_attr(k);
        }
        forget_if_unused(&mut st, k);
        Ok(())
    }

    /// Runs the copy callbacks of `comm`'s attributes (for MPI_Comm_dup).
    pub(crate) fn copy_attrs(&self, comm: CommId) -> MpiResult<Vec<(i32, usize)>> {
        let attrs = comm_ref(&self.lock(), comm)?.attrs.clone();
        let mut out = Vec::new();
        for (k, v) in attrs {
            let kv = self.keyval(k)?;
            if let Some(copy) = &kv.copy {
                if let Some(nv) = copy(comm, k, v).map_err(|c| callback_error("copy", c))? {
                    out.push((k, nv));
                }
            }
        }
        Ok(out)
    }

    /// Deletes every attribute of `comm` with its callback, the last set
    /// first (MPI_Comm_free; MPI_COMM_SELF at MPI_Finalize, MPI-4.0 §11.2.4).
    pub(crate) fn delete_all_attrs(&self, comm: CommId) -> MpiResult<()> {
        let keys: Vec<i32> = comm_ref(&self.lock(), comm)?.attrs.iter().rev().map(|a| a.0).collect();
        for k in keys {
            self.delete_attr(comm, k)?;
        }
        Ok(())
    }
}
