//! wanmpi's MPI engine: where MPI semantics live, independent of any
//! transport. It does no I/O and never reads the clock: the runtime feeds it
//! frames (`handle_incoming`) and pulls frames to send (`transmit`).
//!
//! Where things are:
//! - `matching`: the posted and unexpected queues and the non-overtaking rule;
//! - `protocol`: eager / credited / rendezvous selection (a pure function);
//! - `engine`: requests in flight, frames in and out, completion;
//! - `datatype`, `op`, `coll`: datatypes, reduction operations, collective
//!   algorithms (over the `coll::CollComm` point-to-point contract).

pub mod coll;
pub mod config;
pub mod datatype;
pub mod engine;
pub mod error;
pub mod matching;
pub mod op;
pub mod protocol;
pub mod request;

pub use config::EngineConfig;
pub use engine::{Arrivals, Engine, EngineStats, LocalRead, ReadError, WindowUse};
pub use error::{ErrorClass, MpiError, MpiResult};
pub use request::{RequestId, Status};
