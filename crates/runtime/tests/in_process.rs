//! The runtime in one process: a runtime per thread over the loopback
//! transport (`Runtime::over`), no launcher and no sockets, so the
//! runtime's own logic (request kinds, schedules, communicator creation)
//! is tested directly. Multi-process runs over real transports are in the
//! conformance suites.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use common::world;
use wanmpi_runtime::{BasicType, Buf, Datatype, Generalized, Op, PredefOp, Req, Runtime, Status, COMM_WORLD};

fn sum() -> Op {
    Op::Predef(PredefOp::Sum)
}

fn i64s() -> Datatype {
    Datatype::basic(BasicType::Int64)
}

fn wait_ok(rt: &Runtime, r: Req) {
    let c = rt.wait(r).expect("wait");
    assert_eq!(c.status.error, None);
}

#[test]
fn nonblocking_collectives_outstanding_together_complete_in_any_order() {
    for n in [1, 2, 3, 5] {
        let out = world(n, |rt| {
            let dt = i64s();
            let me = rt.rank() as i64;
            let mine = [me + 1, 10 * (me + 1)];
            let (mut total, mut from0) = ([0i64; 2], if me == 0 { [7i64, 8] } else { [0; 2] });
            // SAFETY: the buffers outlive the waits below.
            let reqs = unsafe {
                vec![
                    rt.iallreduce(Some(mine.as_ptr() as *const u8), Buf::new(total.as_mut_ptr() as *mut u8, 2, &dt), &sum(), COMM_WORLD, false)
                        .unwrap(),
                    rt.ibarrier(COMM_WORLD, false).unwrap(),
                    rt.ibcast(Buf::new(from0.as_mut_ptr() as *mut u8, 2, &dt), 0, COMM_WORLD, false).unwrap(),
                ]
            };
            let order: Vec<usize> = if me % 2 == 0 { vec![0, 1, 2] } else { vec![2, 1, 0] };
            for i in order {
                wait_ok(rt, reqs[i]);
            }
            (total, from0)
        });
        let t: i64 = (1..=n as i64).sum();
        assert!(out.iter().all(|(total, b)| *total == [t, 10 * t] && *b == [7, 8]), "{n} ranks: {out:?}");
    }
}

#[test]
fn a_freed_collective_still_completes_for_its_peers() {
    let out = world(3, |rt| {
        let dt = i64s();
        let mine = [rt.rank() as i64];
        let mut a = [0i64];
        // SAFETY: `a` and `mine` outlive the closing barrier, by which the freed request finished.
        let r = unsafe { rt.iallreduce(Some(mine.as_ptr() as *const u8), Buf::new(a.as_mut_ptr() as *mut u8, 1, &dt), &sum(), COMM_WORLD, false) }
            .unwrap();
        if rt.rank() == 0 {
            rt.request_free(r).unwrap();
        } else {
            wait_ok(rt, r);
        }
        // The next collective on the communicator is numbered the same everywhere.
        let mut b = [0i64];
        let r = unsafe { rt.iallreduce(Some(mine.as_ptr() as *const u8), Buf::new(b.as_mut_ptr() as *mut u8, 1, &dt), &sum(), COMM_WORLD, false) }
            .unwrap();
        wait_ok(rt, r);
        (rt.rank(), a[0], b[0])
    });
    for (rank, a, b) in out {
        assert_eq!(b, 3);
        if rank != 0 {
            assert_eq!(a, 3);
        }
    }
}

#[test]
fn a_persistent_collective_reads_its_input_at_each_start() {
    let out = world(4, |rt| {
        let dt = i64s();
        let mut mine = [0i64];
        let mut total = [0i64];
        // SAFETY: both buffers live until the request is freed below.
        let r = unsafe { rt.iallreduce(Some(mine.as_ptr() as *const u8), Buf::new(total.as_mut_ptr() as *mut u8, 1, &dt), &sum(), COMM_WORLD, true) }
            .unwrap();
        let mut seen = vec![];
        for round in 1..=3i64 {
            mine[0] = round * (rt.rank() as i64 + 1);
            unsafe { rt.start(r) }.unwrap();
            let c = rt.wait(r).unwrap();
            assert!(c.persistent);
            seen.push(total[0]);
        }
        rt.request_free(r).unwrap();
        seen
    });
    assert!(out.iter().all(|s| *s == vec![10, 20, 30]), "{out:?}");
}

#[test]
fn isendrecv_replace_passes_a_ring_in_place() {
    let out = world(4, |rt| {
        let dt = i64s();
        let (me, n) = (rt.rank() as i32, rt.size() as i32);
        let mut buf = [me as i64 * 100, me as i64 * 100 + 1];
        // SAFETY: `buf` outlives the wait.
        let r = unsafe { rt.isendrecv_replace(buf.as_mut_ptr() as *mut u8, 2, &dt, (me + 1) % n, 3, (me + n - 1) % n, 3, COMM_WORLD) }.unwrap();
        let c = rt.wait(r).unwrap();
        (me, buf, c.status.source)
    });
    for (me, buf, source) in out {
        let left = (me + 3) % 4;
        assert_eq!(buf, [left as i64 * 100, left as i64 * 100 + 1]);
        assert_eq!(source, left);
    }
}

