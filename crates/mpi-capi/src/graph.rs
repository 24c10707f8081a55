//! Graph and distributed-graph topologies (MPI-4.0 §8.5.3-8.5.5) and their
//! queries, plus MPI_Cart_map/MPI_Graph_map (§8.5.8). Like Cartesian grids
//! (`topo.rs`), the topology of each communicator is kept here by handle;
//! ranks are never reordered. Neighbourhood collectives over these
//! topologies are not here (issue 11, item 3).

use std::os::raw::c_int;

use wanmpi_runtime::{ErrorClass, MpiError};

use crate::args::{comm_handle, comm_id, count, int, out, slice, slice_mut};
use crate::error::{call, fail, R};
use crate::global::{objs, rt};
use crate::predef::{COMM_NULL, UNDEFINED};

pub const GRAPH: c_int = 1;
pub const DIST_GRAPH: c_int = 3;
const INT: c_int = 0x4c00_0405;

/// A graph or distributed-graph topology.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GraphTopo {
    /// MPI_Graph_create's arrays: `index[i]` is the end of node i's edges.
    Graph { index: Vec<usize>, edges: Vec<usize> },
    /// This process's in- and out-neighbours, with weights when given.
    Dist { sources: Vec<c_int>, source_weights: Vec<c_int>, dests: Vec<c_int>, dest_weights: Vec<c_int>, weighted: bool },
}

fn topo(comm: c_int) -> R<GraphTopo> {
    comm_id(comm)?;
    objs().graphs.get(&comm).cloned().ok_or_else(|| MpiError::new(ErrorClass::Topology, "the communicator has no graph topology"))
}

fn graph(comm: c_int) -> R<(Vec<usize>, Vec<usize>)> {
    match topo(comm)? {
        GraphTopo::Graph { index, edges } => Ok((index, edges)),
        GraphTopo::Dist { .. } => fail(ErrorClass::Topology, "the communicator has a distributed-graph topology, not a graph one"),
    }
}

fn unweighted(p: *const c_int) -> bool {
    std::ptr::eq(p, crate::topo::MPI_UNWEIGHTED.0)
}

fn weights(p: *const c_int, n: usize, what: &str) -> R<Vec<c_int>> {
    if unweighted(p) || std::ptr::eq(p, crate::topo::MPI_WEIGHTS_EMPTY.0) || n == 0 {
        return Ok(vec![]);
    }
    Ok(slice(p, n, what)?.to_vec())
}

