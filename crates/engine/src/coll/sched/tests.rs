//! Schedules run on threads over a nonblocking channel port, against the
//! blocking algorithms and references; several outstanding at once.

use std::collections::VecDeque;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::thread;
use std::time::{Duration, Instant};

use super::{allreduce, barrier, bcast, Port, Run, Schedule};
use crate::coll::comm::CollError;
use crate::coll::tests::{data, ints, mat_bytes, matmul_op, product_of, rank_ints, rank_mats, read_ints, sum, sum_of, MAT_TY, SIZES};
use crate::coll::CollComm;
use crate::datatype::BasicType;
use crate::op::{Op, PredefOp};

/// How long a test waits for a schedule before declaring it hung.
const LIMIT: Duration = Duration::from_secs(20);

type Wire = (usize, i32, Vec<u8>);

/// A posted receive: (peer, tag, length), filled once matched.
struct Slot {
    peer: usize,
    tag: i32,
    data: Option<Vec<u8>>,
}

/// Nonblocking point-to-point over channels: receives match arrivals in
/// posting order per (peer, tag), like the engine's matching.
pub(super) struct ChanPort {
    rank: usize,
    peers: Vec<Sender<Wire>>,
    inbox: Receiver<Wire>,
    unexpected: VecDeque<Wire>,
    slots: Vec<Slot>,
}

pub(super) enum Handle {
    Send,
    Recv(usize),
}

impl ChanPort {
    fn deliver(&mut self, w: Wire) {
        match self.slots.iter_mut().find(|s| s.data.is_none() && (s.peer, s.tag) == (w.0, w.1)) {
            Some(s) => s.data = Some(w.2),
            None => self.unexpected.push_back(w),
        }
    }
}

impl Port for ChanPort {
    type Handle = Handle;

    fn isend(&mut self, data: Vec<u8>, peer: usize, tag: i32) -> Result<Handle, CollError> {
        self.peers[peer].send((self.rank, tag, data)).map_err(|_| CollError::Comm(format!("rank {peer} is gone")))?;
        Ok(Handle::Send)
    }

    fn irecv(&mut self, _len: usize, peer: usize, tag: i32) -> Result<Handle, CollError> {
        let early = self.unexpected.iter().position(|w| (w.0, w.1) == (peer, tag));
        let data = early.and_then(|i| self.unexpected.remove(i)).map(|w| w.2);
        self.slots.push(Slot { peer, tag, data });
        Ok(Handle::Recv(self.slots.len() - 1))
    }

    fn test(&mut self, h: &mut Handle) -> Result<Option<Vec<u8>>, CollError> {
        while let Ok(w) = self.inbox.try_recv() {
            self.deliver(w);
        }
        Ok(match h {
            Handle::Send => Some(Vec::new()),
            // A taken slot can never match again.
            Handle::Recv(i) => {
                let s = &mut self.slots[*i];
                if s.data.is_some() {
                    s.peer = usize::MAX;
                }
                s.data.take()
            }
        })
    }
}

