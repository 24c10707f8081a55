//! One-sided communication in one process: ranks as threads over the
//! loopback transport (`Runtime::over`). Each test checks an MPI rule of
//! chapter 12: what a fence, an unlock or MPI_Win_complete guarantees at
//! the target, that accumulates are atomic, that locks exclude, that a
//! target answers while it makes no MPI call (passive target).

mod common;

use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use common::world;
use wanmpi_runtime::{
    BasicType, Datatype, Info, LockType, Op, OriginBuf, PredefOp, Runtime, TargetSpec, WinId, COMM_WORLD, MODE_NOPRECEDE, MODE_NOSUCCEED,
};

fn i64s() -> Datatype {
    Datatype::basic(BasicType::Int64)
}

fn from<'a>(v: &i64, dt: &'a Datatype) -> OriginBuf<'a> {
    OriginBuf { ptr: (v as *const i64).cast(), count: 1, dt }
}

fn at(rank: usize, disp: i64, dt: &Datatype) -> TargetSpec<'_> {
    TargetSpec { rank: rank as i32, disp, count: 1, dt }
}

/// A window over `n` i64 slots the test owns.
fn slots(rt: &Runtime, mem: &mut [i64]) -> WinId {
    rt.win_create(mem.as_mut_ptr() as usize, mem.len() * 8, 8, Info::default(), COMM_WORLD).expect("win_create")
}

#[test]
fn fence_puts_and_gets_land_for_every_rank() {
    for n in [1u32, 2, 3, 4] {
        let out = world(n, |rt| {
            let (me, dt) = (rt.rank() as usize, i64s());
            let mut mem = vec![-1i64; n as usize];
            let w = slots(rt, &mut mem);
            rt.win_fence(w, MODE_NOPRECEDE).unwrap();
            let v = 100 + me as i64;
            for t in 0..n as usize {
                // SAFETY: `v` is packed at the call.
                unsafe { rt.put(w, from(&v, &dt), at(t, me as i64, &dt), false).unwrap() };
            }
            rt.win_fence(w, 0).unwrap();
            // The fence completed every put into `mem`.
            let after_puts = mem.clone();
            let mut got = vec![0i64; n as usize];
            for (t, g) in got.iter_mut().enumerate() {
                let into = OriginBuf { ptr: (g as *mut i64).cast_const().cast(), count: 1, dt: &dt };
                // SAFETY: `got` outlives the fence below.
                unsafe { rt.get(w, into, at(t, ((me + 1) % n as usize) as i64, &dt), false).unwrap() };
            }
            rt.win_fence(w, MODE_NOSUCCEED).unwrap();
            rt.win_free(w).unwrap();
            (after_puts, got)
        });
        for (me, (mem, got)) in out.iter().enumerate() {
            let want: Vec<i64> = (0..n as i64).map(|r| 100 + r).collect();
            assert_eq!(mem, &want, "{n} ranks: memory of rank {me}");
            assert!(got.iter().all(|&g| g == 100 + ((me as i64 + 1) % n as i64)), "{n} ranks: rank {me} got {got:?}");
        }
    }
}

#[test]
fn accumulates_under_shared_locks_are_atomic() {
    let n = 4u32;
    let rounds = 50;
    let out = world(n, |rt| {
        let dt = i64s();
        let mut mem = vec![0i64; 1];
        let w = slots(rt, &mut mem);
        let one = 1i64;
        rt.win_lock(w, LockType::Shared, 0, 0).unwrap();
        for _ in 0..rounds {
            // SAFETY: packed at the call.
            unsafe { rt.accumulate(w, from(&one, &dt), at(0, 0, &dt), &Op::Predef(PredefOp::Sum), false).unwrap() };
        }
        rt.win_unlock(w, 0).unwrap();
        rt.barrier(COMM_WORLD).unwrap();
        let mut total = 0i64;
        rt.win_lock(w, LockType::Shared, 0, 0).unwrap();
        let into = OriginBuf { ptr: (&mut total as *mut i64).cast_const().cast(), count: 1, dt: &dt };
        // SAFETY: `total` outlives the unlock.
        unsafe { rt.get(w, into, at(0, 0, &dt), false).unwrap() };
        rt.win_unlock(w, 0).unwrap();
        rt.win_free(w).unwrap();
        total
    });
    assert!(out.iter().all(|&t| t == (n * rounds) as i64), "{out:?}");
}

