//! The site-aware algorithms (`sites.rs`, `hier/`) against the flat ones:
//! on every layout the results are byte for byte the flat algorithms'
//! (every predefined op on several types, every root, MPI_IN_PLACE), and
//! the counters of the threaded comm show each slow link crossed once on
//! the critical path.

use super::*;
use crate::coll::testing::{run, run_counted, Counts, Flat};
use crate::coll::*;

/// Site of each rank: contiguous 3x3, unequal, interleaved, site ids out
/// of order, one site; then for 1..=9 ranks a contiguous and a round-robin
/// layout.
fn layouts() -> Vec<Vec<usize>> {
    let mut out: Vec<Vec<usize>> =
        vec![vec![0, 0, 0, 1, 1, 1, 2, 2, 2], vec![0, 0, 0, 0, 0, 1, 1], vec![0, 1, 0, 1, 2], vec![7, 7, 3, 3, 3, 9, 7, 9], vec![4, 4, 4, 4]];
    for n in 1..=9 {
        out.push((0..n).map(|r| r * 3 / n).collect());
        out.push((0..n).map(|r| r % 2).collect());
    }
    out
}

/// A few layouts for the heavier loops (every op x type x root).
fn main_layouts() -> Vec<Vec<usize>> {
    layouts().into_iter().take(5).collect()
}

fn site_count(sites: &[usize]) -> usize {
    let mut ids = sites.to_vec();
    ids.sort_unstable();
    ids.dedup();
    ids.len()
}

fn contiguous(sites: &[usize]) -> bool {
    (0..sites.len()).all(|r| sites[..r].iter().rposition(|&s| s == sites[r]).is_none_or(|q| q + 1 == r))
}

/// Lowest rank of each rank's site.
fn lowest_of_site(sites: &[usize], r: usize) -> usize {
    sites.iter().position(|&s| s == sites[r]).unwrap_or(r)
}

/// Types of every reduction class, with pair and complex types.
const TYPES: [BasicType; 10] = [
    BasicType::Int,
    BasicType::Uint8,
    BasicType::Int64,
    BasicType::Byte,
    BasicType::CBool,
    BasicType::Float,
    BasicType::Double,
    BasicType::TwoInt,
    BasicType::DoubleInt,
    BasicType::CDoubleComplex,
];

/// `count` elements of `ty` for `rank`: small integers for the floating
/// types (so every order of combining is exact), 0/1 for C bool, repeating
/// values for the pairs (so MINLOC/MAXLOC see ties), anything for integers.
fn operand(ty: BasicType, rank: usize, count: usize) -> Vec<u8> {
    let v = |i: usize, m: usize| (rank * 7 + i * 3) % m;
    (0..count)
        .flat_map(|i| -> Vec<u8> {
            match ty {
                BasicType::CBool => vec![v(i, 2) as u8],
                BasicType::Float => ((v(i, 5) + 1) as f32).to_ne_bytes().to_vec(),
                BasicType::Double => ((v(i, 5) + 1) as f64).to_ne_bytes().to_vec(),
                BasicType::CDoubleComplex => [(v(i, 3) + 1) as f64, v(i, 3) as f64 - 1.0].iter().flat_map(|x| x.to_ne_bytes()).collect(),
                BasicType::TwoInt => [v(i, 4) as i32, rank as i32].iter().flat_map(|x| x.to_ne_bytes()).collect(),
                BasicType::DoubleInt => {
                    let mut e = (v(i, 4) as f64).to_ne_bytes().to_vec();
                    e.extend((rank as i32).to_ne_bytes());
                    e.extend([0; 4]);
                    e
                }
                _ => data(rank * 31 + i, ty.extent(), 5),
            }
        })
        .collect()
}

/// Every (op, type) pair the op is defined on.
fn op_types() -> Vec<(Op, BasicType)> {
    PredefOp::ALL.iter().flat_map(|&p| TYPES.iter().filter(move |&&t| p.is_defined_for(t)).map(move |&t| (Op::Predef(p), t))).collect()
}

/// What a hierarchical run must show when the layout spans sites: no rank
/// waits on more than one slow crossing in a row, no rank waits on slow
/// links in more than one exchange, and the sites exchange `msgs` messages
/// in all.
fn check_crossings(what: &str, sites: &[usize], counts: &[Counts], msgs: usize) {
    check_crossings_in(what, sites, counts, msgs, 1);
}

