//! Two jobs in one process join (MPI_Open_port / MPI_Comm_accept /
//! MPI_Comm_connect): each job's ranks are threads over its own loopback
//! transport, and the joint transport between the jobs is real tcp over
//! loopback, set up through the two groups' roots.

use std::sync::mpsc;
use std::sync::Arc;
use std::thread;

use wanmpi_runtime::{BasicType, Buf, Datatype, Op, PredefOp, Runtime, RuntimeOptions, SendMode, COMM_SELF, COMM_WORLD};
use wanmpi_transport::loopback_world;

fn i64s() -> Datatype {
    Datatype::basic(BasicType::Int64)
}

/// Runs job A (`na` ranks) and job B (`nb` ranks) at once; A's rank 0
/// hands B's rank 0 strings (port names) over a channel.
fn two_jobs<TA: Send, TB: Send>(
    na: u32,
    nb: u32,
    a: impl Fn(&Arc<Runtime>, Option<mpsc::Sender<String>>) -> TA + Sync,
    b: impl Fn(&Arc<Runtime>, Option<&mpsc::Receiver<String>>) -> TB + Sync,
) -> (Vec<TA>, Vec<TB>) {
    let (tx, rx) = mpsc::channel::<String>();
    let (a, b) = (&a, &b);
    let rx = std::sync::Mutex::new(Some(rx));
    let rx = &rx;
    thread::scope(|s| {
        let ha: Vec<_> = loopback_world(na, 4)
            .into_iter()
            .map(|t| {
                let tx = tx.clone();
                s.spawn(move || {
                    let opts = RuntimeOptions { job: Some("job A".into()), ..RuntimeOptions::default() };
                    let rt = Runtime::over(Box::new(t), opts).expect("runtime A");
                    let out = a(&rt, (rt.rank() == 0).then_some(tx));
                    rt.finalize().expect("finalize A");
                    out
                })
            })
            .collect();
        drop(tx);
        let hb: Vec<_> = loopback_world(nb, 4)
            .into_iter()
            .map(|t| {
                s.spawn(move || {
                    let opts = RuntimeOptions { job: Some("job B".into()), ..RuntimeOptions::default() };
                    let rt = Runtime::over(Box::new(t), opts).expect("runtime B");
                    let names = (rt.rank() == 0).then(|| rx.lock().unwrap().take().unwrap());
                    let out = b(&rt, names.as_ref());
                    rt.finalize().expect("finalize B");
                    out
                })
            })
            .collect();
        (ha.into_iter().map(|h| h.join().expect("A")).collect(), hb.into_iter().map(|h| h.join().expect("B")).collect())
    })
}

fn send_i64(rt: &Runtime, v: i64, dest: i32, tag: i32, comm: wanmpi_runtime::CommId) {
    // SAFETY: `v` lives across the blocking send.
    unsafe { rt.send(&v as *const i64 as *const u8, 1, &i64s(), dest, tag, comm, SendMode::Standard) }.expect("send");
}

fn recv_i64(rt: &Runtime, source: i32, tag: i32, comm: wanmpi_runtime::CommId) -> i64 {
    let mut v = 0i64;
    // SAFETY: `v` lives across the blocking receive.
    unsafe { rt.recv(&mut v as *mut i64 as *mut u8, 1, &i64s(), source, tag, comm) }.expect("recv");
    v
}