#[test]
fn fetch_and_op_hands_out_every_ticket_once() {
    let n = 3u32;
    let out = world(n, |rt| {
        let dt = i64s();
        let mut mem = vec![0i64; 1];
        let w = slots(rt, &mut mem);
        let mut tickets = vec![];
        for _ in 0..20 {
            let (one, mut old) = (1i64, -1i64);
            rt.win_lock(w, LockType::Exclusive, 0, 0).unwrap();
            let result = OriginBuf { ptr: (&mut old as *mut i64).cast_const().cast(), count: 1, dt: &dt };
            // SAFETY: `old` outlives the unlock.
            unsafe { rt.get_accumulate(w, Some(from(&one, &dt)), result, at(0, 0, &dt), &Op::Predef(PredefOp::Sum), false).unwrap() };
            rt.win_unlock(w, 0).unwrap();
            tickets.push(old);
        }
        rt.win_free(w).unwrap();
        tickets
    });
    let mut all: Vec<i64> = out.into_iter().flatten().collect();
    all.sort();
    assert_eq!(all, (0..60).collect::<Vec<i64>>());
}

#[test]
fn compare_and_swap_has_one_winner() {
    let out = world(4, |rt| {
        let dt = i64s();
        let mut mem = vec![0i64; 1];
        let w = slots(rt, &mut mem);
        let (mine, expect, mut old) = (rt.rank() as i64 + 1, 0i64, -1i64);
        rt.win_lock_all(w, 0).unwrap();
        // SAFETY: the three values outlive the flush.
        unsafe {
            rt.compare_and_swap(w, (&mine as *const i64).cast(), (&expect as *const i64).cast(), (&mut old as *mut i64).cast(), &dt, 0, 0).unwrap()
        };
        rt.win_flush(w, Some(0)).unwrap();
        rt.win_unlock_all(w).unwrap();
        rt.barrier(COMM_WORLD).unwrap();
        let winner = if rt.rank() == 0 { mem[0] } else { 0 };
        rt.win_free(w).unwrap();
        (old, winner)
    });
    let winners = out.iter().filter(|(old, _)| *old == 0).count();
    assert_eq!(winners, 1, "{out:?}");
    let stored = out[0].1;
    assert!(out.iter().any(|(old, _)| *old == 0) && (1..=4).contains(&stored), "{out:?}");
}

#[test]
fn post_start_complete_wait_orders_the_epoch() {
    let out = world(3, |rt| {
        let dt = i64s();
        let me = rt.rank() as usize;
        let mut mem = vec![0i64; 3];
        let w = slots(rt, &mut mem);
        let world = rt.comm_group(COMM_WORLD).unwrap();
        if me == 0 {
            let origins = world.incl(&[1, 2]).unwrap();
            rt.win_post(w, &origins, 0).unwrap();
            rt.win_wait(w, true).unwrap();
        } else {
            let target = world.incl(&[0]).unwrap();
            rt.win_start(w, &target, 0).unwrap();
            let v = 10 * me as i64;
            // SAFETY: packed at the call.
            unsafe { rt.put(w, from(&v, &dt), at(0, me as i64, &dt), false).unwrap() };
            rt.win_complete(w).unwrap();
        }
        let seen = mem.clone();
        rt.barrier(COMM_WORLD).unwrap();
        rt.win_free(w).unwrap();
        seen
    });
    assert_eq!(out[0], vec![0, 10, 20]);
}

#[test]
fn a_target_that_makes_no_mpi_call_still_answers() {
    let out = world(2, |rt| {
        let dt = i64s();
        let mut mem = vec![0i64; 1];
        let w = slots(rt, &mut mem);
        rt.ensure_progress_thread();
        rt.barrier(COMM_WORLD).unwrap();
        let took = if rt.rank() == 0 {
            // Compute (sleep) without MPI calls; rank 1 finishes meanwhile.
            thread::sleep(Duration::from_millis(600));
            Duration::ZERO
        } else {
            let t0 = Instant::now();
            let v = 42i64;
            rt.win_lock(w, LockType::Exclusive, 0, 0).unwrap();
            // SAFETY: packed at the call.
            unsafe { rt.put(w, from(&v, &dt), at(0, 0, &dt), false).unwrap() };
            rt.win_unlock(w, 0).unwrap();
            t0.elapsed()
        };
        rt.barrier(COMM_WORLD).unwrap();
        let v = mem[0];
        rt.win_free(w).unwrap();
        (took, v)
    });
    assert_eq!(out[0].1, 42);
    assert!(out[1].0 < Duration::from_millis(400), "the unlock waited for the target's next MPI call: {:?}", out[1].0);
}

