//! A peer process killed with SIGKILL is reported lost, by pid, within
//! seconds, and leaves nothing in /dev/shm; a peer that shuts down is
//! reported as closed after its last frames; a missing peer fails setup by
//! name. The peer is this test binary run again in a child role.

mod common;

use common::{job_key, leftovers, owned, Event};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use wanmpi_transport_shm::{setup, SendStatus, ShmOptions, Transport, TransportError};

const ROLE: &str = "WANMPI_SHM_TEST_ROLE";
const KEY: &str = "WANMPI_SHM_TEST_KEY";

/// Not a test of its own: the child's part, run by the tests below in a
/// child process (does nothing in a normal run).
#[test]
fn child_role() {
    let (Ok(role), Ok(key)) = (std::env::var(ROLE), std::env::var(KEY)) else { return };
    let mut t = setup(&key, 1, 2, &[0, 1], &ShmOptions::default(), Duration::from_secs(10)).unwrap();
    assert_eq!(t.try_send(0, 2, &[b"hello from the child"]).unwrap(), SendStatus::Sent);
    println!("ready");
    match role.as_str() {
        // Wait to be killed (bounded, in case the parent died).
        "hang" => {
            let start = Instant::now();
            while start.elapsed() < Duration::from_secs(30) {
                t.poll_recv(&mut |_| {}).unwrap();
                t.wait(Duration::from_secs(1)).unwrap();
            }
        }
        "finish" => {
            assert_eq!(t.try_send(0, 2, &[b"bye"]).unwrap(), SendStatus::Sent);
            t.shutdown(Duration::from_secs(5)).unwrap();
        }
        r => panic!("unknown role {r}"),
    }
}

fn spawn_child(role: &str, key: &str) -> std::process::Child {
    Command::new(std::env::current_exe().unwrap())
        .args(["child_role", "--exact", "--nocapture", "--test-threads=1"])
        .env(ROLE, role)
        .env(KEY, key)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Receives events until `pred` holds for one, sleeping in `wait`; gives up after `limit`.
fn events_until(t: &mut dyn Transport, limit: Duration, pred: impl Fn(&Event) -> bool) -> Vec<Event> {
    let start = Instant::now();
    let mut got = vec![];
    loop {
        t.poll_recv(&mut |ev| got.push(owned(ev))).unwrap();
        if got.iter().any(&pred) {
            return got;
        }
        assert!(start.elapsed() < limit, "gave up after {limit:?}; got {got:?}");
        t.wait(Duration::from_secs(1)).unwrap();
    }
}

#[test]
fn a_killed_peer_is_reported_lost_with_its_pid_and_leaves_no_files() {
    let key = job_key("kill");
    let opts = ShmOptions::default();
    let mut child = spawn_child("hang", &key);
    let mut t = setup(&key, 0, 2, &[0, 1], &opts, Duration::from_secs(10)).unwrap();
    // The child's test harness prints its own lines first; keep the pipe open after.
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    while !line.contains("ready") {
        line.clear();
        assert!(out.read_line(&mut line).unwrap() > 0, "the child ended before it was ready");
    }
    let got = events_until(&mut t, Duration::from_secs(5), |e| matches!(e, Event::Frame(..)));
    assert_eq!(got, vec![Event::Frame(1, 2, b"hello from the child".to_vec())]);

    child.kill().unwrap(); // SIGKILL; not reaped yet: a zombie must count as gone
    let killed = Instant::now();
    let got = events_until(&mut t, Duration::from_secs(5), |e| matches!(e, Event::Lost(..)));
    let took = killed.elapsed();
    let pid = child.id();
    child.wait().unwrap();
    match &got[..] {
        [Event::Lost(1, reason)] => assert!(reason.contains(&format!("process {pid}")) && reason.contains("exited"), "{reason}"),
        other => panic!("{other:?}"),
    }
    eprintln!("loss reported {took:?} after SIGKILL");
    assert!(took < Duration::from_secs(3), "took {took:?}");
    assert!(leftovers(&key, &opts).is_empty(), "{:?}", leftovers(&key, &opts));
    assert!(matches!(t.try_send(1, 0, &[b"x"]), Err(TransportError::PeerLost { peer: 1, .. })));
}

#[test]
fn a_peer_that_shuts_down_is_reported_closed_after_its_last_frames() {
    let key = job_key("close");
    let mut child = spawn_child("finish", &key);
    let mut t = setup(&key, 0, 2, &[0, 1], &ShmOptions::default(), Duration::from_secs(10)).unwrap();
    let got = events_until(&mut t, Duration::from_secs(10), |e| matches!(e, Event::Lost(..)));
    assert!(child.wait().unwrap().success());
    assert_eq!(got[..2], [Event::Frame(1, 2, b"hello from the child".to_vec()), Event::Frame(1, 2, b"bye".to_vec())]);
    match &got[2..] {
        [Event::Lost(1, reason)] => assert!(reason.contains("closed"), "{reason}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn setup_names_a_missing_peer_and_leaves_no_files() {
    let key = job_key("missing");
    let opts = ShmOptions::default();
    let start = Instant::now();
    let e = setup(&key, 0, 3, &[0, 2], &opts, Duration::from_millis(300)).err().expect("no rank 2: setup must fail");
    assert!(start.elapsed() < Duration::from_secs(2));
    let msg = e.to_string();
    assert!(matches!(e, TransportError::Setup(_)) && msg.contains("rank 2"), "{msg}");
    assert!(leftovers(&key, &opts).is_empty(), "{:?}", leftovers(&key, &opts));
}

#[test]
fn setup_rejects_bad_keys_and_ranks() {
    let o = ShmOptions::default();
    let t = Duration::from_millis(10);
    for (key, rank, size, local) in [("a/b", 0, 2, &[0u32, 1][..]), ("", 0, 2, &[0, 1]), ("ok", 2, 2, &[0, 1]), ("ok", 0, 2, &[0, 5])] {
        assert!(matches!(setup(key, rank, size, local, &o, t), Err(TransportError::Setup(_))), "{key:?} {rank} {size} {local:?}");
    }
}
