//! One-sided communication (MPI-4.0 chapter 12) over any transport, as
//! active messages: an origin sends each put, get, accumulate, lock or
//! PSCW notice as a message on the window's private context (`wire.rs`);
//! the target applies it to window memory during progress (`target.rs`)
//! and answers; the origin counts what is unanswered (`origin.rs`), which
//! is all a flush, unlock, fence or MPI_Win_complete waits for.
//!
//! Passive target: every progress step serves windows (`serve`), and the
//! first window starts the progress thread, so a target computing without
//! MPI calls still answers. A window is `create.rs`; the calls are
//! `ops.rs` (communication) and `sync.rs` (epochs).

mod create;
mod memory;
mod ops;
mod origin;
mod query;
mod shared;
mod sync;
mod target;
mod wire;

use std::collections::HashMap;
use std::sync::Arc;

use wanmpi_engine::engine::SendMode;
use wanmpi_engine::request::{RecvBuf, SendData};
use wanmpi_engine::Engine;

use crate::comm::CommId;
use crate::group::Group;
use crate::info::Info;
use crate::reqtable::{Entry, ReqTable, Status};
use crate::runtime::State;

pub use create::Flavor;
use memory::Memory;
pub use ops::{OriginBuf, TargetSpec};
use origin::{Access, Sink};
pub use query::WinAttrs;
use target::{Applied, Arriving, Exposure};
use wire::{Reply, Request, TAG_REP, TAG_REQ};

/// A window's handle inside the runtime.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct WinId(pub u32);

/// MPI_LOCK_EXCLUSIVE / MPI_LOCK_SHARED.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockType {
    Exclusive,
    Shared,
}

/// Assertions (MPI-4.0 §12.5.5), MPICH's values.
pub const MODE_NOCHECK: i32 = 1024;
pub const MODE_NOSTORE: i32 = 2048;
pub const MODE_NOPUT: i32 = 4096;
pub const MODE_NOPRECEDE: i32 = 8192;
pub const MODE_NOSUCCEED: i32 = 16384;

pub struct Window {
    /// A private duplicate of the user's communicator: its context carries
    /// only this window's traffic.
    pub comm: CommId,
    ctx: u32,
    pub group: Arc<Group>,
    pub mem: Memory,
    pub disp_unit: usize,
    /// Every rank's (size, displacement unit); empty for dynamic windows.
    pub peers: Vec<(u64, u64)>,
    pub flavor: Flavor,
    pub name: String,
    pub info: Info,
    exposure: Exposure,
    access: Access,
    /// Replies being received.
    replies: Vec<(u32, Arriving)>,
}

/// Every window of the process.
#[derive(Default)]
pub struct Windows {
    map: HashMap<u32, Window>,
    next: u32,
}

impl Windows {
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
    pub fn get(&self, w: WinId) -> Option<&Window> {
        self.map.get(&w.0)
    }
}

/// Serves every window: takes arriving requests and replies, applies the
/// requests each origin's order allows, delivers replies. Part of every
/// progress step.
pub fn serve(st: &mut State) {
    let State { engine, wins, reqs, activity, .. } = st;
    let mut moved = false;
    for w in wins.map.values_mut() {
        moved |= w.serve(engine, reqs);
    }
    if moved {
        *activity += 1;
    }
}

/// Starts receiving every message waiting on `ctx` under `tag`.
fn take_arrivals(engine: &mut Engine, ctx: u32, tag: i32, mut put: impl FnMut(u32, Arriving)) {
    while let Some(m) = engine.improbe(None, ctx, Some(tag)) {
        let from = m.source();
        let mut buf = vec![0u8; m.len()];
        let rb = RecvBuf { ptr: buf.as_mut_ptr(), cap: buf.len() };
        // SAFETY: `buf` moves into the queue, its heap block stays put until the receive completes.
        let id = unsafe { engine.imrecv(m, rb) };
        put(from, Arriving { id: Some(id), buf });
    }
}

/// True once `a` holds its whole message.
fn arrived(engine: &mut Engine, a: &mut Arriving) -> bool {
    let Some(id) = a.id else { return true };
    match engine.test(id) {
        Ok(Some(s)) => {
            a.buf.truncate(s.bytes);
            a.id = None;
            true
        }
        Ok(None) => false,
        // A failed receive (lost peer): nothing to apply.
        Err(_) => {
            a.buf.clear();
            a.id = None;
            true
        }
    }
}

