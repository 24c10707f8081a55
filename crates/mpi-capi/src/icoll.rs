//! Nonblocking (MPI-4.0 §5.12) and persistent (§5.13) collectives, and
//! MPI_Alltoallw: the arguments decoded as the blocking calls decode them
//! (`coll.rs`), then a runtime collective request. Each `PMPI_Ixxx` and
//! `PMPI_Xxx_init` pair shares one function with a `persistent` flag; the
//! info argument of the `_init` forms carries no hint we use.

use std::ffi::c_void;
use std::os::raw::{c_int, c_long};

use wanmpi_runtime::{equal_blocks, Buf, CommId, Datatype, Req, VBuf, WBuf};

use crate::args::{comm_id, count, datatype, out, slice, Count};
use crate::coll::{buf_arg, byte, counts, displs, in_place, inter_root_side, is_root, send_opt};
use crate::error::{call, R};
use crate::global::rt;
use crate::op::op_for;
use crate::request::new_request;

/// Hands the runtime request to the caller as a C handle.
unsafe fn hand_out(request: *mut c_int, comm: c_int, persistent: bool, start: impl FnOnce() -> R<Req>) -> c_int {
    call(comm, || {
        let o = out(request, "request")?;
        *o = new_request(start()?, comm, persistent)?;
        Ok(())
    })
}

/// The ranks a per-rank array covers (the remote group on an inter-communicator).
fn size_of(cid: CommId) -> R<usize> {
    rt()?.comm_peer_size(cid)
}

