//! Split collective data access (MPI-4.0 §14.4.5): the _begin call does
//! the whole collective access and keeps its outcome; the matching _end
//! call hands it over. One split collective may be active per file.

use wanmpi_engine::{error::err, ErrorClass, MpiResult};
use wanmpi_runtime::Status;

use crate::file::{File, Split, SplitKind};

impl File {
    /// Runs the collective `op` as the begin call of `kind`.
    pub fn split_begin(&self, kind: SplitKind, op: impl FnOnce() -> MpiResult<Status>) -> MpiResult<()> {
        if let Some(s) = self.split.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
            return err(ErrorClass::Io, format!("a split collective ({:?}) is already active on {}", s.kind, self.name));
        }
        let outcome = op();
        *self.split.lock().unwrap_or_else(|p| p.into_inner()) = Some(Split { kind, outcome });
        Ok(())
    }

    /// The end call of `kind`: the outcome of its begin call.
    pub fn split_end(&self, kind: SplitKind) -> MpiResult<Status> {
        let mut g = self.split.lock().unwrap_or_else(|p| p.into_inner());
        match g.take() {
            Some(s) if s.kind == kind => s.outcome,
            Some(s) => {
                let active = s.kind;
                *g = Some(s);
                err(ErrorClass::Io, format!("the active split collective on {} is {active:?}, not {kind:?}", self.name))
            }
            None => err(ErrorClass::Io, format!("no split collective is active on {}", self.name)),
        }
    }
}
