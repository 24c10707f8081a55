//! MPI_Recv's short cut for a message that comes soon from a peer whose
//! transport offers its frames one by one (shared memory): the receive
//! polls that peer alone and takes the message out of the ring into the
//! user's buffer (`Engine::express_rx`), skipping the request, the posted
//! queue, the whole-transport poll and the request table. On one host this
//! is most of a small message's latency.
//!
//! Taken only when nothing else needs the progress loop meanwhile (no
//! output queued, no collective schedule or window to serve) and for at
//! most `EXPRESS_ROUNDS` polls; then, or at any frame it does not take, the
//! receive goes the ordinary way, which finds everything where it was.

use wanmpi_engine::datatype::Datatype;
use wanmpi_engine::engine::Taken;
use wanmpi_engine::request::RecvBuf;

use crate::comm::CommId;
use crate::p2p::{comm_ref, resolve_tag};
use crate::reqtable::{ANY_SOURCE, PROC_NULL};
use crate::runtime::{Runtime, State};

/// Polls of the one peer before the receive posts itself the ordinary way:
/// about two microseconds, a quick answer's wait (a later message gains
/// little from skipping a few hundred nanoseconds), and short enough that
/// holding the lock meanwhile delays no other thread noticeably.
pub(crate) const EXPRESS_ROUNDS: u32 = 256;

/// Where the express receive would look, if it may at all.
struct Plan {
    src: u32,
    ctx: u32,
    tag: Option<i32>,
    buf: RecvBuf,
}

fn plan(st: &State, buf: *mut u8, count: usize, dt: &Datatype, source: i32, tag: i32, comm: CommId) -> Option<Plan> {
    if source == ANY_SOURCE || source == PROC_NULL || !dt.is_committed() || !dt.is_contiguous() {
        return None;
    }
    let cap = count.checked_mul(dt.size())?;
    // A longer receive announces a credit to its sender: the ordinary path.
    if cap > st.engine.config().eager_limit {
        return None;
    }
    let tag = resolve_tag(tag).ok()?;
    let c = comm_ref(st, comm).ok().filter(|c| !c.revoked)?;
    let src = c.peer_group().world(usize::try_from(source).ok()?)?;
    let ctx = c.p2p_ctx();
    Some(Plan { src, ctx, tag, buf: RecvBuf { ptr: buf.wrapping_offset(dt.true_lb()), cap } })
}

/// Nothing else needs a progress step while this receive polls one peer.
fn quiet(st: &State) -> bool {
    st.fatal.is_none() && !st.transport_busy && st.colls.is_empty() && st.wins.is_empty() && !st.engine.has_pending_output()
}

impl Runtime {
    /// The message of a blocking receive if it came by the express path;
    /// `Err(spun)`: receive it the ordinary way (every argument error
    /// included), after `spun` polls already spent waiting. Runs under the
    /// caller's lock, held across the polls (a few microseconds at most):
    /// nothing can post, queue or take a frame meanwhile, so the checks hold
    /// for every poll, and a poll is a load of the ring's next word.
    ///
    /// # Safety
    /// `buf` must have room for `count` elements of `dt`.
    // MPI_Recv's arguments plus the locked state and the poll budget.
    #[allow(clippy::too_many_arguments)]
    pub(crate) unsafe fn express_recv(
        st: &mut State,
        rounds: u32,
        buf: *mut u8,
        count: usize,
        dt: &Datatype,
        source: i32,
        tag: i32,
        comm: CommId,
    ) -> Result<Taken, u32> {
        let p = plan(st, buf, count, dt, source, tag, comm).ok_or(0u32)?;
        if !quiet(st) {
            return Err(0);
        }
        let State { engine, transport, activity, .. } = st;
        let mut rx = engine.express_rx(p.src, p.ctx, p.tag).ok_or(0u32)?;
        for round in 0..rounds {
            // The answer in scalars, each read back as it was written: a
            // `Taken` written by the closure and copied out as a whole cost
            // store-forwarding stalls on the message's path.
            let (mut offered, mut got, mut tag, mut bytes, mut total) = (false, false, 0, 0, 0);
            let taken = transport.take_next_from(p.src, &mut |frame| {
                offered = true;
                // SAFETY: the receive contract keeps `buf` valid for `cap` bytes.
                if let Some(t) = unsafe { rx.take(RecvBuf { ptr: p.buf.ptr, cap: p.buf.cap }, frame) } {
                    (got, tag, bytes, total) = (true, t.tag, t.bytes, t.total);
                }
                got
            });
            match taken {
                Some(true) if got => {
                    *activity += 1;
                    return Ok(Taken { source: p.src, tag, bytes, total });
                }
                // A transport that cannot offer this peer's frames one by
                // one (all but shared memory) says so on the first poll.
                None => return Err(round),
                // A frame the receive does not take goes the ordinary way.
                _ if offered => return Err(round),
                _ => {}
            }
        }
        Err(rounds)
    }
}