/// `check_crossings` allowing `exchanges` exchanges across sites per rank
/// (scatterv's leader takes the counts, then the blocks sent with them).
fn check_crossings_in(what: &str, sites: &[usize], counts: &[Counts], msgs: usize, exchanges: usize) {
    if site_count(sites) < 2 {
        assert!(counts.iter().all(|c| c.wan_sends == 0), "{what}: one site, {counts:?}");
        return;
    }
    for (r, c) in counts.iter().enumerate() {
        assert!(c.wan_depth <= 1, "{what} on {sites:?}: rank {r} is {} crossings deep", c.wan_depth);
        assert!(c.wan_exchanges <= exchanges, "{what} on {sites:?}: rank {r} waited on {} exchanges across sites", c.wan_exchanges);
    }
    let sent: usize = counts.iter().map(|c| c.wan_sends).sum();
    let received: usize = counts.iter().map(|c| c.wan_recvs).sum();
    assert_eq!((sent, received), (msgs, msgs), "{what} on {sites:?}: messages between sites");
}

/// Messages between sites when every leader talks to every other one.
fn all_pairs(sites: &[usize]) -> usize {
    let n = site_count(sites);
    n * (n - 1)
}

/// Messages between sites when the root talks to every other leader.
fn from_root(sites: &[usize]) -> usize {
    site_count(sites) - 1
}

fn split<T, C>(out: Vec<(T, C)>) -> (Vec<T>, Vec<C>) {
    out.into_iter().unzip()
}

#[test]
fn barrier_signals_once_between_leaders() {
    for sites in layouts() {
        let (_, counts) = split(run_counted(&sites, |c| barrier(c).unwrap()));
        check_crossings("barrier", &sites, &counts, all_pairs(&sites));
        for (r, c) in counts.iter().enumerate() {
            let leads = lowest_of_site(&sites, r) == r && site_count(&sites) > 1;
            assert_eq!(c.wan_recvs, if leads { site_count(&sites) - 1 } else { 0 }, "{sites:?} rank {r}");
            assert_eq!(c.wan_exchanges, usize::from(leads), "{sites:?} rank {r}");
        }
    }
}

#[test]
fn flat_barrier_crosses_more_than_once_on_three_sites() {
    // The yardstick: dissemination over 3x3 ranks waits on several
    // crossings in a row; the site-aware barrier on one.
    let sites = [0, 0, 0, 1, 1, 1, 2, 2, 2];
    let flat = run_counted(&sites, |c| barrier(&mut Flat(c)).unwrap());
    assert!(flat.iter().any(|(_, c)| c.wan_depth >= 2), "{flat:?}");
    let hier = run_counted(&sites, |c| barrier(c).unwrap());
    assert!(hier.iter().all(|(_, c)| c.wan_depth == 1), "{hier:?}");
}

#[test]
fn bcast_from_every_root_matches_and_crosses_once() {
    for sites in layouts() {
        for root in 0..sites.len() {
            let (bufs, counts) = split(run_counted(&sites, |c| {
                let mut buf = if c.rank() == root { data(root, 33, 3) } else { vec![0u8; 33] };
                bcast(c, &mut buf, root).unwrap();
                buf
            }));
            assert!(bufs.iter().all(|b| *b == data(root, 33, 3)), "{sites:?} root {root}");
            check_crossings("bcast", &sites, &counts, from_root(&sites));
            assert!(counts.iter().all(|c| c.wan_recvs <= 1), "{sites:?} root {root}: {counts:?}");
        }
    }
}

#[test]
fn allreduce_matches_flat_for_every_op_and_type() {
    const COUNT: usize = 3;
    for sites in layouts() {
        let n = sites.len();
        let ops = if sites.len() == 9 || sites.len() == 8 {
            op_types()
        } else {
            vec![(sum(), BasicType::Int), (Op::Predef(PredefOp::Replace), BasicType::Double)]
        };
        for (op, ty) in ops {
            for in_place in [false, true] {
                let go = |c: &mut dyn CollComm| {
                    let mine = operand(ty, c.rank(), COUNT);
                    let mut out = if in_place { mine.clone() } else { vec![0u8; mine.len()] };
                    allreduce(c, (!in_place).then_some(&mine[..]), &mut out, COUNT, ty, &op).unwrap();
                    out
                };
                let (flat, _) = split(run(n, |c| go(c)));
                let (hier, counts) = split(run_counted(&sites, |c| go(c)));
                assert_eq!(hier, flat, "{op:?} on {ty:?}, {sites:?}, in place {in_place}");
                if op.is_commutative() || contiguous(&sites) {
                    check_crossings("allreduce", &sites, &counts, all_pairs(&sites));
                    for (r, c) in counts.iter().enumerate() {
                        let leads = lowest_of_site(&sites, r) == r;
                        assert!(leads || c.wan_recvs == 0, "{sites:?} rank {r}: {c:?}");
                    }
                }
            }
        }
    }
}

