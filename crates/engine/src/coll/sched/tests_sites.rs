//! The site-aware schedules (`sites.rs`) against the blocking site-aware
//! algorithms: the same results, bit for bit for doubles, on contiguous and
//! interleaved layouts, and at most one round across sites per rank.

use super::tests::{one, run};
use super::{sites, Schedule};
use crate::coll::tests::{data, ints, mat_bytes, matmul_op, product_of, rank_ints, rank_mats, sum, MAT_TY};
use crate::coll::CollComm;
use crate::datatype::BasicType;
use crate::op::{Op, PredefOp};

/// Layouts: three sites of three, interleaved sites, uneven sites, a rank
/// alone, site ids out of order.
const LAYOUTS: [&[usize]; 5] = [&[0, 0, 0, 1, 1, 1, 2, 2, 2], &[0, 1, 0, 1, 0, 1], &[0, 0, 1], &[5, 0, 0, 0, 2], &[1, 1, 0, 0, 0, 0, 0]];

/// Rounds of `s` with a message to or from another site.
fn wan_rounds(s: &Schedule, rank: usize, site: &[usize]) -> usize {
    s.rounds.iter().filter(|r| r.sends.iter().chain(&r.recvs).any(|m| site[m.peer] != site[rank])).count()
}

#[test]
fn one_site_leaves_the_flat_schedules() {
    assert!(sites::barrier(0, &[3, 3, 3], 0).is_none());
    assert!(sites::bcast(0, &[0, 0], vec![1], 0, 0).unwrap().is_none());
    assert!(sites::allreduce(0, &[0], ints(&[1]), 1, BasicType::Int, &sum(), 0).unwrap().is_none());
}

#[test]
fn barrier_matches_the_blocking_one_and_crosses_once() {
    for site in LAYOUTS {
        let size = site.len();
        let arrived = std::sync::atomic::AtomicUsize::new(0);
        let seen = run(size, |rank, p| {
            if rank == size - 1 {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            arrived.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let s = sites::barrier(rank, site, 2).expect("several sites");
            assert!(wan_rounds(&s, rank, site) <= 1, "{site:?} rank {rank}");
            one(p, s);
            arrived.load(std::sync::atomic::Ordering::SeqCst)
        });
        assert!(seen.iter().all(|&n| n == size), "{site:?}: {seen:?}");
    }
}

#[test]
fn bcast_matches_the_blocking_one_from_every_root() {
    for site in LAYOUTS {
        let size = site.len();
        for root in 0..size {
            let out = run(size, |rank, p| {
                let buf = if rank == root { data(root, 1000, 4) } else { vec![0; 1000] };
                let s = sites::bcast(rank, site, buf, root, 9).unwrap().expect("several sites");
                assert!(wan_rounds(&s, rank, site) <= 1, "{site:?} root {root} rank {rank}");
                one(p, s)
            });
            assert!(out.iter().all(|b| *b == data(root, 1000, 4)), "{site:?} root {root}");
        }
    }
}

#[test]
fn allreduce_gives_the_blocking_sites_bits() {
    let dbl = |rank: usize| -> Vec<u8> { (0..4).flat_map(|i| (0.1 * (rank * 7 + i) as f64 + 1e-9 * rank as f64).to_ne_bytes()).collect() };
    for site in LAYOUTS {
        let size = site.len();
        let blocking = crate::coll::testing::run_on_sites(site, |c| {
            let mut r = dbl(c.rank());
            crate::coll::allreduce(c, None, &mut r, 4, BasicType::Double, &sum()).unwrap();
            r
        });
        let sched = run(size, |rank, p| {
            let s = sites::allreduce(rank, site, dbl(rank), 4, BasicType::Double, &sum(), 5).unwrap().expect("commutative");
            assert!(wan_rounds(&s, rank, site) <= 1, "{site:?} rank {rank}");
            one(p, s)
        });
        for (r, (b, s)) in blocking.iter().zip(&sched).enumerate() {
            assert_eq!(&b.0, s, "{site:?} rank {r}: doubles combined in another order");
        }
        for op in [PredefOp::Max, PredefOp::Prod, PredefOp::Bxor] {
            let op = Op::Predef(op);
            let blocking = crate::coll::testing::run_on_sites(site, |c| {
                let mut r = ints(&rank_ints(c.rank(), 3));
                crate::coll::allreduce(c, None, &mut r, 3, BasicType::Int, &op).unwrap();
                r
            });
            let sched =
                run(size, |rank, p| one(p, sites::allreduce(rank, site, ints(&rank_ints(rank, 3)), 3, BasicType::Int, &op, 1).unwrap().unwrap()));
            assert!(blocking.iter().zip(&sched).all(|(b, s)| &b.0 == s), "{site:?} {op:?}");
        }
    }
}

#[test]
fn a_non_commutative_op_needs_contiguous_sites() {
    let m = |rank: usize| mat_bytes(&rank_mats(rank, 2));
    assert!(sites::allreduce(0, &[0, 1, 0, 1], m(0), 8, MAT_TY, &matmul_op(), 0).unwrap().is_none(), "interleaved");
    let site = [0, 0, 1, 1, 1, 2];
    let out = run(site.len(), |rank, p| one(p, sites::allreduce(rank, &site, m(rank), 8, MAT_TY, &matmul_op(), 3).unwrap().expect("contiguous")));
    assert!(out.iter().all(|b| *b == mat_bytes(&product_of(0..site.len(), 2))));
}

#[test]
fn the_tests_of_applicability_agree_with_the_builders() {
    assert!(!sites::spans_sites(&[2, 2, 2]) && sites::spans_sites(&[2, 0]) && !sites::spans_sites(&[]));
    assert!(sites::allreduce_fits(&[0, 1, 0, 1], &sum()) && !sites::allreduce_fits(&[0, 1, 0, 1], &matmul_op()));
    assert!(sites::allreduce_fits(&[0, 0, 1], &matmul_op()) && !sites::allreduce_fits(&[0, 0], &sum()));
}
