//! Cartesian topologies (MPI-3.1 §7.5), enough for benchmark utilities.
//! The grid of each Cartesian communicator is kept here, by handle; the
//! runtime provides the arithmetic (`Cart`, `dims_create`).

use std::os::raw::c_int;

use wanmpi_runtime::{dims_create, Cart, ErrorClass, MpiError};

use crate::args::{comm_handle, comm_id, count, int, out, slice, slice_mut};
use crate::error::{call, fail, R};
use crate::global::{objs, rt};
use crate::predef::{CART, COMM_NULL, COMM_WORLD, PROC_NULL, UNDEFINED};

fn cart(comm: c_int) -> R<Cart> {
    comm_id(comm)?;
    objs().carts.get(&comm).cloned().ok_or_else(|| MpiError::new(ErrorClass::Topology, "the communicator has no Cartesian topology"))
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Dims_create(nnodes: c_int, ndims: c_int, dims: *mut c_int) -> c_int {
    call(COMM_WORLD, || {
        let n = count(nnodes)?;
        let d = slice_mut(dims, count(ndims)?, "dims")?;
        let mut v: Vec<usize> =
            d.iter().map(|&x| usize::try_from(x)).collect::<Result<_, _>>().or_else(|_| fail(ErrorClass::Dims, "negative dimension"))?;
        dims_create(n, &mut v)?;
        for (o, x) in d.iter_mut().zip(v) {
            *o = int(x);
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Cart_create(
    comm: c_int,
    ndims: c_int,
    dims: *const c_int,
    periods: *const c_int,
    _reorder: c_int,
    newcomm: *mut c_int,
) -> c_int {
    call(comm, || {
        let o = out(newcomm, "comm_cart")?;
        let n = count(ndims)?;
        let dims: Vec<usize> = slice(dims, n, "dims")?
            .iter()
            .map(|&x| usize::try_from(x).ok().filter(|&x| x > 0))
            .collect::<Option<_>>()
            .ok_or_else(|| MpiError::new(ErrorClass::Dims, "dimensions must be positive"))?;
        let periods: Vec<bool> = slice(periods, n, "periods")?.iter().map(|&p| p != 0).collect();
        let c = Cart { dims, periods };
        let cid = comm_id(comm)?;
        let r = rt()?;
        let (size, rank) = (r.comm_size(cid)?, r.comm_rank(cid)?);
        if c.size() > size {
            return fail(ErrorClass::Dims, format!("a grid of {} processes on a communicator of {size}", c.size()));
        }
        // Ranks keep their order (no reordering); the rest get MPI_COMM_NULL.
        let color = if rank < c.size() { 0 } else { UNDEFINED };
        *o = match r.comm_split(cid, color, rank as c_int)? {
            Some(id) => {
                let h = comm_handle(id);
                objs().carts.insert(h, c);
                h
            }
            None => COMM_NULL,
        };
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Cart_coords(comm: c_int, rank: c_int, maxdims: c_int, coords: *mut c_int) -> c_int {
    call(comm, || {
        let c = cart(comm)?;
        let r = usize::try_from(rank)
            .ok()
            .filter(|&r| r < c.size())
            .ok_or_else(|| MpiError::new(ErrorClass::Rank, format!("rank {rank} outside the grid")))?;
        let out_c = slice_mut(coords, count(maxdims)?.min(c.dims.len()), "coords")?;
        for (o, x) in out_c.iter_mut().zip(c.coords(r)) {
            *o = int(x);
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Cart_rank(comm: c_int, coords: *const c_int, rank: *mut c_int) -> c_int {
    call(comm, || {
        let c = cart(comm)?;
        let v: Vec<i64> = slice(coords, c.dims.len(), "coords")?.iter().map(|&x| x as i64).collect();
        let r = c.rank(&v)?.ok_or_else(|| MpiError::new(ErrorClass::Arg, "coordinates outside a non-periodic dimension"))?;
        *out(rank, "rank")? = int(r);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Cart_shift(comm: c_int, direction: c_int, disp: c_int, source: *mut c_int, dest: *mut c_int) -> c_int {
    call(comm, || {
        let c = cart(comm)?;
        let me = rt()?.comm_rank(comm_id(comm)?)?;
        let dim = usize::try_from(direction).or_else(|_| fail(ErrorClass::Dims, "negative direction"))?;
        let (s, d) = c.shift(me, dim, disp as i64)?;
        *out(source, "rank_source")? = s.map_or(PROC_NULL, int);
        *out(dest, "rank_dest")? = d.map_or(PROC_NULL, int);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Cart_get(comm: c_int, maxdims: c_int, dims: *mut c_int, periods: *mut c_int, coords: *mut c_int) -> c_int {
    call(comm, || {
        let c = cart(comm)?;
        let n = count(maxdims)?.min(c.dims.len());
        let me = rt()?.comm_rank(comm_id(comm)?)?;
        let cs = c.coords(me);
        let (d, p, x) = (slice_mut(dims, n, "dims")?, slice_mut(periods, n, "periods")?, slice_mut(coords, n, "coords")?);
        for i in 0..n {
            d[i] = int(c.dims[i]);
            p[i] = c_int::from(c.periods[i]);
            x[i] = int(cs[i]);
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Cartdim_get(comm: c_int, ndims: *mut c_int) -> c_int {
    call(comm, || {
        *out(ndims, "ndims")? = int(cart(comm)?.dims.len());
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Topo_test(comm: c_int, status: *mut c_int) -> c_int {
    call(comm, || {
        comm_id(comm)?;
        let has = objs().carts.contains_key(&comm);
        *out(status, "status")? = if has { CART } else { crate::graph::kind(comm).unwrap_or(UNDEFINED) };
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Cart_sub(comm: c_int, remain: *const c_int, newcomm: *mut c_int) -> c_int {
    call(comm, || {
        let o = out(newcomm, "newcomm")?;
        let c = cart(comm)?;
        let keep: Vec<bool> = slice(remain, c.dims.len(), "remain_dims")?.iter().map(|&x| x != 0).collect();
        let cid = comm_id(comm)?;
        let me = rt()?.comm_rank(cid)?;
        let xs = c.coords(me);
        // Processes that agree on every dropped coordinate share a sub-grid.
        let mut color = 0usize;
        for i in 0..xs.len() {
            if !keep[i] {
                color = color * c.dims[i] + xs[i];
            }
        }
        let sub = Cart {
            dims: (0..xs.len()).filter(|&i| keep[i]).map(|i| c.dims[i]).collect(),
            periods: (0..xs.len()).filter(|&i| keep[i]).map(|i| c.periods[i]).collect(),
        };
        // Keeping no dimension gives a zero-dimensional grid (MPI-4.0
        // §8.5.7), which holds one process: as MPI_Cart_create with no
        // dimensions, rank 0 gets it and the others MPI_COMM_NULL (MPICH
        // does the same, and its test topo/cartsuball checks it).
        let color = if sub.dims.is_empty() && me != 0 { UNDEFINED } else { int(color) };
        *o = match rt()?.comm_split(cid, color, int(me))? {
            Some(id) => {
                let h = comm_handle(id);
                objs().carts.insert(h, sub);
                h
            }
            None => COMM_NULL,
        };
        Ok(())
    })
}

static UNWEIGHTED_OBJ: c_int = 0;
static WEIGHTS_EMPTY_OBJ: c_int = 0;

/// MPI_UNWEIGHTED and MPI_WEIGHTS_EMPTY are variables in MPICH's ABI
/// (`extern int *const`): distinct addresses that are not user arrays.
#[no_mangle]
pub static MPI_UNWEIGHTED: crate::convert::Exported<c_int> = crate::convert::Exported(&UNWEIGHTED_OBJ);
#[no_mangle]
pub static MPI_WEIGHTS_EMPTY: crate::convert::Exported<c_int> = crate::convert::Exported(&WEIGHTS_EMPTY_OBJ);