#[test]
fn non_commutative_reductions_keep_rank_order_on_every_layout() {
    const N: usize = 2;
    for sites in layouts() {
        let n = sites.len();
        let want = mat_bytes(&product_of(0..n, N));
        let all = run_counted(&sites, |c| {
            let mut out = mat_bytes(&rank_mats(c.rank(), N));
            allreduce(c, None, &mut out, 4 * N, MAT_TY, &matmul_op()).unwrap();
            out
        });
        assert!(all.iter().all(|(o, _)| *o == want), "allreduce on {sites:?}");
        for root in 0..n {
            let at_root = run_counted(&sites, |c| {
                let mine = mat_bytes(&rank_mats(c.rank(), N));
                let mut out = vec![0u8; mine.len()];
                reduce(c, Some(&mine), &mut out, 4 * N, MAT_TY, &matmul_op(), root).unwrap();
                out
            });
            assert_eq!(at_root[root].0, want, "reduce on {sites:?} root {root}");
            if contiguous(&sites) {
                let counts: Vec<Counts> = at_root.iter().map(|(_, c)| *c).collect();
                check_crossings("reduce", &sites, &counts, from_root(&sites));
            }
        }
    }
}

#[test]
fn reduce_matches_flat_for_every_op_type_and_root() {
    const COUNT: usize = 2;
    for sites in main_layouts() {
        let n = sites.len();
        for (op, ty) in op_types() {
            for root in 0..n {
                for in_place in [false, true] {
                    let go = |c: &mut dyn CollComm| {
                        let mine = operand(ty, c.rank(), COUNT);
                        let at_root = c.rank() == root;
                        let mut out = if at_root && in_place { mine.clone() } else { vec![0xee; mine.len()] };
                        let send = (!(at_root && in_place)).then_some(&mine[..]);
                        reduce(c, send, &mut out, COUNT, ty, &op, root).unwrap();
                        out
                    };
                    let (flat, _) = split(run(n, |c| go(c)));
                    let (hier, counts) = split(run_counted(&sites, |c| go(c)));
                    assert_eq!(hier, flat, "{op:?} on {ty:?}, {sites:?}, root {root}, in place {in_place}");
                    if op.is_commutative() || contiguous(&sites) {
                        check_crossings("reduce", &sites, &counts, from_root(&sites));
                    }
                }
            }
        }
    }
}

#[test]
fn gather_and_scatter_from_every_root() {
    for sites in layouts() {
        let n = sites.len();
        for root in 0..n {
            for block in [0, 3] {
                for in_place in [false, true] {
                    let want: Vec<u8> = (0..n).flat_map(|r| data(r, block, 4)).collect();
                    let (got, counts) = split(run_counted(&sites, |c| {
                        let r = c.rank();
                        let mine = data(r, block, 4);
                        if r != root {
                            gather(c, Some(&mine), &mut [], block, root).unwrap();
                            return Vec::new();
                        }
                        let mut recv = vec![0u8; block * n];
                        if in_place {
                            recv[r * block..(r + 1) * block].copy_from_slice(&mine);
                            gather(c, None, &mut recv, block, root).unwrap();
                        } else {
                            gather(c, Some(&mine), &mut recv, block, root).unwrap();
                        }
                        recv
                    }));
                    assert_eq!(got[root], want, "gather {sites:?} root {root} block {block}");
                    check_crossings("gather", &sites, &counts, from_root(&sites));

                    let (got, counts) = split(run_counted(&sites, |c| {
                        let r = c.rank();
                        let send = if r == root { &want[..] } else { &[][..] };
                        let mut recv = data(r, block, 4);
                        if r == root && in_place {
                            scatter(c, send, None, block, root).unwrap();
                            return recv;
                        }
                        recv.fill(0xee);
                        scatter(c, send, Some(&mut recv), block, root).unwrap();
                        recv
                    }));
                    for (r, g) in got.iter().enumerate() {
                        assert_eq!(*g, data(r, block, 4), "scatter {sites:?} root {root} rank {r}");
                    }
                    check_crossings("scatter", &sites, &counts, from_root(&sites));
                }
            }
        }
    }
}

