//! A peer process killed with SIGKILL is reported lost, by pid, within
//! seconds, and leaves nothing behind; a peer that shuts down is reported
//! as closed after its last frames; a peer whose published endpoint does
//! not lead to its shared memory fails setup by name. The peer is this test
//! binary run again in a child role, meeting the parent through a real
//! key/value service.

mod common;

use common::{client, kv_service, owned, shm_names, Event};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use wanmpi_bootstrap::{local_kv_world, KeyValue};
use wanmpi_transport_shm::{setup, setup_elsewhere, SendStatus, ShmOptions, Transport, TransportError};

const ROLE: &str = "WANMPI_SHM_TEST_ROLE";
const KV: &str = "WANMPI_SHM_TEST_KV";

/// Not a test of its own: the child's part, run by the tests below in a
/// child process (does nothing in a normal run).
#[test]
fn child_role() {
    let (Ok(role), Ok(kv)) = (std::env::var(ROLE), std::env::var(KV)) else { return };
    let mut kv = client(&kv, 1, 2);
    let mut t = setup(&mut kv, &[0, 1], &ShmOptions::default()).unwrap();
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

fn spawn_child(role: &str, kv: &str) -> std::process::Child {
    Command::new(std::env::current_exe().unwrap())
        .args(["child_role", "--exact", "--nocapture", "--test-threads=1"])
        .env(ROLE, role)
        .env(KV, kv)
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
    let service = kv_service(2, Duration::from_secs(20));
    let mut child = spawn_child("hang", service.address());
    let mut t = setup(&mut client(service.address(), 0, 2), &[0, 1], &ShmOptions::default()).unwrap();
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
    assert!(shm_names().is_empty(), "{:?}", shm_names());
    assert!(matches!(t.try_send(1, 0, &[b"x"]), Err(TransportError::PeerLost { peer: 1, .. })));
}

#[test]
fn a_peer_that_shuts_down_is_reported_closed_after_its_last_frames() {
    let service = kv_service(2, Duration::from_secs(20));
    let mut child = spawn_child("finish", service.address());
    let mut t = setup(&mut client(service.address(), 0, 2), &[0, 1], &ShmOptions::default()).unwrap();
    let got = events_until(&mut t, Duration::from_secs(10), |e| matches!(e, Event::Lost(..)));
    assert!(child.wait().unwrap().success());
    assert_eq!(got[..2], [Event::Frame(1, 2, b"hello from the child".to_vec()), Event::Frame(1, 2, b"bye".to_vec())]);
    match &got[2..] {
        [Event::Lost(1, reason)] => assert!(reason.contains("closed"), "{reason}"),
        other => panic!("{other:?}"),
    }
}

/// Rank 2 publishes an endpoint that does not lead to a rank's shared
/// memory: rank 0's setup fails at once, naming rank 2, its pid and why.
fn refused(endpoint: impl FnOnce() -> String + Send + 'static) -> String {
    let mut kvs = local_kv_world(3);
    let (mut k2, mut k1, mut k0) = (kvs.pop().unwrap(), kvs.pop().unwrap(), kvs.pop().unwrap());
    let h1 = std::thread::spawn(move || setup_elsewhere(&mut k1).unwrap());
    let h2 = std::thread::spawn(move || {
        k2.put("shm-ep-2", &endpoint()).unwrap();
        k2.fence().unwrap();
    });
    let start = Instant::now();
    let e = setup(&mut k0, &[0, 2], &ShmOptions::default()).err().expect("setup must refuse rank 2");
    assert!(start.elapsed() < Duration::from_secs(2));
    h1.join().unwrap();
    h2.join().unwrap();
    let msg = e.to_string();
    assert!(matches!(e, TransportError::Setup(_)) && msg.contains("rank 2"), "{msg}");
    msg
}

#[test]
fn setup_refuses_a_peer_whose_endpoint_leads_nowhere_or_elsewhere() {
    let token = "0123456789abcdef0123456789abcdef";
    // A process that is gone.
    let mut gone = Command::new("true").spawn().unwrap();
    let pid = gone.id();
    gone.wait().unwrap();
    let msg = refused(move || format!("{pid}.3.4.1.{token}"));
    assert!(msg.contains(&format!("pid {pid}")) && msg.contains("gone"), "{msg}");
    // A live process of ours, but the fd is an ordinary file, not a memfd.
    let file = tempfile_0600();
    let (me, fd) = (std::process::id(), std::os::unix::io::AsRawFd::as_raw_fd(&file));
    let msg = refused(move || format!("{me}.{fd}.{fd}.1.{token}"));
    assert!(msg.contains("shared memory") && msg.contains("bytes, expected"), "{msg}");
    drop(file);
    assert!(refused(|| "nonsense".into()).contains("bad endpoint"));
}

/// An empty file only we may open, already unlinked.
fn tempfile_0600() -> std::fs::File {
    use std::os::unix::fs::OpenOptionsExt;
    let path = std::env::temp_dir().join(format!("wanmpi-shm-test-{}", std::process::id()));
    let f = std::fs::OpenOptions::new().read(true).write(true).create_new(true).mode(0o600).open(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    f
}

#[test]
fn setup_rejects_bad_ranks() {
    let mut kv = local_kv_world(2).swap_remove(0);
    assert!(matches!(setup(&mut kv, &[0, 5], &ShmOptions::default()), Err(TransportError::Setup(_))));
}
