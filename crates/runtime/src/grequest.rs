//! Generalized requests (MPI-4.0 §13.2): requests the program completes
//! itself (MPI_Grequest_complete). The runtime keeps their state; what to
//! report and what to release are the caller's closures (the C API wraps
//! the program's query, free and cancel functions in them).

use wanmpi_engine::{error::err, ErrorClass, MpiError, MpiResult};

use crate::reqtable::{Entry, Req, Status};
use crate::runtime::Runtime;

/// The program's side of a generalized request.
pub struct Generalized {
    /// MPI_Grequest_complete was called.
    pub complete: bool,
    /// The status to report, asked for once the request is complete.
    pub query: Box<dyn FnMut() -> Status + Send>,
    /// Releases the program's state when the request is done with; its
    /// error becomes the request's when the query reported none.
    pub free: Option<Box<dyn FnOnce() -> Option<MpiError> + Send>>,
    /// MPI_Cancel: told whether the request already completed; its error
    /// is MPI_Cancel's.
    pub cancel: Box<dyn FnMut(bool) -> Option<MpiError> + Send>,
}

impl Generalized {
    /// Its completion, once complete: the query's status; the state is released.
    pub(crate) fn finish(&mut self) -> Option<Status> {
        if !self.complete {
            return None;
        }
        let mut s = (self.query)();
        if let Some(e) = self.free.take().and_then(|f| f()) {
            s.error.get_or_insert(e);
        }
        Some(s)
    }
}

impl Runtime {
    /// MPI_Grequest_start.
    pub fn grequest_start(&self, g: Generalized) -> Req {
        self.lock().reqs.insert(Entry::Generalized(Box::new(g)))
    }

    /// MPI_Grequest_complete: a waiting call sees it at its next look.
    pub fn grequest_complete(&self, r: Req) -> MpiResult<()> {
        let mut st = self.lock();
        match st.reqs.get_mut(r) {
            Some(Entry::Generalized(g)) if !g.complete => g.complete = true,
            Some(Entry::Generalized(_)) => return err(ErrorClass::Request, "MPI_Grequest_complete called twice"),
            _ => return err(ErrorClass::Request, "MPI_Grequest_complete needs a generalized request"),
        }
        st.activity += 1;
        Ok(())
    }
}