/// Rank i's block is `(i * 5) % 4` bytes (some empty), stored in reverse
/// rank order with two-byte gaps that must stay untouched.
fn v_layout(n: usize) -> (Vec<usize>, Vec<usize>, usize) {
    let counts: Vec<usize> = (0..n).map(|i| (i * 5) % 4).collect();
    let mut displs = vec![0; n];
    let mut at = 2;
    for i in (0..n).rev() {
        displs[i] = at;
        at += counts[i] + 2;
    }
    (counts, displs, at)
}

#[test]
fn gatherv_and_scatterv_from_every_root() {
    for sites in layouts() {
        let n = sites.len();
        let (counts, displs, len) = v_layout(n);
        let blocks = Blocks::new(&counts, &displs);
        let mut whole = vec![0xee; len];
        for i in 0..n {
            whole[displs[i]..displs[i] + counts[i]].copy_from_slice(&data(i, counts[i], 6));
        }
        for root in 0..n {
            for in_place in [false, true] {
                let (got, cts) = split(run_counted(&sites, |c| {
                    let r = c.rank();
                    let mine = data(r, counts[r], 6);
                    if r != root {
                        gatherv(c, Some(&mine), &mut [], Blocks::new(&[], &[]), root).unwrap();
                        return Vec::new();
                    }
                    let mut recv = vec![0xee; len];
                    if in_place {
                        recv[displs[r]..displs[r] + counts[r]].copy_from_slice(&mine);
                    }
                    gatherv(c, (!in_place).then_some(&mine[..]), &mut recv, blocks, root).unwrap();
                    recv
                }));
                assert_eq!(got[root], whole, "gatherv {sites:?} root {root} in place {in_place}");
                check_crossings("gatherv", &sites, &cts, from_root(&sites));

                let (got, cts) = split(run_counted(&sites, |c| {
                    let r = c.rank();
                    if r == root && in_place {
                        scatterv(c, &whole, blocks, None, root).unwrap();
                        return data(r, counts[r], 6);
                    }
                    let mut recv = vec![0xee; counts[r]];
                    let (send, b) = if r == root { (&whole[..], blocks) } else { (&[][..], Blocks::new(&[], &[])) };
                    scatterv(c, send, b, Some(&mut recv), root).unwrap();
                    recv
                }));
                for (r, g) in got.iter().enumerate() {
                    assert_eq!(*g, data(r, counts[r], 6), "scatterv {sites:?} root {root} rank {r}");
                }
                check_crossings_in("scatterv", &sites, &cts, 2 * from_root(&sites), 2);
            }
        }
    }
}

#[test]
fn allgather_and_allgatherv_match_and_cross_once() {
    for sites in layouts() {
        let n = sites.len();
        let (counts, displs, len) = v_layout(n);
        let mut want_v = vec![0xee; len];
        for i in 0..n {
            want_v[displs[i]..displs[i] + counts[i]].copy_from_slice(&data(i, counts[i], 8));
        }
        let want: Vec<u8> = (0..n).flat_map(|r| data(r, 5, 8)).collect();
        for in_place in [false, true] {
            let (got, cts) = split(run_counted(&sites, |c| {
                let r = c.rank();
                let mine = data(r, 5, 8);
                let mut recv = vec![0u8; 5 * n];
                if in_place {
                    recv[r * 5..(r + 1) * 5].copy_from_slice(&mine);
                }
                allgather(c, (!in_place).then_some(&mine[..]), &mut recv, 5).unwrap();
                recv
            }));
            assert!(got.iter().all(|g| *g == want), "allgather {sites:?} in place {in_place}");
            check_crossings("allgather", &sites, &cts, all_pairs(&sites));

            let (got, cts) = split(run_counted(&sites, |c| {
                let r = c.rank();
                let mine = data(r, counts[r], 8);
                let mut recv = vec![0xee; len];
                if in_place {
                    recv[displs[r]..displs[r] + counts[r]].copy_from_slice(&mine);
                }
                allgatherv(c, (!in_place).then_some(&mine[..]), &mut recv, Blocks::new(&counts, &displs)).unwrap();
                recv
            }));
            for (r, g) in got.iter().enumerate() {
                assert_eq!(*g, want_v, "allgatherv {sites:?} rank {r} in place {in_place}");
            }
            check_crossings("allgatherv", &sites, &cts, all_pairs(&sites));
        }
    }
}