#[test]
fn accept_and_connect_make_an_inter_communicator_that_carries_messages_and_merges() {
    let (a, b) = two_jobs(
        2,
        3,
        |rt, tx| {
            let port = tx.map(|tx| {
                let p = rt.open_port().expect("open port");
                assert!(p.starts_with("wanmpi-port:1:127.0.0.1:"), "{p}");
                tx.send(p.clone()).unwrap();
                p
            });
            let inter = rt.comm_accept(port.as_deref(), 0, COMM_WORLD).expect("accept");
            assert_eq!((rt.comm_size(inter).unwrap(), rt.comm_peer_size(inter).unwrap()), (2, 3));
            // Each A rank sends to B rank (its rank + 1), then hears back.
            let me = rt.rank() as i64;
            send_i64(rt, 100 + me, me as i32 + 1, 7, inter);
            let back = recv_i64(rt, me as i32 + 1, 8, inter);
            // Merged, A (low) comes first.
            let merged = rt.intercomm_merge(inter, false).expect("merge");
            let mut sum = [0i64];
            let mine = [rt.comm_rank(merged).unwrap() as i64];
            unsafe {
                rt.allreduce(Some(mine.as_ptr() as *const u8), Buf::new(sum.as_mut_ptr() as *mut u8, 1, &i64s()), &Op::Predef(PredefOp::Sum), merged)
            }
            .expect("allreduce");
            if let Some(p) = port {
                rt.close_port(&p).expect("close");
                assert!(rt.close_port(&p).is_err(), "a closed port is gone");
            }
            (back, rt.comm_rank(merged).unwrap(), sum[0])
        },
        |rt, names| {
            let name = names.map(|n| n.recv().expect("port name"));
            let inter = rt.comm_connect(name.as_deref(), 0, COMM_WORLD).expect("connect");
            assert_eq!((rt.comm_size(inter).unwrap(), rt.comm_peer_size(inter).unwrap()), (3, 2));
            let me = rt.rank() as i32;
            if me >= 1 {
                let got = recv_i64(rt, me - 1, 7, inter);
                send_i64(rt, got * 10, me - 1, 8, inter);
            }
            let merged = rt.intercomm_merge(inter, true).expect("merge");
            let mut sum = [0i64];
            let mine = [rt.comm_rank(merged).unwrap() as i64];
            unsafe {
                rt.allreduce(Some(mine.as_ptr() as *const u8), Buf::new(sum.as_mut_ptr() as *mut u8, 1, &i64s()), &Op::Predef(PredefOp::Sum), merged)
            }
            .expect("allreduce");
            (rt.comm_rank(merged).unwrap(), sum[0])
        },
    );
    assert_eq!(a, vec![(1000, 0, 10), (1010, 1, 10)]);
    assert_eq!(b, vec![(2, 10), (3, 10), (4, 10)]);
}

#[test]
fn a_wrong_port_name_fails_in_every_rank_of_the_group_with_a_port_error() {
    let (_, b) = two_jobs(
        1,
        2,
        |_, tx| {
            tx.unwrap().send("wanmpi-port:1:127.0.0.1:1:00".into()).unwrap();
        },
        |rt, names| {
            let name = names.map(|n| n.recv().expect("port name"));
            rt.comm_connect(name.as_deref(), 0, COMM_WORLD).map(|_| ()).map_err(|e| (e.class, e.msg))
        },
    );
    for r in b {
        let (class, msg) = r.expect_err("nothing listens there");
        assert_eq!(class, wanmpi_engine::ErrorClass::Port, "{msg}");
        assert!(msg.contains("not a wanmpi port name") || msg.contains("refused") || msg.contains("onnect"), "{msg}");
    }
}

/// A port name holds its secret: no error shows more than `host:port`.
#[test]
fn a_failing_connect_names_the_port_without_its_secret() {
    let (_, b) = two_jobs(
        1,
        2,
        |rt, tx| {
            // A port that existed and is closed: nothing listens there now.
            let p = rt.open_port().expect("open");
            rt.close_port(&p).expect("close");
            let e = rt.close_port(&p).expect_err("closed twice");
            assert!(!e.msg.contains(p.rsplit(':').next().unwrap()), "{}", e.msg);
            tx.unwrap().send(p).unwrap();
        },
        |rt, names| {
            let name = names.map(|n| n.recv().expect("port name"));
            let r = rt.comm_connect(name.as_deref(), 0, COMM_WORLD).map(|_| ()).map_err(|e| e.msg);
            (name, r)
        },
    );
    let secret = b[0].0.as_deref().expect("root had the name").rsplit(':').next().unwrap().to_string();
    assert_eq!(secret.len(), 64);
    for (_, r) in b {
        let msg = r.expect_err("nothing listens there");
        assert!(!msg.contains(&secret[..16]), "the error shows the port's secret: {msg}");
    }
}

