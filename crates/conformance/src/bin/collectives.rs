//! Every collective against a reference computed locally, on whatever
//! number of ranks the job has (the harness runs 1, 2, 3, 4, 7 and 8), with
//! every root, MPI_IN_PLACE where it applies, and a non-commutative user
//! operation that must keep rank order.

use std::sync::Arc;
use wanmpi::prelude::*;
use wanmpi_conformance::{check, pass};

/// Rank r's contribution, element j.
fn v(r: i32, j: usize) -> i64 {
    (r as i64 + 1) * 1000 + j as i64
}

fn main() -> wanmpi::Result<()> {
    let u = initialize()?;
    let world = u.world();
    let (rank, size) = (world.rank(), world.size());
    let n = size as usize;
    let me = rank as usize;
    let count = 5;
    world.barrier()?;

    for root in 0..size {
        // bcast
        let mut b: Vec<i64> = if rank == root { (0..count).map(|j| v(root, j)).collect() } else { vec![0; count] };
        world.broadcast_into(&mut b, root)?;
        check!(rank, b == (0..count).map(|j| v(root, j)).collect::<Vec<_>>(), "bcast from {root}: {b:?}");
        // reduce (sum, max)
        let mine: Vec<i64> = (0..count).map(|j| v(rank, j)).collect();
        let mut out = vec![0i64; count];
        world.reduce_into(&mine, &mut out, &Op::Predef(PredefOp::Sum), root)?;
        if rank == root {
            let want: Vec<i64> = (0..count).map(|j| (0..size).map(|r| v(r, j)).sum()).collect();
            check!(rank, out == want, "reduce sum at {root}: {out:?} != {want:?}");
        }
        world.reduce_into(&mine, &mut out, &Op::Predef(PredefOp::Max), root)?;
        if rank == root {
            check!(rank, out == (0..count).map(|j| v(size - 1, j)).collect::<Vec<_>>(), "reduce max at {root}");
        }
        // gather
        let mut g = vec![0i64; count * n];
        world.gather_into(&mine, &mut g, root)?;
        if rank == root {
            for r in 0..n {
                check!(rank, g[r * count..(r + 1) * count] == (0..count).map(|j| v(r as i32, j)).collect::<Vec<_>>()[..], "gather block {r}");
            }
        }
        // scatter
        let src: Vec<i64> = (0..count * n).map(|k| k as i64 * 3 + root as i64).collect();
        let mut s = vec![0i64; count];
        world.scatter_into(&src, &mut s, root)?;
        check!(rank, s[..] == src[me * count..(me + 1) * count], "scatter from {root}");
        // gatherv / scatterv with uneven counts (rank r sends r+1 elements)
        let counts: Vec<usize> = (0..n).map(|r| r + 1).collect();
        let displs: Vec<isize> = (0..n).map(|r| (r * (r + 1) / 2 + r) as isize).collect(); // gaps of one
        let total = displs[n - 1] as usize + counts[n - 1];
        let mine_v: Vec<i64> = (0..me + 1).map(|j| v(rank, j)).collect();
        let mut gv = vec![-1i64; total];
        world.gather_varcount_into(&mine_v, &mut gv, &counts, &displs, root)?;
        if rank == root {
            for r in 0..n {
                let d = displs[r] as usize;
                check!(rank, gv[d..d + r + 1] == (0..r + 1).map(|j| v(r as i32, j)).collect::<Vec<_>>()[..], "gatherv block {r}");
            }
        }
        let mut sv = vec![0i64; me + 1];
        let srcv: Vec<i64> = (0..total).map(|k| k as i64 * 7 + root as i64).collect();
        world.scatter_varcount_into(&srcv, &counts, &displs, &mut sv, root)?;
        let d = displs[me] as usize;
        check!(rank, sv[..] == srcv[d..d + me + 1], "scatterv from {root}");
    }

    // allreduce (+ in place), allgather(v), alltoall(v), scans, reduce_scatter
    let mine: Vec<i64> = (0..count).map(|j| v(rank, j)).collect();
    let sums: Vec<i64> = (0..count).map(|j| (0..size).map(|r| v(r, j)).sum()).collect();
    let mut out = vec![0i64; count];
    world.all_reduce_into(&mine, &mut out, &Op::Predef(PredefOp::Sum))?;
    check!(rank, out == sums, "allreduce {out:?}");
    let mut inplace = mine.clone();
    world.all_reduce_in_place(&mut inplace, &Op::Predef(PredefOp::Sum))?;
    check!(rank, inplace == sums, "allreduce in place");
    let mut f = [rank as f64 + 0.5];
    world.all_reduce_in_place(&mut f, &Op::Predef(PredefOp::Min))?;
    check!(rank, f[0] == 0.5, "allreduce min f64 {}", f[0]);
    let mut c = [1u8 + rank as u8];
    world.all_reduce_in_place(&mut c, &Op::Predef(PredefOp::Bor))?;
    check!(rank, c[0] == (1..=size as u8).fold(0, |a, x| a | x), "allreduce bor u8");

    let mut ag = vec![0i64; count * n];
    world.all_gather_into(&mine, &mut ag)?;
    for r in 0..n {
        check!(rank, ag[r * count] == v(r as i32, 0), "allgather block {r}");
    }
    let counts: Vec<usize> = (0..n).map(|r| r % 3).collect();
    let displs: Vec<isize> = counts
        .iter()
        .scan(0isize, |a, &c| {
            let d = *a;
            *a += c as isize;
            Some(d)
        })
        .collect();
    let mut agv = vec![0i64; counts.iter().sum()];
    world.all_gather_varcount_into(&mine[..me % 3], &mut agv, &counts, &displs)?;
    for r in 0..n {
        for j in 0..r % 3 {
            check!(rank, agv[displs[r] as usize + j] == v(r as i32, j), "allgatherv block {r}");
        }
    }

    let a2a: Vec<i64> = (0..n * 2).map(|k| rank as i64 * 100 + k as i64).collect();
    let mut got = vec![0i64; n * 2];
    world.all_to_all_into(&a2a, &mut got)?;
    for r in 0..n {
        check!(rank, got[2 * r] == r as i64 * 100 + 2 * me as i64 && got[2 * r + 1] == r as i64 * 100 + 2 * me as i64 + 1, "alltoall block {r}");
    }
    // alltoallv: rank r sends (r + j) % 3 elements to rank j
    let scounts: Vec<usize> = (0..n).map(|j| (me + j) % 3).collect();
    let sdispls: Vec<isize> = scounts
        .iter()
        .scan(0isize, |a, &c| {
            let d = *a;
            *a += c as isize;
            Some(d)
        })
        .collect();
    let rcounts: Vec<usize> = (0..n).map(|r| (r + me) % 3).collect();
    let rdispls: Vec<isize> = rcounts
        .iter()
        .scan(0isize, |a, &c| {
            let d = *a;
            *a += c as isize;
            Some(d)
        })
        .collect();
    let sbuf: Vec<i64> = (0..scounts.iter().sum::<usize>()).map(|k| rank as i64 * 1000 + k as i64).collect();
    let mut rbuf = vec![0i64; rcounts.iter().sum()];
    world.all_to_all_varcount_into(&sbuf, &scounts, &sdispls, &mut rbuf, &rcounts, &rdispls)?;
    for r in 0..n {
        let their_scounts: Vec<usize> = (0..n).map(|j| (r + j) % 3).collect();
        let their_off: usize = their_scounts[..me].iter().sum();
        for k in 0..rcounts[r] {
            check!(rank, rbuf[rdispls[r] as usize + k] == r as i64 * 1000 + (their_off + k) as i64, "alltoallv from {r}");
        }
    }

    let mut sc = vec![0i64; count];
    world.scan_into(&mine, &mut sc, &Op::Predef(PredefOp::Sum), false)?;
    check!(rank, sc[0] == (0..=rank).map(|r| v(r, 0)).sum::<i64>(), "scan {}", sc[0]);
    let mut ex = vec![0i64; count];
    world.scan_into(&mine, &mut ex, &Op::Predef(PredefOp::Sum), true)?;
    if rank > 0 {
        check!(rank, ex[0] == (0..rank).map(|r| v(r, 0)).sum::<i64>(), "exscan {}", ex[0]);
    }

    let rs_counts: Vec<usize> = (0..n).map(|r| r + 1).collect();
    let rs_total: usize = rs_counts.iter().sum();
    let rs_in: Vec<i64> = (0..rs_total).map(|k| rank as i64 + k as i64).collect();
    let mut rs_out = vec![0i64; me + 1];
    world.reduce_scatter_into(&rs_in, &mut rs_out, &rs_counts, &Op::Predef(PredefOp::Sum))?;
    let off: usize = rs_counts[..me].iter().sum();
    for (k, &got) in rs_out.iter().enumerate() {
        let want: i64 = (0..size).map(|r| r as i64 + (off + k) as i64).sum();
        check!(rank, got == want, "reduce_scatter element {k}: {got} != {want}");
    }

    // A non-commutative user op (2x2 matrix product) must combine in rank order.
    let matmul: wanmpi::Op = Op::User {
        func: Arc::new(|a: &[u8], b: &mut [u8], _n: usize| {
            for (x, y) in a.chunks_exact(32).zip(b.chunks_exact_mut(32)) {
                let m: Vec<i64> = x.chunks_exact(8).map(|c| i64::from_le_bytes(c.try_into().unwrap())).collect();
                let k: Vec<i64> = y.chunks_exact(8).map(|c| i64::from_le_bytes(c.try_into().unwrap())).collect();
                let p = [m[0] * k[0] + m[1] * k[2], m[0] * k[1] + m[1] * k[3], m[2] * k[0] + m[3] * k[2], m[2] * k[1] + m[3] * k[3]];
                for (i, v) in p.iter().enumerate() {
                    y[8 * i..8 * i + 8].copy_from_slice(&v.to_le_bytes());
                }
            }
        }),
        commute: false,
    };
    let mat = |r: i64| [1i64, r + 1, 0, 1 + (r % 2)];
    let mut prod = [1i64, 0, 0, 1];
    for r in 0..size as i64 {
        let m = mat(r);
        prod = [prod[0] * m[0] + prod[1] * m[2], prod[0] * m[1] + prod[1] * m[3], prod[2] * m[0] + prod[3] * m[2], prod[2] * m[1] + prod[3] * m[3]];
    }
    let mut res = [0i64; 4];
    world.all_reduce_into(&mat(rank as i64), &mut res, &matmul)?;
    check!(rank, res == prod, "non-commutative allreduce out of order: {res:?} != {prod:?}");
    for root in 0..size {
        let mut res = [0i64; 4];
        world.reduce_into(&mat(rank as i64), &mut res, &matmul, root)?;
        if rank == root {
            check!(rank, res == prod, "non-commutative reduce at {root}: {res:?}");
        }
    }
    world.barrier()?;
    pass(&world, "collectives");
    Ok(())
}
