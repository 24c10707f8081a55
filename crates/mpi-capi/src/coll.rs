//! Collective operations (MPI-3.1 chapter 5) on intra-communicators:
//! MPI_IN_PLACE becomes `None` for the runtime, arguments that only matter
//! at the root are only decoded there, user operations get their datatype.

use std::ffi::c_void;
use std::os::raw::{c_int, c_long};

use wanmpi_runtime::{Buf, CommId, Datatype, VBuf};

use crate::args::{buffer, comm_id, count, datatype, slice, Count};
use crate::error::{call, R};
use crate::global::rt;
use crate::op::op_for;

/// MPI_IN_PLACE is `(void *)-1`.
pub(crate) fn in_place(p: *const c_void) -> bool {
    p as isize == -1
}

pub(crate) fn byte() -> Datatype {
    crate::predef::datatype(0x4c00_010d).cloned().unwrap_or_else(|| Datatype::basic(wanmpi_runtime::BasicType::Byte))
}

/// MPI_ROOT: the root on an inter-communicator.
const ROOT: c_int = -3;

/// Whether this rank is a rooted collective's root (whose receive or send
/// arguments are the only ones that count).
/// The root's own group of an inter-communicator collective (MPI_ROOT or
/// MPI_PROC_NULL): its send buffer (gather) or receive buffer (scatter)
/// is not significant, so it is not decoded.
pub(crate) fn inter_root_side(root: c_int) -> bool {
    root == ROOT || root == wanmpi_runtime::PROC_NULL
}

pub(crate) fn is_root(cid: CommId, root: c_int) -> R<bool> {
    let rt = rt()?;
    if rt.comm_is_inter(cid)? {
        return Ok(root == ROOT);
    }
    Ok(rt.comm_rank(cid)? as i64 == root as i64)
}

pub(crate) fn buf_arg<C: Count>(p: *const c_void, c: C, dt: c_int) -> R<(usize, Datatype)> {
    let n = count(c)?;
    let d = datatype(dt)?;
    buffer(p as *const u8, n, &d)?;
    Ok((n, d))
}

pub(crate) fn counts<C: Count>(p: *const C, n: usize, what: &str) -> R<Vec<usize>> {
    slice(p, n, what)?.iter().map(|&c| count(c)).collect()
}

