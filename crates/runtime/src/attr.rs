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

    /// MPI_Comm_free_keyval.
    pub fn free_keyval(&self, k: i32) -> MpiResult<()> {
        let mut st = self.lock();
        match st.comms.keyvals.get_mut(&k) {
            Some(kv) if !kv.freed => {
                kv.freed = true;
                Ok(())
            }
            _ => err(ErrorClass::Keyval, format!("keyval {k} is not valid")),
        }
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
        let old = comm_ref(&self.lock(), comm)?.attrs.get(&k).copied();
        if let (Some(old), Some(del)) = (old, &kv.delete) {
            del(comm, k, old).map_err(|c| callback_error("delete", c))?;
        }
        let mut st = self.lock();
        if let Some(c) = st.comms.get_mut(comm) {
            c.attrs.insert(k, value);
        }
        Ok(())
    }

    /// MPI_Comm_get_attr for user keyvals.
    pub fn get_attr(&self, comm: CommId, k: i32) -> MpiResult<Option<usize>> {
        let st = self.lock();
        if !st.comms.keyvals.contains_key(&k) {
            return err(ErrorClass::Keyval, format!("keyval {k} is not valid"));
        }
        Ok(comm_ref(&st, comm)?.attrs.get(&k).copied())
    }

    /// MPI_Comm_delete_attr.
    pub fn delete_attr(&self, comm: CommId, k: i32) -> MpiResult<()> {
        let kv = self.keyval(k)?;
        let old = comm_ref(&self.lock(), comm)?.attrs.get(&k).copied();
        let Some(old) = old else { return err(ErrorClass::Keyval, format!("keyval {k} has no value on this communicator")) };
        if let Some(del) = &kv.delete {
            del(comm, k, old).map_err(|c| callback_error("delete", c))?;
        }
        if let Some(c) = self.lock().comms.get_mut(comm) {
            c.attrs.remove(&k);
        }
        Ok(())
    }

    /// Runs the copy callbacks of `comm`'s attributes (for MPI_Comm_dup).
    pub(crate) fn copy_attrs(&self, comm: CommId) -> MpiResult<HashMap<i32, usize>> {
        let attrs: Vec<(i32, usize)> = comm_ref(&self.lock(), comm)?.attrs.iter().map(|(k, v)| (*k, *v)).collect();
        let mut out = HashMap::new();
        for (k, v) in attrs {
            let kv = self.keyval(k)?;
            if let Some(copy) = &kv.copy {
                if let Some(nv) = copy(comm, k, v).map_err(|c| callback_error("copy", c))? {
                    out.insert(k, nv);
                }
            }
        }
        Ok(out)
    }

    /// Deletes every attribute of `comm` with its callback (MPI_Comm_free).
    pub(crate) fn delete_all_attrs(&self, comm: CommId) -> MpiResult<()> {
        let keys: Vec<i32> = comm_ref(&self.lock(), comm)?.attrs.keys().copied().collect();
        for k in keys {
            self.delete_attr(comm, k)?;
        }
        Ok(())
    }
}

use std::collections::HashMap;
