//! Neighbourhood collectives (MPI-4.0 §8.6) over Cartesian, graph and
//! distributed-graph topologies: blocking, nonblocking and persistent
//! forms of allgather(v) and alltoall(v/w). The neighbour lists come from
//! the communicator's topology in the standard's order; the runtime runs
//! them as one-round schedules (`crates/runtime/src/icoll/neighbor.rs`).

use std::ffi::c_void;
use std::os::raw::{c_int, c_long};

use wanmpi_runtime::{equal_blocks, CommId, Datatype, ErrorClass, MpiError, Neighbors, Req, VBuf, WBuf};

use crate::args::{comm_id, count, datatype, out, slice};
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
enum Side {
    /// The same `count` elements to every neighbour (allgather's send).
    Same(c_int),
    Equal(c_int),
    Each(*const c_int, *const c_int),
}

fn side(s: Side, n: usize) -> R<(Vec<usize>, Vec<isize>)> {
    Ok(match s {
        Side::Same(c) => (vec![count(c)?; n], vec![0; n]),
        Side::Equal(c) => equal_blocks(count(c)?, n),
        Side::Each(c, d) => (counts(c, n, "counts")?, displs(d, n)?),
    })
}

// The C arguments of an allgather(v)/alltoall(v) neighbourhood call plus its form.
#[allow(clippy::too_many_arguments)]
unsafe fn blocks(s: *const c_void, ss: Side, sdt: c_int, r: *mut c_void, rs: Side, rdt: c_int, comm: c_int, form: Form) -> c_int {
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

unsafe fn wbuf(p: *const c_void, cs: *const c_int, ds: *const c_long, ts: *const c_int, n: usize) -> R<WBuf> {
    let dts = slice(ts, n, "datatypes")?.iter().map(|&t| datatype(t)).collect::<R<Vec<Datatype>>>()?;
    let byte_displs = slice(ds, n, "displacements")?.iter().map(|&d| d as isize).collect();
    Ok(WBuf { addr: p as usize, counts: counts(cs, n, "counts")?, byte_displs, dts })
}

// MPI_Neighbor_alltoallw's C arguments plus its form.
#[allow(clippy::too_many_arguments)]
unsafe fn alltoallw(
    s: *const c_void,
    scs: *const c_int,
    sds: *const c_long,
    sts: *const c_int,
    r: *mut c_void,
    rcs: *const c_int,
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

// The large-count (`_c`) forms whose count arrays have one entry per
// neighbour: the arrays are narrowed to ints (MPI_ERR_COUNT when a value
// does not fit) and the int form runs. Their length is the in- or
// out-degree, which only the topology knows, so they are written here
// rather than generated.

/// (in-degree, out-degree) of this rank on `comm`'s topology (0, 0 when it has none:
/// the int form then reports the error).
fn degrees(comm: c_int) -> (c_int, c_int) {
    neighbours(comm).map_or((0, 0), |(_, n)| (n.sources.len() as c_int, n.dests.len() as c_int))
}

/// `len` values of a large-count array as ints, or MPI_ERR_COUNT naming the call.
unsafe fn ints(p: *const c_long, len: c_int, call: &str, what: &str) -> Result<Vec<c_int>, c_int> {
    crate::large_count::narrow_array(p, len).ok_or_else(|| crate::unsupported::too_large(call, what))
}

/// A large-count scalar as an int, or MPI_ERR_COUNT naming the call.
fn int(v: c_long, call: &str, what: &str) -> Result<c_int, c_int> {
    crate::unsupported::narrow(v).ok_or_else(|| crate::unsupported::too_large(call, what))
}

/// Runs `f` on the narrowed values, or returns the narrowing's error code.
fn narrowed(r: Result<c_int, c_int>) -> c_int {
    r.unwrap_or_else(|code| code)
}

// MPI_Neighbor_allgatherv_c's C arguments plus its form.
#[allow(clippy::too_many_arguments)]
unsafe fn allgatherv_c(
    s: *const c_void,
    sc: c_long,
    sdt: c_int,
    r: *mut c_void,
    rcs: *const c_long,
    ds: *const c_long,
    rdt: c_int,
    comm: c_int,
    form: Form,
    call: &str,
) -> c_int {
    narrowed((|| {
        let (indeg, _) = degrees(comm);
        let (sc, rcs, ds) = (int(sc, call, "sendcount")?, ints(rcs, indeg, call, "recvcounts")?, ints(ds, indeg, call, "displs")?);
        Ok(blocks(s, Side::Same(sc), sdt, r, Side::Each(rcs.as_ptr(), ds.as_ptr()), rdt, comm, form))
    })())
}

// MPI_Neighbor_alltoallv_c's C arguments plus its form.
#[allow(clippy::too_many_arguments)]
unsafe fn alltoallv_c(
    s: *const c_void,
    scs: *const c_long,
    sds: *const c_long,
    sdt: c_int,
    r: *mut c_void,
    rcs: *const c_long,
    rds: *const c_long,
    rdt: c_int,
    comm: c_int,
    form: Form,
    call: &str,
) -> c_int {
    narrowed((|| {
        let (indeg, outdeg) = degrees(comm);
        let (scs, sds) = (ints(scs, outdeg, call, "sendcounts")?, ints(sds, outdeg, call, "sdispls")?);
        let (rcs, rds) = (ints(rcs, indeg, call, "recvcounts")?, ints(rds, indeg, call, "rdispls")?);
        let (ss, rs) = (Side::Each(scs.as_ptr(), sds.as_ptr()), Side::Each(rcs.as_ptr(), rds.as_ptr()));
        Ok(blocks(s, ss, sdt, r, rs, rdt, comm, form))
    })())
}

// MPI_Neighbor_alltoallw_c's C arguments plus its form.
#[allow(clippy::too_many_arguments)]
unsafe fn alltoallw_c(
    s: *const c_void,
    scs: *const c_long,
    sds: *const c_long,
    sts: *const c_int,
    r: *mut c_void,
    rcs: *const c_long,
    rds: *const c_long,
    rts: *const c_int,
    comm: c_int,
    form: Form,
    call: &str,
) -> c_int {
    narrowed((|| {
        let (indeg, outdeg) = degrees(comm);
        let (scs, rcs) = (ints(scs, outdeg, call, "sendcounts")?, ints(rcs, indeg, call, "recvcounts")?);
        Ok(alltoallw(s, scs.as_ptr(), sds, sts, r, rcs.as_ptr(), rds, rts, comm, form))
    })())
}

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
    allgatherv_c(s, sc, sdt, r, rcs, ds, rdt, comm, Form::Blocking, "MPI_Neighbor_allgatherv_c")
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
    allgatherv_c(s, sc, sdt, r, rcs, ds, rdt, comm, Form::Start(req), "MPI_Ineighbor_allgatherv_c")
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
    allgatherv_c(s, sc, sdt, r, rcs, ds, rdt, comm, Form::Init(req), "MPI_Neighbor_allgatherv_init_c")
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
    alltoallv_c(s, scs, sds, sdt, r, rcs, rds, rdt, comm, Form::Blocking, "MPI_Neighbor_alltoallv_c")
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
    alltoallv_c(s, scs, sds, sdt, r, rcs, rds, rdt, comm, Form::Start(req), "MPI_Ineighbor_alltoallv_c")
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
    alltoallv_c(s, scs, sds, sdt, r, rcs, rds, rdt, comm, Form::Init(req), "MPI_Neighbor_alltoallv_init_c")
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
    alltoallw_c(s, scs, sds, sts, r, rcs, rds, rts, comm, Form::Blocking, "MPI_Neighbor_alltoallw_c")
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
    alltoallw_c(s, scs, sds, sts, r, rcs, rds, rts, comm, Form::Start(req), "MPI_Ineighbor_alltoallw_c")
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
    alltoallw_c(s, scs, sds, sts, r, rcs, rds, rts, comm, Form::Init(req), "MPI_Neighbor_alltoallw_init_c")
}
