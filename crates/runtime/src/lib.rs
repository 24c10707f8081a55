//! The wanmpi process runtime: what one MPI process is. It owns the engine
//! and the transport behind one lock, runs the progress loop (and the
//! optional progress thread), keeps the communicators, and offers every MPI
//! operation over raw buffers, checked, for the Rust API (`wanmpi`) and the
//! C API (`libmpi`). It holds no process-wide state itself: the APIs keep
//! the one `Arc<Runtime>` of the process.

mod agree;
mod attr;
mod bsend;
mod coll_adapter;
mod collectives;
mod comm;
mod comm_create;
mod context;
mod dynamic;
mod errhandler;
mod express;
mod express_send;
mod from_groups;
mod grequest;
mod group;
mod icoll;
mod idup;
mod info;
mod init;
mod local_read;
mod mprobe;
mod options;
mod p2p;
mod persistent;
mod process_manager;
mod reqtable;
mod rma;
mod runtime;
mod sites;
mod sleepers;
mod split_inter;
mod staged;
mod tagged;
mod tool;
mod topo;
mod transports;
mod ulfm;
mod wan;

pub use attr::{CopyFn, DeleteFn, FIRST_USER_KEYVAL};
pub use bsend::BSEND_OVERHEAD;
pub use collectives::{Buf, VBuf};
pub use comm::{CommId, COMM_SELF, COMM_WORLD};
pub use comm_create::UNDEFINED;
pub use dynamic::{ENV_ACCEPT_TIMEOUT, ENV_NAME_DIR, ENV_PORT_HOST};
pub use errhandler::ErrHandler;
pub use grequest::Generalized;
pub use group::{Comparison, Group};
pub use icoll::{equal_blocks, Neighbors, WBuf};
pub use info::{Info, ALLOW_OVERTAKING, MAX_INFO_KEY, MAX_INFO_VAL};
pub use mprobe::Message;
pub use options::{RuntimeOptions, WanPeers};
pub use p2p::Completion;
pub use reqtable::{Req, SendMode, Status, ANY_SOURCE, ANY_TAG, PROC_NULL, TAG_UB};
pub use rma::{Flavor, LockType, OriginBuf, TargetSpec, WinAttrs, WinId, MODE_NOCHECK, MODE_NOPRECEDE, MODE_NOPUT, MODE_NOSTORE, MODE_NOSUCCEED};
pub use runtime::Runtime;
pub use tool::{PeerView, Tally, ToolView, ToolWant};
pub use topo::{dims_create, Cart};
pub use transports::KNOWN as KNOWN_TRANSPORTS;
pub use ulfm::AgreeOutcome;

pub use wanmpi_bootstrap::SpawnApp;
pub use wanmpi_engine::datatype::{BasicType, Datatype};
pub use wanmpi_engine::op::{Op, PredefOp, UserFn};
pub use wanmpi_engine::{ErrorClass, MpiError, MpiResult};