#[test]
fn collectives_on_an_inter_communicator_reduce_the_other_group() {
    let out = world(5, |rt| {
        let me = rt.rank() as i32;
        let even = me % 2 == 0;
        let local = rt.comm_split(COMM_WORLD, i32::from(!even), me).unwrap().expect("a color");
        let inter = rt.intercomm_create(local, 0, COMM_WORLD, if even { 1 } else { 0 }, 9).unwrap();
        let dt = i64s();
        let mine = [me as i64];
        let mut theirs = [0i64];
        // SAFETY: buffers outlive the call.
        unsafe { rt.allreduce(Some(mine.as_ptr() as *const u8), Buf::new(theirs.as_mut_ptr() as *mut u8, 1, &dt), &sum(), inter) }.unwrap();
        (even, theirs[0])
    });
    for (even, got) in out {
        // Evens 0+2+4 = 6, odds 1+3 = 4: each side gets the other's sum.
        assert_eq!(got, if even { 4 } else { 6 });
    }
}

#[test]
fn a_generalized_request_completes_when_the_program_says() {
    world(1, |rt| {
        let freed = Arc::new(AtomicUsize::new(0));
        let f = Arc::clone(&freed);
        let g = Generalized {
            complete: false,
            query: Box::new(|| Status { source: 4, tag: 5, bytes: 6, error: None, cancelled: false }),
            free: Some(Box::new(move || {
                f.fetch_add(1, Ordering::SeqCst);
                None
            })),
            cancel: Box::new(|_| None),
        };
        let r = rt.grequest_start(g);
        assert_eq!(rt.test(r).unwrap(), None);
        rt.grequest_complete(r).unwrap();
        let c = rt.wait(r).unwrap();
        assert_eq!((c.status.source, c.status.tag, c.status.bytes), (4, 5, 6));
        assert_eq!(freed.load(Ordering::SeqCst), 1);
        assert!(rt.grequest_complete(r).is_err(), "completing a finished request again is an error");
    });
}

#[test]
fn persistent_collectives_match_in_init_order_whatever_the_start_order() {
    let out = world(3, |rt| {
        let dt = i64s();
        let (a_in, b_in) = ([1i64], [100i64]);
        let (mut a, mut b) = ([0i64], [0i64]);
        // SAFETY: the buffers live until the requests are freed below.
        let ra = unsafe { rt.iallreduce(Some(a_in.as_ptr() as *const u8), Buf::new(a.as_mut_ptr() as *mut u8, 1, &dt), &sum(), COMM_WORLD, true) }
            .unwrap();
        let rb = unsafe { rt.iallreduce(Some(b_in.as_ptr() as *const u8), Buf::new(b.as_mut_ptr() as *mut u8, 1, &dt), &sum(), COMM_WORLD, true) }
            .unwrap();
        let order = if rt.rank() % 2 == 0 { [ra, rb] } else { [rb, ra] };
        for r in order {
            unsafe { rt.start(r) }.unwrap();
        }
        for r in order {
            rt.wait(r).unwrap();
        }
        rt.request_free(ra).unwrap();
        rt.request_free(rb).unwrap();
        (a[0], b[0])
    });
    assert!(out.iter().all(|&v| v == (3, 300)), "{out:?}");
}

#[test]
fn comm_create_on_an_inter_communicator_pairs_the_two_subgroups() {
    let out = world(5, |rt| {
        let me = rt.rank() as i32;
        let even = me % 2 == 0;
        let local = rt.comm_split(COMM_WORLD, i32::from(!even), me).unwrap().expect("a color");
        let inter = rt.intercomm_create(local, 0, COMM_WORLD, if even { 1 } else { 0 }, 9).unwrap();
        // Each side keeps its first two ranks (world ranks 0, 2 and 1, 3).
        let mine = rt.comm_group(local).unwrap();
        let sub = wanmpi_runtime::Group::new(mine.members()[..2].to_vec());
        let Some(c) = rt.comm_create(inter, &sub).unwrap() else { return (me, None) };
        let dt = i64s();
        let (v, mut got) = ([me as i64], [0i64]);
        // SAFETY: buffers outlive the call.
        unsafe { rt.allreduce(Some(v.as_ptr() as *const u8), Buf::new(got.as_mut_ptr() as *mut u8, 1, &dt), &sum(), c) }.unwrap();
        (me, Some((rt.comm_peer_size(c).unwrap(), got[0])))
    });
    for (me, r) in out {
        match me {
            0 | 2 => assert_eq!(r, Some((2, 1 + 3)), "rank {me}"),
            1 | 3 => assert_eq!(r, Some((2, 2)), "rank {me}"),
            _ => assert_eq!(r, None, "rank {me} is outside both subgroups"),
        }
    }
}
