//! Neighbourhood collectives (MPI-4.0 §8.6) over Cartesian, graph and
//! distributed-graph topologies: blocking, nonblocking and persistent
//! forms of allgather(v) and alltoall(v/w). The neighbour lists come from
//! the communicator's topology in the standard's order; the runtime runs
//! them as one-round schedules (`crates/runtime/src/icoll/neighbor.rs`).

use std::ffi::c_void;
use std::os::raw::{c_int, c_long};

use wanmpi_runtime::{equal_blocks, CommId, Datatype, ErrorClass, MpiError, Neighbors, Req, VBuf, WBuf};

use crate::args::{comm_id, count, datatype, out, slice, Count};
use crate::coll::{counts, displs};
use crate::error::{call, R};
use crate::global::{objs, rt};
use crate::graph::GraphTopo;
use crate::request::new_request;

/// This rank's neighbours on `comm`'s topology.
fn neighbours(comm: c_int) -> R<(CommId, Neighbors)> {
    let cid = comm_id(comm)?;
    let rank = rt()?.comm_rank(cid)?;
    let (graph, cart) = {
        let o = objs();
        (o.graphs.get(&comm).cloned(), o.carts.get(&comm).cloned())
    };
    let some = |v: &[c_int]| v.iter().map(|&r| usize::try_from(r).ok()).collect::<Vec<_>>();
    let n = match graph {
        Some(GraphTopo::Graph { index, edges }) => {
            let start = if rank == 0 { 0 } else { index[rank - 1] };
            let e: Vec<Option<usize>> = edges[start..index[rank]].iter().map(|&x| Some(x)).collect();
            Neighbors { sources: e.clone(), dests: e, cart: false }
        }
        Some(GraphTopo::Dist { sources, dests, .. }) => Neighbors { sources: some(&sources), dests: some(&dests), cart: false },
        None => {
            let cart = cart.ok_or_else(|| MpiError::new(ErrorClass::Topology, "the communicator has no topology"))?;
            let mut v = vec![];
            for d in 0..cart.dims.len() {
                let (minus, plus) = cart.shift(rank, d, 1)?;
                v.push(minus);
                v.push(plus);
            }
            Neighbors { sources: v.clone(), dests: v, cart: true }
        }
    };
    Ok((cid, n))
}

/// Blocking (`req == None`), nonblocking or persistent.
#[derive(Clone, Copy)]
enum Form {
    Blocking,
    Start(*mut c_int),
    Init(*mut c_int),
}

unsafe fn run(comm: c_int, form: Form, start: impl FnOnce(bool) -> R<Req>) -> c_int {
    call(comm, || match form {
        Form::Blocking => {
            let rt = rt()?;
            let c = rt.wait(start(false)?)?;
            c.status.error.map_or(Ok(()), Err)
        }
        Form::Start(req) | Form::Init(req) => {
            let o = out(req, "request")?;
            let persistent = matches!(form, Form::Init(_));
            *o = new_request(start(persistent)?, comm, persistent)?;
            Ok(())
        }
    })
}

/// The send or receive side of an allgather/alltoall(v): `n` blocks.
#[derive(Clone, Copy)]
enum Side<C: Count> {
    /// The same `count` elements to every neighbour (allgather's send).
    Same(C),
    Equal(C),
    Each(*const C, *const C),
}

fn side<C: Count>(s: Side<C>, n: usize) -> R<(Vec<usize>, Vec<isize>)> {
    Ok(match s {
        Side::Same(c) => (vec![count(c)?; n], vec![0; n]),
        Side::Equal(c) => equal_blocks(count(c)?, n),
        Side::Each(c, d) => (counts(c, n, "counts")?, displs(d, n)?),
    })
}

// The C arguments of an allgather(v)/alltoall(v) neighbourhood call plus its form.
#[allow(clippy::too_many_arguments)]
unsafe fn blocks<C: Count>(s: *const c_void, ss: Side<C>, sdt: c_int, r: *mut c_void, rs: Side<C>, rdt: c_int, comm: c_int, form: Form) -> c_int {
    run(comm, form, |persistent| {
        let (cid, n) = neighbours(comm)?;
        let (sc, sd) = side(ss, n.dests.len())?;
        let (rc, rd) = side(rs, n.sources.len())?;
        let (sdt, rdt) = (datatype(sdt)?, datatype(rdt)?);
        let send = VBuf { ptr: s as *mut u8, counts: &sc, displs: &sd, dt: &sdt };
        let recv = VBuf { ptr: r as *mut u8, counts: &rc, displs: &rd, dt: &rdt };
        rt()?.ineighbor_alltoallv(n, send, recv, cid, persistent)
    })
}