#[test]
fn alltoall_stays_one_step_across_sites() {
    for sites in layouts() {
        let n = sites.len();
        let (got, cts) = split(run_counted(&sites, |c| {
            let send: Vec<u8> = (0..n).flat_map(|to| data(c.rank() * 16 + to, 2, 1)).collect();
            let mut recv = vec![0u8; 2 * n];
            alltoall(c, Some(&send), &mut recv, 2).unwrap();
            recv
        }));
        for (r, g) in got.iter().enumerate() {
            let want: Vec<u8> = (0..n).flat_map(|from| data(from * 16 + r, 2, 1)).collect();
            assert_eq!(*g, want, "{sites:?} rank {r}");
        }
        assert!(cts.iter().all(|c| c.wan_depth <= 1 && c.exchanges <= 1), "{sites:?}: {cts:?}");
    }
}

#[test]
fn gatherv_length_errors_reach_the_root() {
    // Ranks 2 and 3 (the other site) swap a byte between their blocks: the
    // site's total is right, each length is not; the root must say so.
    let sites = [0, 0, 1, 1];
    let counts = [2, 2, 2, 2];
    let displs = [0, 2, 4, 6];
    let out = run_counted(&sites, |c| {
        let r = c.rank();
        let mine = vec![r as u8; [2, 2, 1, 3][r]];
        let mut recv = vec![0u8; 8];
        let blocks = if r == 0 { Blocks::new(&counts, &displs) } else { Blocks::new(&[], &[]) };
        gatherv(c, Some(&mine), &mut recv, blocks, 0)
    });
    assert!(matches!(out[0].0, Err(CollError::LengthMismatch { peer: 2, expected: 2, got: 1 })), "{:?}", out[0].0);
    assert!(out[1..].iter().all(|(r, _)| r.is_ok()));
}

#[test]
fn scatterv_length_errors_stay_with_the_rank() {
    // Rank 3 expects 3 bytes where the root sends it 2: only rank 3 fails.
    let sites = [0, 0, 1, 1];
    let counts = [2, 2, 2, 2];
    let displs = [0, 2, 4, 6];
    let all = [9u8; 8];
    let out = run_counted(&sites, |c| {
        let r = c.rank();
        let mut recv = vec![0u8; if r == 3 { 3 } else { 2 }];
        let (send, b) = if r == 0 { (&all[..], Blocks::new(&counts, &displs)) } else { (&[][..], Blocks::new(&[], &[])) };
        scatterv(c, send, b, Some(&mut recv), 0)
    });
    for (r, (res, _)) in out.iter().enumerate() {
        assert_eq!(res.is_err(), r == 3, "rank {r}: {res:?}");
    }
}

#[test]
fn reduce_scatter_matches_flat_and_crosses_twice() {
    for sites in layouts() {
        let n = sites.len();
        let counts: Vec<usize> = (0..n).map(|i| 4 * (i % 2 + 1)).collect();
        let total: usize = counts.iter().sum();
        for (op, ty) in [(sum(), BasicType::Int), (matmul_op(), MAT_TY)] {
            let go = |c: &mut dyn CollComm| {
                let mine = if ty == MAT_TY { mat_bytes(&rank_mats(c.rank(), total / 4)) } else { operand(ty, c.rank(), total) };
                let mut out = vec![0u8; counts[c.rank()] * ty.extent()];
                reduce_scatter(c, Some(&mine), &mut out, &counts, ty, &op).unwrap();
                out
            };
            let (flat, _) = split(run(n, |c| go(c)));
            let (hier, cts) = split(run_counted(&sites, |c| go(c)));
            assert_eq!(hier, flat, "{op:?} on {sites:?}");
            if site_count(&sites) > 1 && (op.is_commutative() || contiguous(&sites)) {
                assert!(cts.iter().all(|c| c.wan_depth <= 2), "{op:?} on {sites:?}: {cts:?}");
            }
        }
    }
}