unsafe fn barrier(comm: c_int, req: *mut c_int, p: bool) -> c_int {
    hand_out(req, comm, p, || rt()?.ibarrier(comm_id(comm)?, p))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Ibarrier(comm: c_int, req: *mut c_int) -> c_int {
    barrier(comm, req, false)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Barrier_init(comm: c_int, _info: c_int, req: *mut c_int) -> c_int {
    barrier(comm, req, true)
}

unsafe fn bcast<C: Count>(b: *mut c_void, c: C, dt: c_int, root: c_int, comm: c_int, req: *mut c_int, p: bool) -> c_int {
    hand_out(req, comm, p, || {
        let (n, d) = buf_arg(b, c, dt)?;
        rt()?.ibcast(Buf::new(b as *mut u8, n, &d), root, comm_id(comm)?, p)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Ibcast(b: *mut c_void, c: c_int, dt: c_int, root: c_int, comm: c_int, req: *mut c_int) -> c_int {
    bcast(b, c, dt, root, comm, req, false)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Ibcast_c(b: *mut c_void, c: c_long, dt: c_int, root: c_int, comm: c_int, req: *mut c_int) -> c_int {
    bcast(b, c, dt, root, comm, req, false)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Bcast_init(b: *mut c_void, c: c_int, dt: c_int, root: c_int, comm: c_int, _info: c_int, req: *mut c_int) -> c_int {
    bcast(b, c, dt, root, comm, req, true)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Bcast_init_c(b: *mut c_void, c: c_long, dt: c_int, root: c_int, comm: c_int, _info: c_int, req: *mut c_int) -> c_int {
    bcast(b, c, dt, root, comm, req, true)
}

/// Which reduction: allreduce, reduce to a root, scan, exscan.
#[derive(Clone, Copy)]
enum Red {
    All,
    To(c_int),
    Scan,
    Exscan,
}

// A reduction's C arguments plus which one and the persistence flag.
#[allow(clippy::too_many_arguments)]
unsafe fn reduction<C: Count>(
    s: *const c_void,
    r: *mut c_void,
    c: C,
    dt: c_int,
    op: c_int,
    comm: c_int,
    req: *mut c_int,
    which: Red,
    p: bool,
) -> c_int {
    hand_out(req, comm, p, || {
        // Reduce's receive buffer matters only at the root: decode it loosely.
        let (n, d) = match which {
            Red::To(_) => (count(c)?, datatype(dt)?),
            _ => buf_arg(r, c, dt)?,
        };
        let o = op_for(op, dt, &d)?;
        let (b, cid, rt) = (Buf::new(r as *mut u8, n, &d), comm_id(comm)?, rt()?);
        match which {
            Red::All => rt.iallreduce(send_opt(s), b, &o, cid, p),
            Red::To(root) => rt.ireduce(send_opt(s), b, &o, root, cid, p),
            Red::Scan => rt.iscan(send_opt(s), b, &o, cid, false, p),
            Red::Exscan => rt.iscan(send_opt(s), b, &o, cid, true, p),
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Iallreduce(s: *const c_void, r: *mut c_void, c: c_int, dt: c_int, op: c_int, comm: c_int, req: *mut c_int) -> c_int {
    reduction(s, r, c, dt, op, comm, req, Red::All, false)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Iallreduce_c(s: *const c_void, r: *mut c_void, c: c_long, dt: c_int, op: c_int, comm: c_int, req: *mut c_int) -> c_int {
    reduction(s, r, c, dt, op, comm, req, Red::All, false)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Allreduce_init(
    s: *const c_void,
    r: *mut c_void,
    c: c_int,
    dt: c_int,
    op: c_int,
    comm: c_int,
    _info: c_int,
    req: *mut c_int,
) -> c_int {
    reduction(s, r, c, dt, op, comm, req, Red::All, true)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Allreduce_init_c(
    s: *const c_void,
    r: *mut c_void,
    c: c_long,
    dt: c_int,
    op: c_int,
    comm: c_int,
    _info: c_int,
    req: *mut c_int,
) -> c_int {
    reduction(s, r, c, dt, op, comm, req, Red::All, true)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Ireduce(
    s: *const c_void,
    r: *mut c_void,
    c: c_int,
    dt: c_int,
    op: c_int,
    root: c_int,
    comm: c_int,
    req: *mut c_int,
) -> c_int {
    reduction(s, r, c, dt, op, comm, req, Red::To(root), false)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Ireduce_c(
    s: *const c_void,
    r: *mut c_void,
    c: c_long,
    dt: c_int,
    op: c_int,
    root: c_int,
    comm: c_int,
    req: *mut c_int,
) -> c_int {
    reduction(s, r, c, dt, op, comm, req, Red::To(root), false)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Reduce_init(
    s: *const c_void,
    r: *mut c_void,
    c: c_int,
    dt: c_int,
    op: c_int,
    root: c_int,
    comm: c_int,
    _info: c_int,
    req: *mut c_int,
) -> c_int {
    reduction(s, r, c, dt, op, comm, req, Red::To(root), true)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Reduce_init_c(
    s: *const c_void,
    r: *mut c_void,
    c: c_long,
    dt: c_int,
    op: c_int,
    root: c_int,
    comm: c_int,
    _info: c_int,
    req: *mut c_int,
) -> c_int {
    reduction(s, r, c, dt, op, comm, req, Red::To(root), true)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Iscan(s: *const c_void, r: *mut c_void, c: c_int, dt: c_int, op: c_int, comm: c_int, req: *mut c_int) -> c_int {
    reduction(s, r, c, dt, op, comm, req, Red::Scan, false)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Iscan_c(s: *const c_void, r: *mut c_void, c: c_long, dt: c_int, op: c_int, comm: c_int, req: *mut c_int) -> c_int {
    reduction(s, r, c, dt, op, comm, req, Red::Scan, false)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Scan_init(
    s: *const c_void,
    r: *mut c_void,
    c: c_int,
    dt: c_int,
    op: c_int,
    comm: c_int,
    _info: c_int,
    req: *mut c_int,
) -> c_int {
    reduction(s, r, c, dt, op, comm, req, Red::Scan, true)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Scan_init_c(
    s: *const c_void,
    r: *mut c_void,
    c: c_long,
    dt: c_int,
    op: c_int,
    comm: c_int,
    _info: c_int,
    req: *mut c_int,
) -> c_int {
    reduction(s, r, c, dt, op, comm, req, Red::Scan, true)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Iexscan(s: *const c_void, r: *mut c_void, c: c_int, dt: c_int, op: c_int, comm: c_int, req: *mut c_int) -> c_int {
    reduction(s, r, c, dt, op, comm, req, Red::Exscan, false)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Iexscan_c(s: *const c_void, r: *mut c_void, c: c_long, dt: c_int, op: c_int, comm: c_int, req: *mut c_int) -> c_int {
    reduction(s, r, c, dt, op, comm, req, Red::Exscan, false)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Exscan_init(
    s: *const c_void,
    r: *mut c_void,
    c: c_int,
    dt: c_int,
    op: c_int,
    comm: c_int,
    _info: c_int,
    req: *mut c_int,
) -> c_int {
    reduction(s, r, c, dt, op, comm, req, Red::Exscan, true)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Exscan_init_c(
    s: *const c_void,
    r: *mut c_void,
    c: c_long,
    dt: c_int,
    op: c_int,
    comm: c_int,
    _info: c_int,
    req: *mut c_int,
) -> c_int {
    reduction(s, r, c, dt, op, comm, req, Red::Exscan, true)
}

/// Reduce_scatter with per-rank counts (`rcounts`) or one block count.
#[derive(Clone, Copy)]
enum Counts<C: Count> {
    Each(*const C),
    Block(C),
}

// MPI_Ireduce_scatter's C arguments plus the persistence flag.
#[allow(clippy::too_many_arguments)]
unsafe fn reduce_scatter<C: Count>(
    s: *const c_void,
    r: *mut c_void,
    rc: Counts<C>,
    dt: c_int,
    op: c_int,
    comm: c_int,
    req: *mut c_int,
    p: bool,
) -> c_int {
    hand_out(req, comm, p, || {
        let cid = comm_id(comm)?;
        // One count per rank of this group (on an inter-communicator too).
        let size = rt()?.comm_size(cid)?;
        let rcv = match rc {
            Counts::Each(ptr) => counts(ptr, size, "recvcounts")?,
            Counts::Block(n) => vec![count(n)?; size],
        };
        let d = datatype(dt)?;
        let o = op_for(op, dt, &d)?;
        rt()?.ireduce_scatter(send_opt(s), r as *mut u8, &rcv, &d, &o, cid, p)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Ireduce_scatter(
    s: *const c_void,
    r: *mut c_void,
    rcs: *const c_int,
    dt: c_int,
    op: c_int,
    comm: c_int,
    req: *mut c_int,
) -> c_int {
    reduce_scatter(s, r, Counts::Each(rcs), dt, op, comm, req, false)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Ireduce_scatter_c(
    s: *const c_void,
    r: *mut c_void,
    rcs: *const c_long,
    dt: c_int,
    op: c_int,
    comm: c_int,
    req: *mut c_int,
) -> c_int {
    reduce_scatter(s, r, Counts::Each(rcs), dt, op, comm, req, false)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Reduce_scatter_init(
    s: *const c_void,
    r: *mut c_void,
    rcs: *const c_int,
    dt: c_int,
    op: c_int,
    comm: c_int,
    _info: c_int,
    req: *mut c_int,
) -> c_int {
    reduce_scatter(s, r, Counts::Each(rcs), dt, op, comm, req, true)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Reduce_scatter_init_c(
    s: *const c_void,
    r: *mut c_void,
    rcs: *const c_long,
    dt: c_int,
    op: c_int,
    comm: c_int,
    _info: c_int,
    req: *mut c_int,
) -> c_int {
    reduce_scatter(s, r, Counts::Each(rcs), dt, op, comm, req, true)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Ireduce_scatter_block(
    s: *const c_void,
    r: *mut c_void,
    rc: c_int,
    dt: c_int,
    op: c_int,
    comm: c_int,
    req: *mut c_int,
) -> c_int {
    reduce_scatter(s, r, Counts::Block(rc), dt, op, comm, req, false)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Ireduce_scatter_block_c(
    s: *const c_void,
    r: *mut c_void,
    rc: c_long,
    dt: c_int,
    op: c_int,
    comm: c_int,
    req: *mut c_int,
) -> c_int {
    reduce_scatter(s, r, Counts::Block(rc), dt, op, comm, req, false)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Reduce_scatter_block_init(
    s: *const c_void,
    r: *mut c_void,
    rc: c_int,
    dt: c_int,
    op: c_int,
    comm: c_int,
    _info: c_int,
    req: *mut c_int,
) -> c_int {
    reduce_scatter(s, r, Counts::Block(rc), dt, op, comm, req, true)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Reduce_scatter_block_init_c(
    s: *const c_void,
    r: *mut c_void,
    rc: c_long,
    dt: c_int,
    op: c_int,
    comm: c_int,
    _info: c_int,
    req: *mut c_int,
) -> c_int {
    reduce_scatter(s, r, Counts::Block(rc), dt, op, comm, req, true)
}

/// The receive side of a gather-like call: equal blocks of `rc` or per-rank counts and displacements.
#[derive(Clone, Copy)]
enum Layout<C: Count> {
    Equal(C),
    Each(*const C, *const C),
}

fn layout<C: Count>(l: Layout<C>, size: usize) -> R<(Vec<usize>, Vec<isize>)> {
    match l {
        Layout::Equal(n) => Ok(equal_blocks(count(n)?, size)),
        Layout::Each(c, d) => Ok((counts(c, size, "counts")?, displs(d, size)?)),
    }
}

// MPI_Igatherv's C arguments (a plain gather's as `Layout::Equal`) plus the persistence flag.
#[allow(clippy::too_many_arguments)]
unsafe fn gather<C: Count>(
    s: *const c_void,
    sc: C,
    sdt: c_int,
    r: *mut c_void,
    rl: Layout<C>,
    rdt: c_int,
    root: c_int,
    comm: c_int,
    req: *mut c_int,
    p: bool,
) -> c_int {
    hand_out(req, comm, p, || {
        let cid = comm_id(comm)?;
        let size = size_of(cid)?;
        let send = if in_place(s) || inter_root_side(root) { None } else { Some(buf_arg(s, sc, sdt)?) };
        let ((rc, rd), rdt) = if is_root(cid, root)? { (layout(rl, size)?, datatype(rdt)?) } else { ((vec![], vec![]), byte()) };
        let sb = send.as_ref().map(|(n, d)| Buf::new(s as *mut u8, *n, d));
        rt()?.igatherv(sb, VBuf { ptr: r as *mut u8, counts: &rc, displs: &rd, dt: &rdt }, root, cid, p)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Igather(
    s: *const c_void,
    sc: c_int,
    sdt: c_int,
    r: *mut c_void,
    rc: c_int,
    rdt: c_int,
    root: c_int,
    comm: c_int,
    req: *mut c_int,
) -> c_int {
    gather(s, sc, sdt, r, Layout::Equal(rc), rdt, root, comm, req, false)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Igather_c(
    s: *const c_void,
    sc: c_long,
    sdt: c_int,
    r: *mut c_void,
    rc: c_long,
    rdt: c_int,
    root: c_int,
    comm: c_int,
    req: *mut c_int,
) -> c_int {
    gather(s, sc, sdt, r, Layout::Equal(rc), rdt, root, comm, req, false)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Gather_init(
    s: *const c_void,
    sc: c_int,
    sdt: c_int,
    r: *mut c_void,
    rc: c_int,
    rdt: c_int,
    root: c_int,
    comm: c_int,
    _info: c_int,
    req: *mut c_int,
) -> c_int {
    gather(s, sc, sdt, r, Layout::Equal(rc), rdt, root, comm, req, true)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Gather_init_c(
    s: *const c_void,
    sc: c_long,
    sdt: c_int,
    r: *mut c_void,
    rc: c_long,
    rdt: c_int,
    root: c_int,
    comm: c_int,
    _info: c_int,
    req: *mut c_int,
) -> c_int {
    gather(s, sc, sdt, r, Layout::Equal(rc), rdt, root, comm, req, true)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Igatherv(
    s: *const c_void,
    sc: c_int,
    sdt: c_int,
    r: *mut c_void,
    rcs: *const c_int,
    ds: *const c_int,
    rdt: c_int,
    root: c_int,
    comm: c_int,
    req: *mut c_int,
) -> c_int {
    gather(s, sc, sdt, r, Layout::Each(rcs, ds), rdt, root, comm, req, false)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Igatherv_c(
    s: *const c_void,
    sc: c_long,
    sdt: c_int,
    r: *mut c_void,
    rcs: *const c_long,
    ds: *const c_long,
    rdt: c_int,
    root: c_int,
    comm: c_int,
    req: *mut c_int,
) -> c_int {
    gather(s, sc, sdt, r, Layout::Each(rcs, ds), rdt, root, comm, req, false)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Gatherv_init(
    s: *const c_void,
    sc: c_int,
    sdt: c_int,
    r: *mut c_void,
    rcs: *const c_int,
    ds: *const c_int,
    rdt: c_int,
    root: c_int,
    comm: c_int,
    _info: c_int,
    req: *mut c_int,
) -> c_int {
    gather(s, sc, sdt, r, Layout::Each(rcs, ds), rdt, root, comm, req, true)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Gatherv_init_c(
    s: *const c_void,
    sc: c_long,
    sdt: c_int,
    r: *mut c_void,
    rcs: *const c_long,
    ds: *const c_long,
    rdt: c_int,
    root: c_int,
    comm: c_int,
    _info: c_int,
    req: *mut c_int,
) -> c_int {
    gather(s, sc, sdt, r, Layout::Each(rcs, ds), rdt, root, comm, req, true)
}

// MPI_Iscatterv's C arguments (a plain scatter's as `Layout::Equal`) plus the persistence flag.
#[allow(clippy::too_many_arguments)]
unsafe fn scatter<C: Count>(
    s: *const c_void,
    sl: Layout<C>,
    sdt: c_int,
    r: *mut c_void,
    rc: C,
    rdt: c_int,
    root: c_int,
    comm: c_int,
    req: *mut c_int,
    p: bool,
) -> c_int {
    hand_out(req, comm, p, || {
        let cid = comm_id(comm)?;
        let size = size_of(cid)?;
        let ((sc, sd), sdt) = if is_root(cid, root)? { (layout(sl, size)?, datatype(sdt)?) } else { ((vec![], vec![]), byte()) };
        let recv = if in_place(r) || inter_root_side(root) { None } else { Some(buf_arg(r, rc, rdt)?) };
        let rb = recv.as_ref().map(|(n, d)| Buf::new(r as *mut u8, *n, d));
        rt()?.iscatterv(VBuf { ptr: s as *mut u8, counts: &sc, displs: &sd, dt: &sdt }, rb, root, cid, p)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Iscatter(
    s: *const c_void,
    sc: c_int,
    sdt: c_int,
    r: *mut c_void,
    rc: c_int,
    rdt: c_int,
    root: c_int,
    comm: c_int,
    req: *mut c_int,
) -> c_int {
    scatter(s, Layout::Equal(sc), sdt, r, rc, rdt, root, comm, req, false)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Iscatter_c(
    s: *const c_void,
    sc: c_long,
    sdt: c_int,
    r: *mut c_void,
    rc: c_long,
    rdt: c_int,
    root: c_int,
    comm: c_int,
    req: *mut c_int,
) -> c_int {
    scatter(s, Layout::Equal(sc), sdt, r, rc, rdt, root, comm, req, false)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Scatter_init(
    s: *const c_void,
    sc: c_int,
    sdt: c_int,
    r: *mut c_void,
    rc: c_int,
    rdt: c_int,
    root: c_int,
    comm: c_int,
    _info: c_int,
    req: *mut c_int,
) -> c_int {
    scatter(s, Layout::Equal(sc), sdt, r, rc, rdt, root, comm, req, true)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Scatter_init_c(
    s: *const c_void,
    sc: c_long,
    sdt: c_int,
    r: *mut c_void,
    rc: c_long,
    rdt: c_int,
    root: c_int,
    comm: c_int,
    _info: c_int,
    req: *mut c_int,
) -> c_int {
    scatter(s, Layout::Equal(sc), sdt, r, rc, rdt, root, comm, req, true)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Iscatterv(
    s: *const c_void,
    scs: *const c_int,
    ds: *const c_int,
    sdt: c_int,
    r: *mut c_void,
    rc: c_int,
    rdt: c_int,
    root: c_int,
    comm: c_int,
    req: *mut c_int,
) -> c_int {
    scatter(s, Layout::Each(scs, ds), sdt, r, rc, rdt, root, comm, req, false)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Iscatterv_c(
    s: *const c_void,
    scs: *const c_long,
    ds: *const c_long,
    sdt: c_int,
    r: *mut c_void,
    rc: c_long,
    rdt: c_int,
    root: c_int,
    comm: c_int,
    req: *mut c_int,
) -> c_int {
    scatter(s, Layout::Each(scs, ds), sdt, r, rc, rdt, root, comm, req, false)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Scatterv_init(
    s: *const c_void,
    scs: *const c_int,
    ds: *const c_int,
    sdt: c_int,
    r: *mut c_void,
    rc: c_int,
    rdt: c_int,
    root: c_int,
    comm: c_int,
    _info: c_int,
    req: *mut c_int,
) -> c_int {
    scatter(s, Layout::Each(scs, ds), sdt, r, rc, rdt, root, comm, req, true)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Scatterv_init_c(
    s: *const c_void,
    scs: *const c_long,
    ds: *const c_long,
    sdt: c_int,
    r: *mut c_void,
    rc: c_long,
    rdt: c_int,
    root: c_int,
    comm: c_int,
    _info: c_int,
    req: *mut c_int,
) -> c_int {
    scatter(s, Layout::Each(scs, ds), sdt, r, rc, rdt, root, comm, req, true)
}

// MPI_Iallgatherv's C arguments (a plain allgather's as `Layout::Equal`) plus the persistence flag.
#[allow(clippy::too_many_arguments)]
unsafe fn allgather<C: Count>(
    s: *const c_void,
    sc: C,
    sdt: c_int,
    r: *mut c_void,
    rl: Layout<C>,
    rdt: c_int,
    comm: c_int,
    req: *mut c_int,
    p: bool,
) -> c_int {
    hand_out(req, comm, p, || {
        let cid = comm_id(comm)?;
        let size = size_of(cid)?;
        let send = if in_place(s) { None } else { Some(buf_arg(s, sc, sdt)?) };
        let ((rc, rd), rdt) = (layout(rl, size)?, datatype(rdt)?);
        let sb = send.as_ref().map(|(n, d)| Buf::new(s as *mut u8, *n, d));
        rt()?.iallgatherv(sb, VBuf { ptr: r as *mut u8, counts: &rc, displs: &rd, dt: &rdt }, cid, p)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Iallgather(
    s: *const c_void,
    sc: c_int,
    sdt: c_int,
    r: *mut c_void,
    rc: c_int,
    rdt: c_int,
    comm: c_int,
    req: *mut c_int,
) -> c_int {
    allgather(s, sc, sdt, r, Layout::Equal(rc), rdt, comm, req, false)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Iallgather_c(
    s: *const c_void,
    sc: c_long,
    sdt: c_int,
    r: *mut c_void,
    rc: c_long,
    rdt: c_int,
    comm: c_int,
    req: *mut c_int,
) -> c_int {
    allgather(s, sc, sdt, r, Layout::Equal(rc), rdt, comm, req, false)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Allgather_init(
    s: *const c_void,
    sc: c_int,
    sdt: c_int,
    r: *mut c_void,
    rc: c_int,
    rdt: c_int,
    comm: c_int,
    _info: c_int,
    req: *mut c_int,
) -> c_int {
    allgather(s, sc, sdt, r, Layout::Equal(rc), rdt, comm, req, true)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Allgather_init_c(
    s: *const c_void,
    sc: c_long,
    sdt: c_int,
    r: *mut c_void,
    rc: c_long,
    rdt: c_int,
    comm: c_int,
    _info: c_int,
    req: *mut c_int,
) -> c_int {
    allgather(s, sc, sdt, r, Layout::Equal(rc), rdt, comm, req, true)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Iallgatherv(
    s: *const c_void,
    sc: c_int,
    sdt: c_int,
    r: *mut c_void,
    rcs: *const c_int,
    ds: *const c_int,
    rdt: c_int,
    comm: c_int,
    req: *mut c_int,
) -> c_int {
    allgather(s, sc, sdt, r, Layout::Each(rcs, ds), rdt, comm, req, false)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Iallgatherv_c(
    s: *const c_void,
    sc: c_long,
    sdt: c_int,
    r: *mut c_void,
    rcs: *const c_long,
    ds: *const c_long,
    rdt: c_int,
    comm: c_int,
    req: *mut c_int,
) -> c_int {
    allgather(s, sc, sdt, r, Layout::Each(rcs, ds), rdt, comm, req, false)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Allgatherv_init(
    s: *const c_void,
    sc: c_int,
    sdt: c_int,
    r: *mut c_void,
    rcs: *const c_int,
    ds: *const c_int,
    rdt: c_int,
    comm: c_int,
    _info: c_int,
    req: *mut c_int,
) -> c_int {
    allgather(s, sc, sdt, r, Layout::Each(rcs, ds), rdt, comm, req, true)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Allgatherv_init_c(
    s: *const c_void,
    sc: c_long,
    sdt: c_int,
    r: *mut c_void,
    rcs: *const c_long,
    ds: *const c_long,
    rdt: c_int,
    comm: c_int,
    _info: c_int,
    req: *mut c_int,
) -> c_int {
    allgather(s, sc, sdt, r, Layout::Each(rcs, ds), rdt, comm, req, true)
}

// MPI_Ialltoallv's C arguments (a plain alltoall's as `Layout::Equal`) plus the persistence flag.
#[allow(clippy::too_many_arguments)]
unsafe fn alltoall<C: Count>(
    s: *const c_void,
    sl: Layout<C>,
    sdt: c_int,
    r: *mut c_void,
    rl: Layout<C>,
    rdt: c_int,
    comm: c_int,
    req: *mut c_int,
    p: bool,
) -> c_int {
    hand_out(req, comm, p, || {
        let cid = comm_id(comm)?;
        let size = size_of(cid)?;
        let send = if in_place(s) { None } else { Some((layout(sl, size)?, datatype(sdt)?)) };
        let ((rc, rd), rdt) = (layout(rl, size)?, datatype(rdt)?);
        let sb = send.as_ref().map(|((c, d), t)| VBuf { ptr: s as *mut u8, counts: c, displs: d, dt: t });
        rt()?.ialltoallv(sb, VBuf { ptr: r as *mut u8, counts: &rc, displs: &rd, dt: &rdt }, cid, p)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Ialltoall(
    s: *const c_void,
    sc: c_int,
    sdt: c_int,
    r: *mut c_void,
    rc: c_int,
    rdt: c_int,
    comm: c_int,
    req: *mut c_int,
) -> c_int {
    alltoall(s, Layout::Equal(sc), sdt, r, Layout::Equal(rc), rdt, comm, req, false)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Ialltoall_c(
    s: *const c_void,
    sc: c_long,
    sdt: c_int,
    r: *mut c_void,
    rc: c_long,
    rdt: c_int,
    comm: c_int,
    req: *mut c_int,
) -> c_int {
    alltoall(s, Layout::Equal(sc), sdt, r, Layout::Equal(rc), rdt, comm, req, false)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Alltoall_init(
    s: *const c_void,
    sc: c_int,
    sdt: c_int,
    r: *mut c_void,
    rc: c_int,
    rdt: c_int,
    comm: c_int,
    _info: c_int,
    req: *mut c_int,
) -> c_int {
    alltoall(s, Layout::Equal(sc), sdt, r, Layout::Equal(rc), rdt, comm, req, true)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Alltoall_init_c(
    s: *const c_void,
    sc: c_long,
    sdt: c_int,
    r: *mut c_void,
    rc: c_long,
    rdt: c_int,
    comm: c_int,
    _info: c_int,
    req: *mut c_int,
) -> c_int {
    alltoall(s, Layout::Equal(sc), sdt, r, Layout::Equal(rc), rdt, comm, req, true)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Ialltoallv(
    s: *const c_void,
    scs: *const c_int,
    sds: *const c_int,
    sdt: c_int,
    r: *mut c_void,
    rcs: *const c_int,
    rds: *const c_int,
    rdt: c_int,
    comm: c_int,
    req: *mut c_int,
) -> c_int {
    alltoall(s, Layout::Each(scs, sds), sdt, r, Layout::Each(rcs, rds), rdt, comm, req, false)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Ialltoallv_c(
    s: *const c_void,
    scs: *const c_long,
    sds: *const c_long,
    sdt: c_int,
    r: *mut c_void,
    rcs: *const c_long,
    rds: *const c_long,
    rdt: c_int,
    comm: c_int,
    req: *mut c_int,
) -> c_int {
    alltoall(s, Layout::Each(scs, sds), sdt, r, Layout::Each(rcs, rds), rdt, comm, req, false)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Alltoallv_init(
    s: *const c_void,
    scs: *const c_int,
    sds: *const c_int,
    sdt: c_int,
    r: *mut c_void,
    rcs: *const c_int,
    rds: *const c_int,
    rdt: c_int,
    comm: c_int,
    _info: c_int,
    req: *mut c_int,
) -> c_int {
    alltoall(s, Layout::Each(scs, sds), sdt, r, Layout::Each(rcs, rds), rdt, comm, req, true)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Alltoallv_init_c(
    s: *const c_void,
    scs: *const c_long,
    sds: *const c_long,
    sdt: c_int,
    r: *mut c_void,
    rcs: *const c_long,
    rds: *const c_long,
    rdt: c_int,
    comm: c_int,
    _info: c_int,
    req: *mut c_int,
) -> c_int {
    alltoall(s, Layout::Each(scs, sds), sdt, r, Layout::Each(rcs, rds), rdt, comm, req, true)
}

/// MPI_Alltoallw's per-peer buffers: counts, byte displacements, types.
unsafe fn wbuf<C: Count>(p: *const c_void, cs: *const C, ds: *const C, ts: *const c_int, size: usize) -> R<WBuf> {
    let dts = slice(ts, size, "datatypes")?.iter().map(|&t| datatype(t)).collect::<R<Vec<Datatype>>>()?;
    Ok(WBuf { addr: p as usize, counts: counts(cs, size, "counts")?, byte_displs: displs(ds, size)?, dts })
}

// MPI_Ialltoallw's C arguments plus the persistence flag.
#[allow(clippy::too_many_arguments)]
unsafe fn decode_w<C: Count>(
    s: *const c_void,
    scs: *const C,
    sds: *const C,
    sts: *const c_int,
    r: *mut c_void,
    rcs: *const C,
    rds: *const C,
    rts: *const c_int,
    comm: c_int,
) -> R<(CommId, Option<WBuf>, WBuf)> {
    let cid = comm_id(comm)?;
    let size = size_of(cid)?;
    let send = if in_place(s) { None } else { Some(wbuf(s, scs, sds, sts, size)?) };
    Ok((cid, send, wbuf(r, rcs, rds, rts, size)?))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Alltoallw(
    s: *const c_void,
    scs: *const c_int,
    sds: *const c_int,
    sts: *const c_int,
    r: *mut c_void,
    rcs: *const c_int,
    rds: *const c_int,
    rts: *const c_int,
    comm: c_int,
) -> c_int {
    alltoallw(s, scs, sds, sts, r, rcs, rds, rts, comm)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Alltoallw_c(
    s: *const c_void,
    scs: *const c_long,
    sds: *const c_long,
    sts: *const c_int,
    r: *mut c_void,
    rcs: *const c_long,
    rds: *const c_long,
    rts: *const c_int,
    comm: c_int,
) -> c_int {
    alltoallw(s, scs, sds, sts, r, rcs, rds, rts, comm)
}

// MPI_Alltoallw and MPI_Alltoallw_c.
#[allow(clippy::too_many_arguments)]
unsafe fn alltoallw<C: Count>(
    s: *const c_void,
    scs: *const C,
    sds: *const C,
    sts: *const c_int,
    r: *mut c_void,
    rcs: *const C,
    rds: *const C,
    rts: *const c_int,
    comm: c_int,
) -> c_int {
    call(comm, || {
        let (cid, send, recv) = decode_w(s, scs, sds, sts, r, rcs, rds, rts, comm)?;
        let rt = rt()?;
        let q = rt.ialltoallw(send, recv, cid, false)?;
        rt.wait(q).and_then(|c| c.status.error.map_or(Ok(()), Err))
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Ialltoallw(
    s: *const c_void,
    scs: *const c_int,
    sds: *const c_int,
    sts: *const c_int,
    r: *mut c_void,
    rcs: *const c_int,
    rds: *const c_int,
    rts: *const c_int,
    comm: c_int,
    req: *mut c_int,
) -> c_int {
    hand_out(req, comm, false, || {
        let (cid, send, recv) = decode_w(s, scs, sds, sts, r, rcs, rds, rts, comm)?;
        rt()?.ialltoallw(send, recv, cid, false)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Ialltoallw_c(
    s: *const c_void,
    scs: *const c_long,
    sds: *const c_long,
    sts: *const c_int,
    r: *mut c_void,
    rcs: *const c_long,
    rds: *const c_long,
    rts: *const c_int,
    comm: c_int,
    req: *mut c_int,
) -> c_int {
    hand_out(req, comm, false, || {
        let (cid, send, recv) = decode_w(s, scs, sds, sts, r, rcs, rds, rts, comm)?;
        rt()?.ialltoallw(send, recv, cid, false)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Alltoallw_init(
    s: *const c_void,
    scs: *const c_int,
    sds: *const c_int,
    sts: *const c_int,
    r: *mut c_void,
    rcs: *const c_int,
    rds: *const c_int,
    rts: *const c_int,
    comm: c_int,
    _info: c_int,
    req: *mut c_int,
) -> c_int {
    hand_out(req, comm, true, || {
        let (cid, send, recv) = decode_w(s, scs, sds, sts, r, rcs, rds, rts, comm)?;
        rt()?.ialltoallw(send, recv, cid, true)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Alltoallw_init_c(
    s: *const c_void,
    scs: *const c_long,
    sds: *const c_long,
    sts: *const c_int,
    r: *mut c_void,
    rcs: *const c_long,
    rds: *const c_long,
    rts: *const c_int,
    comm: c_int,
    _info: c_int,
    req: *mut c_int,
) -> c_int {
    hand_out(req, comm, true, || {
        let (cid, send, recv) = decode_w(s, scs, sds, sts, r, rcs, rds, rts, comm)?;
        rt()?.ialltoallw(send, recv, cid, true)
    })
}