fn send(engine: &mut Engine, to: u32, ctx: u32, tag: i32, bytes: Vec<u8>) {
    // SAFETY: the engine owns the bytes.
    if let Ok(id) = unsafe { engine.isend(to, ctx, tag, SendData::Owned(bytes), SendMode::Standard) } {
        let _ = engine.free(id);
    }
}

impl Window {
    fn serve(&mut self, engine: &mut Engine, reqs: &mut ReqTable) -> bool {
        let ctx = self.ctx;
        let queues = &mut self.exposure.queues;
        take_arrivals(engine, ctx, TAG_REQ, |from, a| queues.entry(from).or_default().push_back(a));
        let replies = &mut self.replies;
        take_arrivals(engine, ctx, TAG_REP, |from, a| replies.push((from, a)));
        let mut moved = false;
        // Replies first: a reply can only free this process's own waits.
        let mut i = 0;
        while i < self.replies.len() {
            if arrived(engine, &mut self.replies[i].1) {
                let (from, a) = self.replies.swap_remove(i);
                self.answer(from, &a.buf, reqs);
                moved = true;
            } else {
                i += 1;
            }
        }
        // Requests: an unlock may let a waiting lock through, so go round
        // until nothing moves.
        loop {
            let mut again = false;
            let origins: Vec<u32> = self.exposure.queues.keys().copied().collect();
            for o in origins {
                while let Some(head) = self.exposure.queues.get_mut(&o).and_then(|q| q.front_mut()) {
                    if !arrived(engine, head) {
                        break;
                    }
                    let req = match Request::decode(&head.buf) {
                        Ok(r) => r,
                        Err(e) => {
                            // Nothing to answer: the id itself is not trustworthy.
                            eprintln!("wanmpi: rank {}: dropped a request from rank {o}: {e}", engine.rank());
                            self.exposure.queues.get_mut(&o).map(|q| q.pop_front());
                            continue;
                        }
                    };
                    match self.exposure.apply(o, req, &self.mem, self.disp_unit) {
                        Applied::Wait => break,
                        Applied::Reply(r) => {
                            self.exposure.queues.get_mut(&o).map(|q| q.pop_front());
                            if let Some(r) = r {
                                send(engine, o, ctx, TAG_REP, r.encode());
                            }
                            again = true;
                            moved = true;
                        }
                    }
                }
            }
            self.exposure.queues.retain(|_, q| !q.is_empty());
            if !again {
                break;
            }
        }
        moved
    }

    /// A reply from `from`: completes what waits for it.
    fn answer(&mut self, from: u32, bytes: &[u8], reqs: &mut ReqTable) {
        let Ok(Reply { id, result }) = Reply::decode(bytes) else { return };
        let Some(p) = self.access.answered(id, from) else { return };
        let status = match result {
            Ok(data) => {
                match p.sink {
                    Sink::Ack => {}
                    Sink::Grant => {
                        if let Some(h) = self.access.locks.get_mut(&from) {
                            h.granted = true;
                        }
                    }
                    Sink::Into { ptr, count, datatype, offset } => {
                        // SAFETY: the origin's contract keeps its result buffer valid until completion.
                        unsafe { datatype.unpack_range(&data, ptr as *mut u8, count, offset) };
                    }
                }
                Status::empty()
            }
            Err((class, msg)) => {
                let e = origin::remote_error(class, msg, from);
                if p.req.is_none() && self.access.error.is_none() {
                    self.access.error = Some(e.clone());
                }
                Status { error: Some(e), ..Status::empty() }
            }
        };
        if let Some(r) = p.req {
            // A freed request is gone from the table: nothing to complete.
            if let Some(e) = reqs.get_mut(r) {
                *e = Entry::Done(status);
            }
        }
    }

    /// Sends `req` to `target` (a world rank) on this window's context.
    fn send_request(&self, engine: &mut Engine, target: u32, req: &Request) {
        send(engine, target, self.ctx, TAG_REQ, req.encode());
    }
}
