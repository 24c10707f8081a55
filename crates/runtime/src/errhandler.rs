//! Error handlers on communicators (MPI-3.1 §8.3).

use std::sync::Arc;
use wanmpi_engine::MpiError;

/// A user error handler: called with the communicator and the error.
pub type UserHandler = Arc<dyn Fn(crate::comm::CommId, &MpiError) + Send + Sync>;

/// What happens when an operation on a communicator fails.
#[derive(Clone)]
pub enum ErrHandler {
    /// MPI_ERRORS_ARE_FATAL: the job ends with the error's message (default).
    Fatal,
    /// MPI_ERRORS_ABORT: like fatal, for the processes of this communicator.
    Abort,
    /// MPI_ERRORS_RETURN: the error is returned to the caller.
    Return,
    /// A user handler (the C API wraps the C function pointer here), called
    /// with the communicator the error happened on (one that inherited the
    /// handler by a dup, too); after it returns, the error is returned.
    User(UserHandler),
}

impl std::fmt::Debug for ErrHandler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ErrHandler::Fatal => "MPI_ERRORS_ARE_FATAL",
            ErrHandler::Abort => "MPI_ERRORS_ABORT",
            ErrHandler::Return => "MPI_ERRORS_RETURN",
            ErrHandler::User(_) => "user error handler",
        })
    }
}

use wanmpi_engine::MpiResult;

use crate::comm::CommId;
use crate::p2p::comm_ref;
use crate::runtime::Runtime;

impl Runtime {
    pub fn set_errhandler(&self, comm: CommId, h: ErrHandler) -> MpiResult<()> {
        let mut st = self.lock();
        comm_ref(&st, comm)?;
        if let Some(c) = st.comms.get_mut(comm) {
            c.errhandler = h;
        }
        Ok(())
    }

    pub fn get_errhandler(&self, comm: CommId) -> MpiResult<ErrHandler> {
        Ok(comm_ref(&self.lock(), comm)?.errhandler.clone())
    }

    /// Applies `comm`'s error handler to a failed call: fatal handlers end
    /// the job with the error's message; otherwise the error is returned.
    pub fn handle_error<T>(&self, comm: CommId, r: MpiResult<T>) -> MpiResult<T> {
        let Err(e) = r else { return r };
        // An invalid communicator has no handler of its own: MPI_COMM_WORLD's applies.
        let (h, on) = {
            let st = self.lock();
            match st.comms.get(comm) {
                Some(c) => (c.errhandler.clone(), comm),
                None => (st.comms.get(crate::comm::COMM_WORLD).map_or(ErrHandler::Fatal, |c| c.errhandler.clone()), crate::comm::COMM_WORLD),
            }
        };
        match h {
            ErrHandler::Fatal | ErrHandler::Abort => self.die(&e.to_string(), e.class as i32),
            ErrHandler::Return => Err(e),
            ErrHandler::User(f) => {
                f(on, &e);
                Err(e)
            }
        }
    }
}