#[test]
fn joins_repeat_and_each_inter_communicator_keeps_its_own_peers() {
    let (a, b) = two_jobs(
        1,
        1,
        |rt, tx| {
            let tx = tx.unwrap();
            let mut inters = vec![];
            for round in 0..3 {
                let p = rt.open_port().unwrap();
                tx.send(p.clone()).unwrap();
                inters.push(rt.comm_accept(Some(&p), 0, COMM_SELF).expect("accept"));
                rt.close_port(&p).unwrap();
                send_i64(rt, round, 0, 1, inters[round as usize]);
            }
            // Answers come back on each round's own communicator.
            inters.iter().rev().map(|c| recv_i64(rt, 0, 2, *c)).collect::<Vec<_>>()
        },
        |rt, names| {
            let names = names.unwrap();
            let mut inters = vec![];
            for _ in 0..3 {
                let p = names.recv().unwrap();
                let c = rt.comm_connect(Some(&p), 0, COMM_SELF).expect("connect");
                let v = recv_i64(rt, 0, 1, c);
                inters.push((c, v));
            }
            for (c, v) in &inters {
                send_i64(rt, v + 100, 0, 2, *c);
            }
            inters.len()
        },
    );
    assert_eq!(a, vec![vec![102, 101, 100]]);
    assert_eq!(b, vec![3]);
}

#[test]
fn intercomm_create_across_joined_jobs_names_processes_by_job_and_refuses_strangers() {
    let (a, b) = two_jobs(
        2,
        2,
        |rt, tx| {
            let open = || {
                tx.as_ref().map(|tx| {
                    let p = rt.open_port().unwrap();
                    tx.send(p.clone()).unwrap();
                    p
                })
            };
            // Only the roots join: each job's rank 1 is a stranger to the other job.
            let port = open();
            let roots = port.as_ref().map(|p| rt.comm_accept(Some(p), 0, COMM_SELF).expect("accept roots"));
            let refused = rt.intercomm_create(COMM_WORLD, 0, roots.unwrap_or(COMM_WORLD), 0, 14).map(|_| ()).map_err(|e| e.class);
            // Whole groups join: every A process knows every B process.
            let port = open();
            let inter = rt.comm_accept(port.as_deref(), 0, COMM_WORLD).expect("accept");
            let again = rt.intercomm_create(COMM_WORLD, 0, inter, 0, 11).expect("intercomm_create over joined processes");
            let me = rt.rank() as i64;
            send_i64(rt, me, me as i32, 12, again);
            (recv_i64(rt, me as i32, 13, again), refused)
        },
        |rt, names| {
            let next = || names.map(|n| n.recv().unwrap());
            let roots = next().map(|p| rt.comm_connect(Some(&p), 0, COMM_SELF).expect("connect roots"));
            let refused = rt.intercomm_create(COMM_WORLD, 0, roots.unwrap_or(COMM_WORLD), 0, 14).map(|_| ()).map_err(|e| e.class);
            let inter = rt.comm_connect(next().as_deref(), 0, COMM_WORLD).expect("connect");
            let again = rt.intercomm_create(COMM_WORLD, 0, inter, 0, 11).expect("intercomm_create over joined processes");
            let me = rt.rank() as i64;
            let got = recv_i64(rt, me as i32, 12, again);
            send_i64(rt, got + 10, me as i32, 13, again);
            (got, refused)
        },
    );
    let group_error = Err(wanmpi_engine::ErrorClass::Group);
    assert_eq!(a, vec![(10, group_error), (11, group_error)]);
    assert_eq!(b, vec![(0, group_error), (1, group_error)]);
}
