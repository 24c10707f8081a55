//! MPI_Comm_idup in one process (ranks as threads): the agreement on the
//! duplicate's context runs in the background, so ranks may post it at
//! different times and create other communicators meanwhile, and every
//! new communicator gets a context of its own.

mod common;

use common::world;
use wanmpi_runtime::{BasicType, CommId, Datatype, Runtime, SendMode, COMM_WORLD};

fn int() -> Datatype {
    Datatype::basic(BasicType::Int32)
}

fn send(rt: &Runtime, v: i32, to: usize, comm: CommId, mode: SendMode) {
    // SAFETY: `v` lives through the blocking send.
    unsafe { rt.send(&v as *const i32 as *const u8, 1, &int(), to as i32, 0, comm, mode) }.expect("send");
}

fn recv(rt: &Runtime, from: usize, comm: CommId) -> i32 {
    let mut v = -1i32;
    // SAFETY: `v` lives through the blocking receive.
    unsafe { rt.recv(&mut v as *mut i32 as *mut u8, 1, &int(), from as i32, 0, comm) }.expect("recv");
    v
}

#[test]
fn idups_posted_at_different_times_beside_blocking_creations_get_contexts_of_their_own() {
    for n in [2u32, 3, 4] {
        let out = world(n, |rt| {
            let (me, n) = (rt.rank() as usize, n as usize);
            let mut comms = Vec::new();
            let mut reqs = Vec::new();
            // Rank 0 posts its idups only once every other rank posted
            // theirs and finished a synchronous send to it: a blocking
            // agreement inside the call would deadlock here.
            if me == 0 {
                for r in 1..n {
                    assert_eq!(recv(rt, r, COMM_WORLD), r as i32);
                }
            }
            for _ in 0..3 {
                let (c, r) = rt.comm_idup(COMM_WORLD, None).expect("idup");
                comms.push(c);
                reqs.push(r);
            }
            if me != 0 {
                send(rt, me as i32, 0, COMM_WORLD, SendMode::Synchronous);
            }
            // Blocking creations on the same parent while the idups run.
            comms.push(rt.comm_dup(COMM_WORLD).expect("dup"));
            comms.push(rt.comm_split(COMM_WORLD, 0, me as i32).expect("split").expect("member"));
            for r in reqs {
                assert_eq!(rt.wait(r).expect("wait").status.error, None);
            }
            // The same tag on every communicator, received in the reverse
            // order: a shared context would hand over the wrong value.
            let (to, from) = ((me + 1) % n, (me + n - 1) % n);
            let sent: Vec<_> = comms
                .iter()
                .enumerate()
                // SAFETY: the values are boxed and outlive the waits below.
                .map(|(i, &c)| {
                    let v = Box::new(100 * i as i32 + me as i32);
                    let r = unsafe { rt.isend(&*v as *const i32 as *const u8, 1, &int(), to as i32, 0, c, SendMode::Standard) }.expect("isend");
                    (v, r)
                })
                .collect();
            let got: Vec<i32> = comms.iter().rev().map(|&c| recv(rt, from, c)).collect();
            for (_, r) in sent {
                rt.wait(r).expect("wait send");
            }
            let want: Vec<i32> = (0..comms.len()).rev().map(|i| 100 * i as i32 + from as i32).collect();
            (got, want)
        });
        for (got, want) in out {
            assert_eq!(got, want, "{n} ranks");
        }
    }
}

/// One rank creates a communicator (blocking) while its idup is pending;
/// the other waits for the idup before it joins that creation. The
/// blocking agreement holds nothing while it waits for the late rank, so
/// the idup completes meanwhile instead of both waiting on each other.
#[test]
fn an_idup_completes_while_a_member_blocks_in_another_creation() {
    let out = world(2, |rt| {
        let other = rt.comm_dup(COMM_WORLD).expect("dup");
        let (dup, r) = rt.comm_idup(COMM_WORLD, None).expect("idup");
        let made = if rt.rank() == 0 {
            let made = rt.comm_dup(other).expect("dup while the idup runs");
            assert_eq!(rt.wait(r).expect("wait").status.error, None);
            made
        } else {
            assert_eq!(rt.wait(r).expect("wait").status.error, None);
            rt.comm_dup(other).expect("dup after the idup")
        };
        // Both new communicators work and are told apart.
        let me = rt.rank() as usize;
        let peer = 1 - me;
        let v = Box::new(10 + me as i32);
        // SAFETY: `v` outlives the wait below.
        let s = unsafe { rt.isend(&*v as *const i32 as *const u8, 1, &int(), peer as i32, 0, dup, SendMode::Standard) }.expect("isend");
        send(rt, 20 + me as i32, peer, made, SendMode::Standard);
        let (a, b) = (recv(rt, peer, made), recv(rt, peer, dup));
        rt.wait(s).expect("wait send");
        (a, b, peer as i32)
    });
    for (a, b, peer) in out {
        assert_eq!((a, b), (20 + peer, 10 + peer));
    }
}