unsafe fn wbuf<C: Count>(p: *const c_void, cs: *const C, ds: *const c_long, ts: *const c_int, n: usize) -> R<WBuf> {
    let dts = slice(ts, n, "datatypes")?.iter().map(|&t| datatype(t)).collect::<R<Vec<Datatype>>>()?;
    let byte_displs = slice(ds, n, "displacements")?.iter().map(|&d| d as isize).collect();
    Ok(WBuf { addr: p as usize, counts: counts(cs, n, "counts")?, byte_displs, dts })
}

// MPI_Neighbor_alltoallw's C arguments plus its form.
#[allow(clippy::too_many_arguments)]
unsafe fn alltoallw<C: Count>(
    s: *const c_void,
    scs: *const C,
    sds: *const c_long,
    sts: *const c_int,
    r: *mut c_void,
    rcs: *const C,
    rds: *const c_long,
    rts: *const c_int,
    comm: c_int,
    form: Form,
) -> c_int {
    run(comm, form, |persistent| {
        let (cid, n) = neighbours(comm)?;
        let send = wbuf(s, scs, sds, sts, n.dests.len())?;
        let recv = wbuf(r, rcs, rds, rts, n.sources.len())?;
        rt()?.ineighbor_alltoallw(n, send, recv, cid, persistent)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Neighbor_allgather(
    s: *const c_void,
    sc: c_int,
    sdt: c_int,
    r: *mut c_void,
    rc: c_int,
    rdt: c_int,
    comm: c_int,
) -> c_int {
    blocks(s, Side::Same(sc), sdt, r, Side::Equal(rc), rdt, comm, Form::Blocking)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Neighbor_allgather_c(
    s: *const c_void,
    sc: c_long,
    sdt: c_int,
    r: *mut c_void,
    rc: c_long,
    rdt: c_int,
    comm: c_int,
) -> c_int {
    blocks(s, Side::Same(sc), sdt, r, Side::Equal(rc), rdt, comm, Form::Blocking)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Ineighbor_allgather(
    s: *const c_void,
    sc: c_int,
    sdt: c_int,
    r: *mut c_void,
    rc: c_int,
    rdt: c_int,
    comm: c_int,
    req: *mut c_int,
) -> c_int {
    blocks(s, Side::Same(sc), sdt, r, Side::Equal(rc), rdt, comm, Form::Start(req))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Ineighbor_allgather_c(
    s: *const c_void,
    sc: c_long,
    sdt: c_int,
    r: *mut c_void,
    rc: c_long,
    rdt: c_int,
    comm: c_int,
    req: *mut c_int,
) -> c_int {
    blocks(s, Side::Same(sc), sdt, r, Side::Equal(rc), rdt, comm, Form::Start(req))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Neighbor_allgather_init(
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
    blocks(s, Side::Same(sc), sdt, r, Side::Equal(rc), rdt, comm, Form::Init(req))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Neighbor_allgather_init_c(
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
    blocks(s, Side::Same(sc), sdt, r, Side::Equal(rc), rdt, comm, Form::Init(req))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Neighbor_allgatherv(
    s: *const c_void,
    sc: c_int,
    sdt: c_int,
    r: *mut c_void,
    rcs: *const c_int,
    ds: *const c_int,
    rdt: c_int,
    comm: c_int,
) -> c_int {
    blocks(s, Side::Same(sc), sdt, r, Side::Each(rcs, ds), rdt, comm, Form::Blocking)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Ineighbor_allgatherv(
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
    blocks(s, Side::Same(sc), sdt, r, Side::Each(rcs, ds), rdt, comm, Form::Start(req))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Neighbor_allgatherv_init(
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
    blocks(s, Side::Same(sc), sdt, r, Side::Each(rcs, ds), rdt, comm, Form::Init(req))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Neighbor_alltoall(
    s: *const c_void,
    sc: c_int,
    sdt: c_int,
    r: *mut c_void,
    rc: c_int,
    rdt: c_int,
    comm: c_int,
) -> c_int {
    blocks(s, Side::Equal(sc), sdt, r, Side::Equal(rc), rdt, comm, Form::Blocking)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Neighbor_alltoall_c(
    s: *const c_void,
    sc: c_long,
    sdt: c_int,
    r: *mut c_void,
    rc: c_long,
    rdt: c_int,
    comm: c_int,
) -> c_int {
    blocks(s, Side::Equal(sc), sdt, r, Side::Equal(rc), rdt, comm, Form::Blocking)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Ineighbor_alltoall(
    s: *const c_void,
    sc: c_int,
    sdt: c_int,
    r: *mut c_void,
    rc: c_int,
    rdt: c_int,
    comm: c_int,
    req: *mut c_int,
) -> c_int {
    blocks(s, Side::Equal(sc), sdt, r, Side::Equal(rc), rdt, comm, Form::Start(req))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Ineighbor_alltoall_c(
    s: *const c_void,
    sc: c_long,
    sdt: c_int,
    r: *mut c_void,
    rc: c_long,
    rdt: c_int,
    comm: c_int,
    req: *mut c_int,
) -> c_int {
    blocks(s, Side::Equal(sc), sdt, r, Side::Equal(rc), rdt, comm, Form::Start(req))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Neighbor_alltoall_init(
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
    blocks(s, Side::Equal(sc), sdt, r, Side::Equal(rc), rdt, comm, Form::Init(req))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Neighbor_alltoall_init_c(
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
    blocks(s, Side::Equal(sc), sdt, r, Side::Equal(rc), rdt, comm, Form::Init(req))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Neighbor_alltoallv(
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
    blocks(s, Side::Each(scs, sds), sdt, r, Side::Each(rcs, rds), rdt, comm, Form::Blocking)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Ineighbor_alltoallv(
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
    blocks(s, Side::Each(scs, sds), sdt, r, Side::Each(rcs, rds), rdt, comm, Form::Start(req))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Neighbor_alltoallv_init(
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
    blocks(s, Side::Each(scs, sds), sdt, r, Side::Each(rcs, rds), rdt, comm, Form::Init(req))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Neighbor_alltoallw(
    s: *const c_void,
    scs: *const c_int,
    sds: *const c_long,
    sts: *const c_int,
    r: *mut c_void,
    rcs: *const c_int,
    rds: *const c_long,
    rts: *const c_int,
    comm: c_int,
) -> c_int {
    alltoallw(s, scs, sds, sts, r, rcs, rds, rts, comm, Form::Blocking)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Ineighbor_alltoallw(
    s: *const c_void,
    scs: *const c_int,
    sds: *const c_long,
    sts: *const c_int,
    r: *mut c_void,
    rcs: *const c_int,
    rds: *const c_long,
    rts: *const c_int,
    comm: c_int,
    req: *mut c_int,
) -> c_int {
    alltoallw(s, scs, sds, sts, r, rcs, rds, rts, comm, Form::Start(req))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Neighbor_alltoallw_init(
    s: *const c_void,
    scs: *const c_int,
    sds: *const c_long,
    sts: *const c_int,
    r: *mut c_void,
    rcs: *const c_int,
    rds: *const c_long,
    rts: *const c_int,
    comm: c_int,
    _info: c_int,
    req: *mut c_int,
) -> c_int {
    alltoallw(s, scs, sds, sts, r, rcs, rds, rts, comm, Form::Init(req))
}

// The large-count (`_c`) forms: the same bodies, MPI_Count counts and MPI_Aint displacements.

#[no_mangle]
pub unsafe extern "C" fn PMPI_Neighbor_allgatherv_c(
    s: *const c_void,
    sc: c_long,
    sdt: c_int,
    r: *mut c_void,
    rcs: *const c_long,
    ds: *const c_long,
    rdt: c_int,
    comm: c_int,
) -> c_int {
    blocks(s, Side::Same(sc), sdt, r, Side::Each(rcs, ds), rdt, comm, Form::Blocking)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Ineighbor_allgatherv_c(
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
    blocks(s, Side::Same(sc), sdt, r, Side::Each(rcs, ds), rdt, comm, Form::Start(req))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Neighbor_allgatherv_init_c(
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
    blocks(s, Side::Same(sc), sdt, r, Side::Each(rcs, ds), rdt, comm, Form::Init(req))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Neighbor_alltoallv_c(
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
    blocks(s, Side::Each(scs, sds), sdt, r, Side::Each(rcs, rds), rdt, comm, Form::Blocking)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Ineighbor_alltoallv_c(
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
    blocks(s, Side::Each(scs, sds), sdt, r, Side::Each(rcs, rds), rdt, comm, Form::Start(req))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Neighbor_alltoallv_init_c(
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
    blocks(s, Side::Each(scs, sds), sdt, r, Side::Each(rcs, rds), rdt, comm, Form::Init(req))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Neighbor_alltoallw_c(
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
    alltoallw(s, scs, sds, sts, r, rcs, rds, rts, comm, Form::Blocking)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Ineighbor_alltoallw_c(
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
    alltoallw(s, scs, sds, sts, r, rcs, rds, rts, comm, Form::Start(req))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Neighbor_alltoallw_init_c(
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
    alltoallw(s, scs, sds, sts, r, rcs, rds, rts, comm, Form::Init(req))
}