#[test]
fn errors_are_mpi_errors_not_crashes() {
    world(2, |rt| {
        let dt = i64s();
        let mut mem = vec![0i64; 2];
        let w = slots(rt, &mut mem);
        let v = 1i64;
        // SAFETY: packed at the call (or refused before).
        let outside = unsafe { rt.put(w, from(&v, &dt), at(0, 0, &dt), false) };
        assert_eq!(outside.unwrap_err().class, wanmpi_runtime::ErrorClass::RmaSync, "a put outside any epoch");
        rt.win_fence(w, 0).unwrap();
        // SAFETY: as above.
        let far = unsafe { rt.put(w, from(&v, &dt), at(1, 2, &dt), false) };
        assert_eq!(far.unwrap_err().class, wanmpi_runtime::ErrorClass::RmaRange);
        // SAFETY: as above.
        let rank = unsafe { rt.put(w, from(&v, &dt), at(5, 0, &dt), false) };
        assert_eq!(rank.unwrap_err().class, wanmpi_runtime::ErrorClass::Rank);
        let user = Op::User { func: Arc::new(|_, _, _| {}), commute: true };
        // SAFETY: as above.
        let op = unsafe { rt.accumulate(w, from(&v, &dt), at(0, 0, &dt), &user, false) };
        assert_eq!(op.unwrap_err().class, wanmpi_runtime::ErrorClass::Op);
        rt.win_fence(w, 0).unwrap();
        assert_eq!(rt.win_unlock(w, 0).unwrap_err().class, wanmpi_runtime::ErrorClass::RmaSync);
        rt.win_free(w).unwrap();
    });
}

#[test]
fn allocated_and_dynamic_windows() {
    let out = world(2, |rt| {
        let dt = i64s();
        let me = rt.rank() as usize;
        let (w, base) = rt.win_allocate(16, 8, Info::default(), COMM_WORLD).unwrap();
        rt.win_fence(w, 0).unwrap();
        let v = 7 + me as i64;
        // SAFETY: packed at the call.
        unsafe { rt.put(w, from(&v, &dt), at(1 - me, 1, &dt), false).unwrap() };
        rt.win_fence(w, 0).unwrap();
        // SAFETY: 16 bytes we were given, the epoch closed.
        let got = unsafe { *(base as *const i64).add(1) };
        rt.win_free(w).unwrap();

        let d = rt.win_create_dynamic(Info::default(), COMM_WORLD).unwrap();
        let mut region = vec![0i64; 4];
        rt.win_attach(d, region.as_mut_ptr() as usize, 32).unwrap();
        let mut addr = region.as_mut_ptr() as u64;
        let mut addrs = [0u64; 2];
        let u64s = Datatype::basic(BasicType::Uint64);
        // SAFETY: one u64 each.
        unsafe {
            rt.allgather(
                Some(wanmpi_runtime::Buf::new((&mut addr as *mut u64).cast(), 1, &u64s)),
                wanmpi_runtime::Buf::new(addrs.as_mut_ptr().cast(), 1, &u64s),
                COMM_WORLD,
            )
            .unwrap()
        };
        rt.win_fence(d, 0).unwrap();
        let peer = 1 - me;
        // SAFETY: packed at the call.
        unsafe { rt.put(d, from(&v, &dt), at(peer, addrs[peer] as i64 + 16, &dt), false).unwrap() };
        rt.win_fence(d, 0).unwrap();
        let dynamic = region[2];
        rt.win_detach(d, region.as_ptr() as usize).unwrap();
        rt.win_free(d).unwrap();
        (got, dynamic)
    });
    assert_eq!(out, vec![(8, 8), (7, 7)]);
}

#[test]
fn long_puts_and_gets_through_strided_types_arrive_whole() {
    // 160 KiB each way: more than one eager-sized piece.
    const N: usize = 20_000;
    let out = world(2, |rt| {
        let dt = i64s();
        let me = rt.rank() as usize;
        let mut mem = vec![0i64; 2 * N];
        let w = slots(rt, &mut mem);
        // Every other slot of the target, from a contiguous origin buffer.
        let every2 = Datatype::vector(N, 1, 2, &dt).unwrap();
        every2.commit();
        let src: Vec<i64> = (0..N as i64).map(|i| i * 3 + me as i64).collect();
        let mut back = vec![0i64; N];
        rt.win_fence(w, 0).unwrap();
        let peer = 1 - me;
        let t = TargetSpec { rank: peer as i32, disp: 1, count: 1, dt: &every2 };
        // SAFETY: packed at the call.
        unsafe { rt.put(w, OriginBuf { ptr: src.as_ptr().cast(), count: N, dt: &dt }, t, false).unwrap() };
        rt.win_fence(w, 0).unwrap();
        let into = OriginBuf { ptr: back.as_mut_ptr().cast_const().cast(), count: N, dt: &dt };
        // SAFETY: `back` outlives the fence below.
        unsafe { rt.get(w, into, TargetSpec { rank: peer as i32, disp: 1, count: 1, dt: &every2 }, false).unwrap() };
        rt.win_fence(w, 0).unwrap();
        let odd_ok = (0..N).all(|i| mem[2 * i + 1] == (i as i64) * 3 + peer as i64 && mem[2 * i] == 0);
        rt.win_free(w).unwrap();
        (odd_ok, back == (0..N as i64).map(|i| i * 3 + me as i64).collect::<Vec<i64>>())
    });
    assert_eq!(out, vec![(true, true), (true, true)]);
}
