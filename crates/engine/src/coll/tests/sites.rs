//! Site-aware collectives give exactly the flat algorithms' results, and
//! cross between sites once on every rank's path.

use super::*;
use crate::coll::testing::{run, run_on_sites};
use crate::coll::{allgather, allreduce, barrier, bcast, CollComm};

/// Layouts: contiguous 3x3, unequal sites, interleaved sites, one site.
const LAYOUTS: &[&[usize]] = &[&[0, 0, 0, 1, 1, 1, 2, 2, 2], &[0, 0, 0, 0, 0, 1, 1], &[0, 1, 0, 1, 2], &[4, 4, 4], &[0, 1], &[7]];

fn int_ops() -> Vec<Op> {
    use PredefOp::*;
    [Max, Min, Sum, Prod, Land, Band, Lor, Bor, Lxor, Bxor].into_iter().map(Op::Predef).collect()
}

fn several_sites(sites: &[usize]) -> bool {
    sites.iter().any(|&s| s != sites[0])
}

#[test]
fn allreduce_matches_the_flat_algorithm_for_every_op_and_layout() {
    const COUNT: usize = 5;
    for sites in LAYOUTS {
        for op in int_ops() {
            let go = |c: &mut dyn CollComm| {
                let mine = ints(&rank_ints(c.rank(), COUNT));
                let mut out = vec![0u8; mine.len()];
                allreduce(c, Some(&mine), &mut out, COUNT, BasicType::Int, &op).unwrap();
                out
            };
            let flat: Vec<_> = run(sites.len(), |c| go(c)).into_iter().map(|(o, _)| o).collect();
            let hier = run_on_sites(sites, |c| go(c));
            for (r, (out, _, wan)) in hier.iter().enumerate() {
                assert_eq!(out, &flat[r], "{op:?} on {sites:?}, rank {r}");
                assert!(*wan <= 1, "{op:?} on {sites:?}: rank {r} crossed {wan} times");
            }
        }
    }
}

#[test]
fn allreduce_in_place_on_doubles() {
    let sites = [0, 0, 1, 1, 1];
    let hier = run_on_sites(&sites, |c| {
        let mut v: Vec<u8> = [c.rank() as f64 + 0.5, 2.0].iter().flat_map(|x| x.to_ne_bytes()).collect();
        allreduce(c, None, &mut v, 2, BasicType::Double, &sum()).unwrap();
        v
    });
    let want: Vec<u8> = [0.5 + 1.5 + 2.5 + 3.5 + 4.5, 10.0f64].iter().flat_map(|x| x.to_ne_bytes()).collect();
    assert!(hier.iter().all(|(v, _, _)| *v == want));
}

#[test]
fn non_commutative_allreduce_keeps_rank_order_on_any_layout() {
    const N: usize = 2;
    for sites in LAYOUTS {
        let want = mat_bytes(&product_of(0..sites.len(), N));
        let hier = run_on_sites(sites, |c| {
            let mine = mat_bytes(&rank_mats(c.rank(), N));
            let mut out = vec![0u8; mine.len()];
            allreduce(c, Some(&mine), &mut out, 4 * N, MAT_TY, &matmul_op()).unwrap();
            out
        });
        for (r, (out, _, _)) in hier.iter().enumerate() {
            assert_eq!(out, &want, "{sites:?}, rank {r}");
        }
    }
}

#[test]
fn bcast_from_every_root_crosses_once() {
    for sites in LAYOUTS {
        for root in 0..sites.len() {
            let hier = run_on_sites(sites, |c| {
                let mut buf = if c.rank() == root { data(root, 1000, 3) } else { vec![0u8; 1000] };
                bcast(c, &mut buf, root).unwrap();
                buf
            });
            for (r, (buf, _, wan)) in hier.iter().enumerate() {
                assert_eq!(buf, &data(root, 1000, 3), "{sites:?} root {root} rank {r}");
                assert!(*wan <= 1, "{sites:?} root {root}: rank {r} crossed {wan} times");
            }
        }
    }
}

#[test]
fn allgather_places_every_block_and_crosses_once() {
    const B: usize = 7;
    for sites in LAYOUTS {
        let n = sites.len();
        let want: Vec<u8> = (0..n).flat_map(|r| data(r, B, 1)).collect();
        for in_place in [false, true] {
            let hier = run_on_sites(sites, |c| {
                let mine = data(c.rank(), B, 1);
                let mut out = vec![0u8; B * n];
                if in_place {
                    out[c.rank() * B..(c.rank() + 1) * B].copy_from_slice(&mine);
                    allgather(c, None, &mut out, B).unwrap();
                } else {
                    allgather(c, Some(&mine), &mut out, B).unwrap();
                }
                out
            });
            for (r, (out, _, wan)) in hier.iter().enumerate() {
                assert_eq!(out, &want, "{sites:?} in place {in_place} rank {r}");
                assert!(*wan <= 1, "{sites:?}: rank {r} crossed {wan} times");
            }
        }
    }
}

#[test]
fn barrier_crosses_once_and_only_leaders_cross() {
    for sites in LAYOUTS {
        let hier = run_on_sites(sites, |c| barrier(c).unwrap());
        for (r, (_, _, wan)) in hier.iter().enumerate() {
            let leader = sites.iter().position(|&s| s == sites[r]) == Some(r);
            let want = usize::from(leader && several_sites(sites));
            assert_eq!(*wan, want, "{sites:?}: rank {r}");
        }
    }
}

#[test]
fn a_barrier_does_not_let_a_rank_through_early() {
    // Rank 4 (another site) arrives late; nobody may leave before it came.
    use std::sync::atomic::{AtomicBool, Ordering};
    let arrived = AtomicBool::new(false);
    let sites = [0, 0, 1, 1, 2];
    let left_early = run_on_sites(&sites, |c| {
        if c.rank() == 4 {
            std::thread::sleep(std::time::Duration::from_millis(100));
            arrived.store(true, Ordering::SeqCst);
        }
        barrier(c).unwrap();
        !arrived.load(Ordering::SeqCst)
    });
    assert!(left_early.iter().all(|(early, _, _)| !early));
}