fn ranks(p: *const c_int, n: usize, size: usize, what: &str) -> R<Vec<c_int>> {
    let v = slice(p, n, what)?.to_vec();
    if let Some(r) = v.iter().find(|&&r| usize::try_from(r).map_or(true, |r| r >= size)) {
        return fail(ErrorClass::Rank, format!("{what}: rank {r} outside a communicator of {size}"));
    }
    Ok(v)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Graph_create(
    comm: c_int,
    nnodes: c_int,
    index: *const c_int,
    edges: *const c_int,
    _reorder: c_int,
    newcomm: *mut c_int,
) -> c_int {
    call(comm, || {
        let o = out(newcomm, "comm_graph")?;
        let n = count(nnodes)?;
        let cid = comm_id(comm)?;
        let r = rt()?;
        let (size, rank) = (r.comm_size(cid)?, r.comm_rank(cid)?);
        if n > size {
            return fail(ErrorClass::Arg, format!("a graph of {n} nodes on a communicator of {size}"));
        }
        let index: Vec<usize> = slice(index, n, "index")?.iter().map(|&x| count(x)).collect::<R<_>>()?;
        if index.windows(2).any(|w| w[1] < w[0]) {
            return fail(ErrorClass::Arg, "index must not decrease");
        }
        let ne = index.last().copied().unwrap_or(0);
        let edges: Vec<usize> = ranks(edges, ne, n, "edges")?.iter().map(|&e| e as usize).collect();
        let color = if rank < n { 0 } else { UNDEFINED };
        *o = match r.comm_split(cid, color, rank as c_int)? {
            Some(id) => {
                let h = comm_handle(id);
                objs().graphs.insert(h, GraphTopo::Graph { index, edges });
                h
            }
            None => COMM_NULL,
        };
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Graphdims_get(comm: c_int, nnodes: *mut c_int, nedges: *mut c_int) -> c_int {
    call(comm, || {
        let (index, edges) = graph(comm)?;
        *out(nnodes, "nnodes")? = int(index.len());
        *out(nedges, "nedges")? = int(edges.len());
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Graph_get(comm: c_int, maxindex: c_int, maxedges: c_int, index: *mut c_int, edges: *mut c_int) -> c_int {
    call(comm, || {
        let (ix, es) = graph(comm)?;
        let ni = count(maxindex)?.min(ix.len());
        let ne = count(maxedges)?.min(es.len());
        for (o, v) in slice_mut(index, ni, "index")?.iter_mut().zip(&ix) {
            *o = int(*v);
        }
        for (o, v) in slice_mut(edges, ne, "edges")?.iter_mut().zip(&es) {
            *o = int(*v);
        }
        Ok(())
    })
}

fn graph_neighbors(comm: c_int, rank: c_int) -> R<Vec<usize>> {
    let (index, edges) = graph(comm)?;
    let r = usize::try_from(rank)
        .ok()
        .filter(|&r| r < index.len())
        .ok_or_else(|| MpiError::new(ErrorClass::Rank, format!("rank {rank} is not a node")))?;
    let start = if r == 0 { 0 } else { index[r - 1] };
    Ok(edges[start..index[r]].to_vec())
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Graph_neighbors_count(comm: c_int, rank: c_int, n: *mut c_int) -> c_int {
    call(comm, || {
        *out(n, "nneighbors")? = int(graph_neighbors(comm, rank)?.len());
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Graph_neighbors(comm: c_int, rank: c_int, max: c_int, neighbors: *mut c_int) -> c_int {
    call(comm, || {
        let ns = graph_neighbors(comm, rank)?;
        let n = count(max)?.min(ns.len());
        for (o, v) in slice_mut(neighbors, n, "neighbors")?.iter_mut().zip(&ns) {
            *o = int(*v);
        }
        Ok(())
    })
}

/// MPI_Graph_map and MPI_Cart_map without reordering: the first `nodes`
/// ranks keep their rank, the others get MPI_UNDEFINED.
fn map(comm: c_int, nodes: usize, newrank: *mut c_int) -> R<()> {
    let cid = comm_id(comm)?;
    let (size, rank) = (rt()?.comm_size(cid)?, rt()?.comm_rank(cid)?);
    if nodes > size {
        return fail(ErrorClass::Arg, format!("{nodes} nodes on a communicator of {size}"));
    }
    *out(newrank, "newrank")? = if rank < nodes { int(rank) } else { UNDEFINED };
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Graph_map(comm: c_int, nnodes: c_int, _index: *const c_int, _edges: *const c_int, newrank: *mut c_int) -> c_int {
    call(comm, || map(comm, count(nnodes)?, newrank))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Cart_map(comm: c_int, ndims: c_int, dims: *const c_int, _periods: *const c_int, newrank: *mut c_int) -> c_int {
    call(comm, || {
        let d = slice(dims, count(ndims)?, "dims")?;
        let nodes =
            d.iter().try_fold(1usize, |acc, &x| acc.checked_mul(count(x)?).ok_or_else(|| MpiError::new(ErrorClass::Dims, "grid too large")))?;
        map(comm, nodes, newrank)
    })
}

/// Duplicates `comm` (collectively) with a distributed-graph topology.
fn dist_comm(comm: c_int, t: GraphTopo) -> R<c_int> {
    let id = rt()?.comm_dup(comm_id(comm)?)?;
    let h = crate::comm::adopt(comm, id, false)?;
    objs().graphs.insert(h, t);
    Ok(h)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Dist_graph_create_adjacent(
    comm: c_int,
    indegree: c_int,
    sources: *const c_int,
    sourceweights: *const c_int,
    outdegree: c_int,
    destinations: *const c_int,
    destweights: *const c_int,
    _info: c_int,
    _reorder: c_int,
    newcomm: *mut c_int,
) -> c_int {
    call(comm, || {
        let o = out(newcomm, "comm_dist_graph")?;
        let size = rt()?.comm_size(comm_id(comm)?)?;
        let (ni, no) = (count(indegree)?, count(outdegree)?);
        let weighted = !unweighted(sourceweights) && !unweighted(destweights);
        let t = GraphTopo::Dist {
            sources: ranks(sources, ni, size, "sources")?,
            source_weights: if weighted { weights(sourceweights, ni, "sourceweights")? } else { vec![] },
            dests: ranks(destinations, no, size, "destinations")?,
            dest_weights: if weighted { weights(destweights, no, "destweights")? } else { vec![] },
            weighted,
        };
        *o = dist_comm(comm, t)?;
        Ok(())
    })
}

/// Runs a C entry point inside another: its code as an error.
fn check(rc: c_int, what: &str) -> R<()> {
    if rc == 0 {
        Ok(())
    } else {
        fail(crate::error::class_from_int(rc).unwrap_or(ErrorClass::Intern), format!("{what} failed inside MPI_Dist_graph_create"))
    }
}

/// MPI_Dist_graph_create: each process names edges of any sources; every
/// process gathers all edges (source, destination, weight) and keeps those
/// that start or end at it, in the order of the gathered list.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Dist_graph_create(
    comm: c_int,
    n: c_int,
    sources: *const c_int,
    degrees: *const c_int,
    destinations: *const c_int,
    weights_in: *const c_int,
    _info: c_int,
    _reorder: c_int,
    newcomm: *mut c_int,
) -> c_int {
    call(comm, || {
        let o = out(newcomm, "comm_dist_graph")?;
        let cid = comm_id(comm)?;
        let (size, rank) = (rt()?.comm_size(cid)?, rt()?.comm_rank(cid)?);
        let n = count(n)?;
        let srcs = ranks(sources, n, size, "sources")?;
        let degs: Vec<usize> = slice(degrees, n, "degrees")?.iter().map(|&d| count(d)).collect::<R<_>>()?;
        let ne: usize = degs.iter().sum();
        let dsts = ranks(destinations, ne, size, "destinations")?;
        let is_unweighted = unweighted(weights_in);
        let ws = if is_unweighted { vec![1; ne] } else { weights(weights_in, ne, "weights")? };
        // (source, destination, weight) triples, as ints.
        let mut mine = Vec::with_capacity(3 * ne);
        let mut k = 0;
        for (s, d) in srcs.iter().zip(&degs) {
            for _ in 0..*d {
                mine.extend_from_slice(&[*s, dsts[k], ws.get(k).copied().unwrap_or(1)]);
                k += 1;
            }
        }
        let mut counts = vec![0 as c_int; size];
        let my_count = int(mine.len());
        check(crate::coll::PMPI_Allgather(&my_count as *const c_int as _, 1, INT, counts.as_mut_ptr() as _, 1, INT, comm), "MPI_Allgather")?;
        let mut displs = vec![0 as c_int; size];
        for i in 1..size {
            displs[i] = displs[i - 1] + counts[i - 1];
        }
        let total = (displs[size - 1] + counts[size - 1]) as usize;
        let mut all = vec![0 as c_int; total];
        check(
            crate::coll::PMPI_Allgatherv(mine.as_ptr() as _, my_count, INT, all.as_mut_ptr() as _, counts.as_ptr(), displs.as_ptr(), INT, comm),
            "MPI_Allgatherv",
        )?;
        // Every process must agree whether the graph is weighted.
        let mut any_unweighted = 0 as c_int;
        let mine_unweighted = c_int::from(is_unweighted);
        check(
            crate::coll::PMPI_Allreduce(&mine_unweighted as *const c_int as _, &mut any_unweighted as *mut c_int as _, 1, INT, 0x5800_0007, comm),
            "MPI_Allreduce",
        )?;
        let me = rank as c_int;
        let (mut sources, mut source_weights, mut dests, mut dest_weights) = (vec![], vec![], vec![], vec![]);
        for e in all.chunks_exact(3) {
            if e[0] == me {
                dests.push(e[1]);
                dest_weights.push(e[2]);
            }
            if e[1] == me {
                sources.push(e[0]);
                source_weights.push(e[2]);
            }
        }
        let weighted = any_unweighted == 0;
        if !weighted {
            source_weights.clear();
            dest_weights.clear();
        }
        *o = dist_comm(comm, GraphTopo::Dist { sources, source_weights, dests, dest_weights, weighted })?;
        Ok(())
    })
}

/// A distributed-graph topology's neighbours and weights.
struct Dist {
    sources: Vec<c_int>,
    source_weights: Vec<c_int>,
    dests: Vec<c_int>,
    dest_weights: Vec<c_int>,
    weighted: bool,
}

fn dist(comm: c_int) -> R<Dist> {
    match topo(comm)? {
        GraphTopo::Dist { sources, source_weights, dests, dest_weights, weighted } => {
            Ok(Dist { sources, source_weights, dests, dest_weights, weighted })
        }
        GraphTopo::Graph { .. } => fail(ErrorClass::Topology, "the communicator has a graph topology, not a distributed-graph one"),
    }
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Dist_graph_neighbors_count(comm: c_int, indegree: *mut c_int, outdegree: *mut c_int, weighted: *mut c_int) -> c_int {
    call(comm, || {
        let t = dist(comm)?;
        *out(indegree, "indegree")? = int(t.sources.len());
        *out(outdegree, "outdegree")? = int(t.dests.len());
        *out(weighted, "weighted")? = c_int::from(t.weighted);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Dist_graph_neighbors(
    comm: c_int,
    maxindegree: c_int,
    sources: *mut c_int,
    sourceweights: *mut c_int,
    maxoutdegree: c_int,
    destinations: *mut c_int,
    destweights: *mut c_int,
) -> c_int {
    call(comm, || {
        let Dist { sources: s, source_weights: sw, dests: d, dest_weights: dw, weighted: w } = dist(comm)?;
        let ni = count(maxindegree)?.min(s.len());
        let no = count(maxoutdegree)?.min(d.len());
        slice_mut(sources, ni, "sources")?.copy_from_slice(&s[..ni]);
        slice_mut(destinations, no, "destinations")?.copy_from_slice(&d[..no]);
        if w && !unweighted(sourceweights) {
            slice_mut(sourceweights, ni, "sourceweights")?.copy_from_slice(&sw[..ni]);
        }
        if w && !unweighted(destweights) {
            slice_mut(destweights, no, "destweights")?.copy_from_slice(&dw[..no]);
        }
        Ok(())
    })
}

/// The topology type MPI_Topo_test reports for a communicator with a graph
/// or distributed-graph topology.
pub fn kind(comm: c_int) -> Option<c_int> {
    objs().graphs.get(&comm).map(|t| match t {
        GraphTopo::Graph { .. } => GRAPH,
        GraphTopo::Dist { .. } => DIST_GRAPH,
    })
}