/// Runs `f` on `size` ranks, one thread each, with a fresh port.
pub(super) fn run<T: Send>(size: usize, f: impl Fn(usize, &mut ChanPort) -> T + Sync) -> Vec<T> {
    let (senders, inboxes): (Vec<_>, Vec<_>) = (0..size).map(|_| channel::<Wire>()).unzip();
    let f = &f;
    thread::scope(|s| {
        let hs: Vec<_> = inboxes
            .into_iter()
            .enumerate()
            .map(|(rank, inbox)| {
                let peers = senders.clone();
                s.spawn(move || {
                    let mut p = ChanPort { rank, peers, inbox, unexpected: VecDeque::new(), slots: Vec::new() };
                    let out = f(rank, &mut p);
                    while let Ok(w) = p.inbox.try_recv() {
                        p.deliver(w);
                    }
                    assert!(p.unexpected.is_empty(), "rank {rank}: messages never received");
                    out
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().expect("rank thread panicked")).collect()
    })
}

/// Progresses all of `runs` round-robin (in the order of `order`) until
/// done; returns each schedule's result buffer.
pub(super) fn finish(p: &mut ChanPort, scheds: Vec<Schedule>, order: &[usize]) -> Vec<Vec<u8>> {
    let mut runs: Vec<Run<Handle>> = scheds.into_iter().map(Run::new).collect();
    let start = Instant::now();
    loop {
        let mut all = true;
        for &i in order {
            all &= runs[i].progress(p).expect("progress");
        }
        if all {
            break;
        }
        assert!(start.elapsed() < LIMIT, "rank {}: schedules hung", p.rank);
        thread::yield_now();
    }
    runs.into_iter().map(|r| r.into_bufs().swap_remove(0)).collect()
}

pub(super) fn one(p: &mut ChanPort, s: Schedule) -> Vec<u8> {
    finish(p, vec![s], &[0]).swap_remove(0)
}

#[test]
fn barrier_lets_nobody_through_early() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    for size in 1..=9 {
        let arrived = AtomicUsize::new(0);
        let seen = run(size, |rank, p| {
            if rank == size - 1 {
                thread::sleep(Duration::from_millis(5));
            }
            arrived.fetch_add(1, Ordering::SeqCst);
            one(p, barrier(rank, size, 0));
            arrived.load(Ordering::SeqCst)
        });
        assert!(seen.iter().all(|&s| s == size), "size {size}: {seen:?}");
        let log = size.next_power_of_two().trailing_zeros() as usize;
        assert_eq!(barrier(0, size, 0).rounds(), log);
    }
}

#[test]
fn bcast_delivers_the_roots_bytes_from_every_root() {
    for size in 1..=9 {
        for root in 0..size {
            let out = run(size, |rank, p| {
                let buf = if rank == root { data(root, 37, 1) } else { vec![0; 37] };
                one(p, bcast(rank, size, buf, root, 3).unwrap())
            });
            assert!(out.iter().all(|b| *b == data(root, 37, 1)), "size {size} root {root}");
        }
    }
}

#[test]
fn allreduce_equals_the_blocking_algorithm() {
    let ops = [PredefOp::Sum, PredefOp::Max, PredefOp::Prod, PredefOp::Bxor, PredefOp::Min];
    for size in 1..=9 {
        for op in ops {
            let op = Op::Predef(op);
            let blocking = crate::coll::testing::run(size, |c| {
                let mut r = ints(&rank_ints(c.rank(), 5));
                crate::coll::allreduce(c, None, &mut r, 5, BasicType::Int, &op).unwrap();
                r
            });
            let sched = run(size, |rank, p| one(p, allreduce(rank, size, ints(&rank_ints(rank, 5)), 5, BasicType::Int, &op, 7).unwrap()));
            for (r, (b, s)) in blocking.iter().zip(&sched).enumerate() {
                assert_eq!(&b.0, s, "size {size} {op:?} rank {r}");
            }
        }
        // Doubles: the same combining order gives the same bits.
        let dbl = |rank: usize| -> Vec<u8> { (0..3).flat_map(|i| (0.1 * (rank * 3 + i) as f64 + 1e-9).to_ne_bytes()).collect() };
        let blocking = crate::coll::testing::run(size, |c| {
            let mut r = dbl(c.rank());
            crate::coll::allreduce(c, None, &mut r, 3, BasicType::Double, &sum()).unwrap();
            r
        });
        let sched = run(size, |rank, p| one(p, allreduce(rank, size, dbl(rank), 3, BasicType::Double, &sum(), 0).unwrap()));
        assert!(blocking.iter().zip(&sched).all(|(b, s)| &b.0 == s), "size {size} doubles");
    }
}

#[test]
fn allreduce_keeps_rank_order_for_non_commutative_ops() {
    for size in 1..=9 {
        let out = run(size, |rank, p| one(p, allreduce(rank, size, mat_bytes(&rank_mats(rank, 2)), 8, MAT_TY, &matmul_op(), 1).unwrap()));
        assert!(out.iter().all(|b| *b == mat_bytes(&product_of(0..size, 2))), "size {size}");
    }
}

/// Several collectives outstanding on one communicator, started in the
/// same order everywhere (their numbers) but progressed in a different
/// order on each rank: none takes another's messages.
#[test]
fn outstanding_schedules_progressed_in_any_order_stay_apart() {
    for size in SIZES.into_iter().chain([5, 9]) {
        let out = run(size, |rank, p| {
            // Same families, same peers, different data: a mix-up shows.
            let twice = |r: usize| ints(&rank_ints(r, 4).iter().map(|v| v.wrapping_mul(3)).collect::<Vec<_>>());
            let scheds = vec![
                allreduce(rank, size, ints(&rank_ints(rank, 4)), 4, BasicType::Int, &sum(), 10).unwrap(),
                bcast(rank, size, if rank == 0 { data(0, 9, 2) } else { vec![0; 9] }, 0, 11).unwrap(),
                allreduce(rank, size, twice(rank), 4, BasicType::Int, &sum(), 12).unwrap(),
                barrier(rank, size, 13),
                bcast(rank, size, if rank == 0 { data(5, 9, 3) } else { vec![0; 9] }, 0, 14).unwrap(),
            ];
            let order: Vec<usize> = if rank.is_multiple_of(2) { vec![0, 1, 2, 3, 4] } else { vec![4, 3, 2, 1, 0] };
            finish(p, scheds, &order)
        });
        let want = sum_of(0..size, 4);
        let want3: Vec<i32> = want.iter().map(|v| v.wrapping_mul(3)).collect();
        for (r, res) in out.iter().enumerate() {
            assert_eq!(read_ints(&res[0]), want, "size {size} rank {r}");
            assert_eq!(res[1], data(0, 9, 2), "size {size} rank {r}");
            assert_eq!(read_ints(&res[2]), want3, "size {size} rank {r}");
            assert_eq!(res[4], data(5, 9, 3), "size {size} rank {r}");
        }
    }
}

#[test]
fn a_short_message_is_a_length_error_not_a_hang() {
    let out = run(2, |rank, p| {
        let s = bcast(rank, 2, vec![0; if rank == 0 { 8 } else { 4 }], 0, 0).unwrap();
        let mut r: Run<Handle> = Run::new(s);
        let start = Instant::now();
        loop {
            match r.progress(p) {
                Ok(true) => return None,
                Ok(false) => {}
                Err(e) => return Some(e),
            }
            assert!(start.elapsed() < LIMIT);
            thread::yield_now();
        }
    });
    assert_eq!(out[0], None);
    assert_eq!(out[1], Some(CollError::LengthMismatch { peer: 0, expected: 4, got: 8 }));
}

#[test]
fn bad_arguments_are_refused_before_anything_moves() {
    assert!(matches!(bcast(0, 3, vec![], 3, 0), Err(CollError::BadArgument(_))));
    assert!(matches!(allreduce(0, 2, vec![0; 3], 1, BasicType::Int, &sum(), 0), Err(CollError::BadArgument(_))));
}