pub(crate) fn displs<C: Count>(p: *const C, n: usize) -> R<Vec<isize>> {
    Ok(slice(p, n, "displs")?.iter().map(|&d| d.wide() as isize).collect())
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Barrier(comm: c_int) -> c_int {
    call(comm, || rt()?.barrier(comm_id(comm)?))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Bcast(b: *mut c_void, c: c_int, dt: c_int, root: c_int, comm: c_int) -> c_int {
    bcast(b, c, dt, root, comm)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Bcast_c(b: *mut c_void, c: c_long, dt: c_int, root: c_int, comm: c_int) -> c_int {
    bcast(b, c, dt, root, comm)
}

// MPI_Bcast and MPI_Bcast_c.
unsafe fn bcast<C: Count>(b: *mut c_void, c: C, dt: c_int, root: c_int, comm: c_int) -> c_int {
    call(comm, || {
        let (n, d) = buf_arg(b, c, dt)?;
        rt()?.bcast(Buf::new(b as *mut u8, n, &d), root, comm_id(comm)?)
    })
}

pub(crate) fn send_opt(s: *const c_void) -> Option<*const u8> {
    (!in_place(s)).then_some(s as *const u8)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Reduce(s: *const c_void, r: *mut c_void, c: c_int, dt: c_int, op: c_int, root: c_int, comm: c_int) -> c_int {
    reduce(s, r, c, dt, op, root, comm)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Reduce_c(s: *const c_void, r: *mut c_void, c: c_long, dt: c_int, op: c_int, root: c_int, comm: c_int) -> c_int {
    reduce(s, r, c, dt, op, root, comm)
}

// MPI_Reduce and MPI_Reduce_c.
unsafe fn reduce<C: Count>(s: *const c_void, r: *mut c_void, c: C, dt: c_int, op: c_int, root: c_int, comm: c_int) -> c_int {
    call(comm, || {
        // recvbuf matters only at the root.
        let (n, d) = (count(c)?, datatype(dt)?);
        let o = op_for(op, dt, &d)?;
        rt()?.reduce(send_opt(s), Buf::new(r as *mut u8, n, &d), &o, root, comm_id(comm)?)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Allreduce(s: *const c_void, r: *mut c_void, c: c_int, dt: c_int, op: c_int, comm: c_int) -> c_int {
    allreduce(s, r, c, dt, op, comm)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Allreduce_c(s: *const c_void, r: *mut c_void, c: c_long, dt: c_int, op: c_int, comm: c_int) -> c_int {
    allreduce(s, r, c, dt, op, comm)
}

// MPI_Allreduce and MPI_Allreduce_c.
unsafe fn allreduce<C: Count>(s: *const c_void, r: *mut c_void, c: C, dt: c_int, op: c_int, comm: c_int) -> c_int {
    call(comm, || {
        let (n, d) = buf_arg(r, c, dt)?;
        let o = op_for(op, dt, &d)?;
        rt()?.allreduce(send_opt(s), Buf::new(r as *mut u8, n, &d), &o, comm_id(comm)?)
    })
}

unsafe fn scan<C: Count>(s: *const c_void, r: *mut c_void, c: C, dt: c_int, op: c_int, comm: c_int, exclusive: bool) -> c_int {
    call(comm, || {
        let (n, d) = buf_arg(r, c, dt)?;
        let o = op_for(op, dt, &d)?;
        rt()?.scan(send_opt(s), Buf::new(r as *mut u8, n, &d), &o, comm_id(comm)?, exclusive)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Scan(s: *const c_void, r: *mut c_void, c: c_int, dt: c_int, op: c_int, comm: c_int) -> c_int {
    scan(s, r, c, dt, op, comm, false)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Scan_c(s: *const c_void, r: *mut c_void, c: c_long, dt: c_int, op: c_int, comm: c_int) -> c_int {
    scan(s, r, c, dt, op, comm, false)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Exscan(s: *const c_void, r: *mut c_void, c: c_int, dt: c_int, op: c_int, comm: c_int) -> c_int {
    scan(s, r, c, dt, op, comm, true)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Exscan_c(s: *const c_void, r: *mut c_void, c: c_long, dt: c_int, op: c_int, comm: c_int) -> c_int {
    scan(s, r, c, dt, op, comm, true)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Reduce_scatter(s: *const c_void, r: *mut c_void, rcounts: *const c_int, dt: c_int, op: c_int, comm: c_int) -> c_int {
    reduce_scatter(s, r, rcounts, dt, op, comm)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Reduce_scatter_c(s: *const c_void, r: *mut c_void, rcounts: *const c_long, dt: c_int, op: c_int, comm: c_int) -> c_int {
    reduce_scatter(s, r, rcounts, dt, op, comm)
}

// MPI_Reduce_scatter and MPI_Reduce_scatter_c.
unsafe fn reduce_scatter<C: Count>(s: *const c_void, r: *mut c_void, rcounts: *const C, dt: c_int, op: c_int, comm: c_int) -> c_int {
    call(comm, || {
        let cid = comm_id(comm)?;
        // One count per rank of this group (on an inter-communicator too).
        let size = rt()?.comm_size(cid)?;
        let rc = counts(rcounts, size, "recvcounts")?;
        let d = datatype(dt)?;
        let o = op_for(op, dt, &d)?;
        rt()?.reduce_scatter(send_opt(s), r as *mut u8, &rc, &d, &o, cid)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Reduce_scatter_block(s: *const c_void, r: *mut c_void, rcount: c_int, dt: c_int, op: c_int, comm: c_int) -> c_int {
    reduce_scatter_block(s, r, rcount, dt, op, comm)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Reduce_scatter_block_c(s: *const c_void, r: *mut c_void, rcount: c_long, dt: c_int, op: c_int, comm: c_int) -> c_int {
    reduce_scatter_block(s, r, rcount, dt, op, comm)
}

// MPI_Reduce_scatter_block and MPI_Reduce_scatter_block_c.
unsafe fn reduce_scatter_block<C: Count>(s: *const c_void, r: *mut c_void, rcount: C, dt: c_int, op: c_int, comm: c_int) -> c_int {
    call(comm, || {
        let cid = comm_id(comm)?;
        let size = rt()?.comm_size(cid)?;
        let rc = vec![count(rcount)?; size];
        let d = datatype(dt)?;
        let o = op_for(op, dt, &d)?;
        rt()?.reduce_scatter(send_opt(s), r as *mut u8, &rc, &d, &o, cid)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Gather(
    s: *const c_void,
    sc: c_int,
    sdt: c_int,
    r: *mut c_void,
    rc: c_int,
    rdt: c_int,
    root: c_int,
    comm: c_int,
) -> c_int {
    gather(s, sc, sdt, r, rc, rdt, root, comm)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Gather_c(
    s: *const c_void,
    sc: c_long,
    sdt: c_int,
    r: *mut c_void,
    rc: c_long,
    rdt: c_int,
    root: c_int,
    comm: c_int,
) -> c_int {
    gather(s, sc, sdt, r, rc, rdt, root, comm)
}

// MPI_Gather and MPI_Gather_c.
#[allow(clippy::too_many_arguments)]
unsafe fn gather<C: Count>(s: *const c_void, sc: C, sdt: c_int, r: *mut c_void, rc: C, rdt: c_int, root: c_int, comm: c_int) -> c_int {
    call(comm, || {
        let cid = comm_id(comm)?;
        let at_root = is_root(cid, root)?;
        let send = if in_place(s) || inter_root_side(root) { None } else { Some(buf_arg(s, sc, sdt)?) };
        let (rn, rd) = if at_root { buf_arg(r, rc, rdt)? } else { (0, byte()) };
        let sb = send.as_ref().map(|(n, d)| Buf::new(s as *mut u8, *n, d));
        rt()?.gather(sb, Buf::new(r as *mut u8, rn, &rd), root, cid)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Gatherv(
    s: *const c_void,
    sc: c_int,
    sdt: c_int,
    r: *mut c_void,
    rcs: *const c_int,
    ds: *const c_int,
    rdt: c_int,
    root: c_int,
    comm: c_int,
) -> c_int {
    gatherv(s, sc, sdt, r, rcs, ds, rdt, root, comm)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Gatherv_c(
    s: *const c_void,
    sc: c_long,
    sdt: c_int,
    r: *mut c_void,
    rcs: *const c_long,
    ds: *const c_long,
    rdt: c_int,
    root: c_int,
    comm: c_int,
) -> c_int {
    gatherv(s, sc, sdt, r, rcs, ds, rdt, root, comm)
}

// MPI_Gatherv and MPI_Gatherv_c.
#[allow(clippy::too_many_arguments)]
unsafe fn gatherv<C: Count>(
    s: *const c_void,
    sc: C,
    sdt: c_int,
    r: *mut c_void,
    rcs: *const C,
    ds: *const C,
    rdt: c_int,
    root: c_int,
    comm: c_int,
) -> c_int {
    call(comm, || {
        let cid = comm_id(comm)?;
        let size = rt()?.comm_peer_size(cid)?;
        let at_root = is_root(cid, root)?;
        let send = if in_place(s) || inter_root_side(root) { None } else { Some(buf_arg(s, sc, sdt)?) };
        let (rcv, dv, rd) = if at_root { (counts(rcs, size, "recvcounts")?, displs(ds, size)?, datatype(rdt)?) } else { (vec![], vec![], byte()) };
        let sb = send.as_ref().map(|(n, d)| Buf::new(s as *mut u8, *n, d));
        rt()?.gatherv(sb, VBuf { ptr: r as *mut u8, counts: &rcv, displs: &dv, dt: &rd }, root, cid)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Scatter(
    s: *const c_void,
    sc: c_int,
    sdt: c_int,
    r: *mut c_void,
    rc: c_int,
    rdt: c_int,
    root: c_int,
    comm: c_int,
) -> c_int {
    scatter(s, sc, sdt, r, rc, rdt, root, comm)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Scatter_c(
    s: *const c_void,
    sc: c_long,
    sdt: c_int,
    r: *mut c_void,
    rc: c_long,
    rdt: c_int,
    root: c_int,
    comm: c_int,
) -> c_int {
    scatter(s, sc, sdt, r, rc, rdt, root, comm)
}

// MPI_Scatter and MPI_Scatter_c.
#[allow(clippy::too_many_arguments)]
unsafe fn scatter<C: Count>(s: *const c_void, sc: C, sdt: c_int, r: *mut c_void, rc: C, rdt: c_int, root: c_int, comm: c_int) -> c_int {
    call(comm, || {
        let cid = comm_id(comm)?;
        let at_root = is_root(cid, root)?;
        let (sn, sd) = if at_root { buf_arg(s, sc, sdt)? } else { (0, byte()) };
        let recv = if in_place(r) || inter_root_side(root) { None } else { Some(buf_arg(r, rc, rdt)?) };
        let rb = recv.as_ref().map(|(n, d)| Buf::new(r as *mut u8, *n, d));
        rt()?.scatter(Buf::new(s as *mut u8, sn, &sd), rb, root, cid)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Scatterv(
    s: *const c_void,
    scs: *const c_int,
    ds: *const c_int,
    sdt: c_int,
    r: *mut c_void,
    rc: c_int,
    rdt: c_int,
    root: c_int,
    comm: c_int,
) -> c_int {
    scatterv(s, scs, ds, sdt, r, rc, rdt, root, comm)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Scatterv_c(
    s: *const c_void,
    scs: *const c_long,
    ds: *const c_long,
    sdt: c_int,
    r: *mut c_void,
    rc: c_long,
    rdt: c_int,
    root: c_int,
    comm: c_int,
) -> c_int {
    scatterv(s, scs, ds, sdt, r, rc, rdt, root, comm)
}

// MPI_Scatterv and MPI_Scatterv_c.
#[allow(clippy::too_many_arguments)]
unsafe fn scatterv<C: Count>(
    s: *const c_void,
    scs: *const C,
    ds: *const C,
    sdt: c_int,
    r: *mut c_void,
    rc: C,
    rdt: c_int,
    root: c_int,
    comm: c_int,
) -> c_int {
    call(comm, || {
        let cid = comm_id(comm)?;
        let size = rt()?.comm_peer_size(cid)?;
        let at_root = is_root(cid, root)?;
        let (scv, dv, sd) = if at_root { (counts(scs, size, "sendcounts")?, displs(ds, size)?, datatype(sdt)?) } else { (vec![], vec![], byte()) };
        let recv = if in_place(r) || inter_root_side(root) { None } else { Some(buf_arg(r, rc, rdt)?) };
        let rb = recv.as_ref().map(|(n, d)| Buf::new(r as *mut u8, *n, d));
        rt()?.scatterv(VBuf { ptr: s as *mut u8, counts: &scv, displs: &dv, dt: &sd }, rb, root, cid)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Allgather(s: *const c_void, sc: c_int, sdt: c_int, r: *mut c_void, rc: c_int, rdt: c_int, comm: c_int) -> c_int {
    allgather(s, sc, sdt, r, rc, rdt, comm)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Allgather_c(s: *const c_void, sc: c_long, sdt: c_int, r: *mut c_void, rc: c_long, rdt: c_int, comm: c_int) -> c_int {
    allgather(s, sc, sdt, r, rc, rdt, comm)
}

// MPI_Allgather and MPI_Allgather_c.
unsafe fn allgather<C: Count>(s: *const c_void, sc: C, sdt: c_int, r: *mut c_void, rc: C, rdt: c_int, comm: c_int) -> c_int {
    call(comm, || {
        let send = if in_place(s) { None } else { Some(buf_arg(s, sc, sdt)?) };
        let (rn, rd) = buf_arg(r, rc, rdt)?;
        let sb = send.as_ref().map(|(n, d)| Buf::new(s as *mut u8, *n, d));
        rt()?.allgather(sb, Buf::new(r as *mut u8, rn, &rd), comm_id(comm)?)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Allgatherv(
    s: *const c_void,
    sc: c_int,
    sdt: c_int,
    r: *mut c_void,
    rcs: *const c_int,
    ds: *const c_int,
    rdt: c_int,
    comm: c_int,
) -> c_int {
    allgatherv(s, sc, sdt, r, rcs, ds, rdt, comm)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Allgatherv_c(
    s: *const c_void,
    sc: c_long,
    sdt: c_int,
    r: *mut c_void,
    rcs: *const c_long,
    ds: *const c_long,
    rdt: c_int,
    comm: c_int,
) -> c_int {
    allgatherv(s, sc, sdt, r, rcs, ds, rdt, comm)
}

// MPI_Allgatherv and MPI_Allgatherv_c.
#[allow(clippy::too_many_arguments)]
unsafe fn allgatherv<C: Count>(s: *const c_void, sc: C, sdt: c_int, r: *mut c_void, rcs: *const C, ds: *const C, rdt: c_int, comm: c_int) -> c_int {
    call(comm, || {
        let cid = comm_id(comm)?;
        let size = rt()?.comm_peer_size(cid)?;
        let send = if in_place(s) { None } else { Some(buf_arg(s, sc, sdt)?) };
        let (rcv, dv, rd) = (counts(rcs, size, "recvcounts")?, displs(ds, size)?, datatype(rdt)?);
        let sb = send.as_ref().map(|(n, d)| Buf::new(s as *mut u8, *n, d));
        rt()?.allgatherv(sb, VBuf { ptr: r as *mut u8, counts: &rcv, displs: &dv, dt: &rd }, cid)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Alltoall(s: *const c_void, sc: c_int, sdt: c_int, r: *mut c_void, rc: c_int, rdt: c_int, comm: c_int) -> c_int {
    alltoall(s, sc, sdt, r, rc, rdt, comm)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Alltoall_c(s: *const c_void, sc: c_long, sdt: c_int, r: *mut c_void, rc: c_long, rdt: c_int, comm: c_int) -> c_int {
    alltoall(s, sc, sdt, r, rc, rdt, comm)
}

// MPI_Alltoall and MPI_Alltoall_c.
unsafe fn alltoall<C: Count>(s: *const c_void, sc: C, sdt: c_int, r: *mut c_void, rc: C, rdt: c_int, comm: c_int) -> c_int {
    call(comm, || {
        let send = if in_place(s) { None } else { Some(buf_arg(s, sc, sdt)?) };
        let (rn, rd) = buf_arg(r, rc, rdt)?;
        let sb = send.as_ref().map(|(n, d)| Buf::new(s as *mut u8, *n, d));
        rt()?.alltoall(sb, Buf::new(r as *mut u8, rn, &rd), comm_id(comm)?)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Alltoallv(
    s: *const c_void,
    scs: *const c_int,
    sds: *const c_int,
    sdt: c_int,
    r: *mut c_void,
    rcs: *const c_int,
    rds: *const c_int,
    rdt: c_int,
    comm: c_int,
) -> c_int {
    alltoallv(s, scs, sds, sdt, r, rcs, rds, rdt, comm)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Alltoallv_c(
    s: *const c_void,
    scs: *const c_long,
    sds: *const c_long,
    sdt: c_int,
    r: *mut c_void,
    rcs: *const c_long,
    rds: *const c_long,
    rdt: c_int,
    comm: c_int,
) -> c_int {
    alltoallv(s, scs, sds, sdt, r, rcs, rds, rdt, comm)
}

// MPI_Alltoallv and MPI_Alltoallv_c.
#[allow(clippy::too_many_arguments)]
unsafe fn alltoallv<C: Count>(
    s: *const c_void,
    scs: *const C,
    sds: *const C,
    sdt: c_int,
    r: *mut c_void,
    rcs: *const C,
    rds: *const C,
    rdt: c_int,
    comm: c_int,
) -> c_int {
    call(comm, || {
        let cid = comm_id(comm)?;
        let size = rt()?.comm_peer_size(cid)?;
        let send = if in_place(s) { None } else { Some((counts(scs, size, "sendcounts")?, displs(sds, size)?, datatype(sdt)?)) };
        let (rcv, rdv, rd) = (counts(rcs, size, "recvcounts")?, displs(rds, size)?, datatype(rdt)?);
        let sb = send.as_ref().map(|(c, d, t)| VBuf { ptr: s as *mut u8, counts: c, displs: d, dt: t });
        rt()?.alltoallv(sb, VBuf { ptr: r as *mut u8, counts: &rcv, displs: &rdv, dt: &rd }, cid)
    })
}
