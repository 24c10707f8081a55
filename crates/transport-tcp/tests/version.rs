//! A peer of another handshake version: the rank that dials it fails at
//! once, naming both versions, instead of dialling again until its setup
//! timeout; the rank it dials answers with its own version, so a dialler
//! of a release with this notice stops at once too (and its failure ends
//! the job). Real sockets on loopback; the other release's rank is a
//! thread speaking only the first bytes of the handshake.

mod common;
use common::*;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};
use wanmpi_bootstrap::{local_kv_world, KeyValue};
use wanmpi_transport_tcp::auth::{version_notice, Connector, HELLO_LEN};
use wanmpi_transport_tcp::{endpoint_key, TcpOptions, TcpTransport};

/// Long, so that only failing fast passes.
fn slow_setup() -> TcpOptions {
    TcpOptions { setup_timeout: Duration::from_secs(30), ..test_opts() }
}

#[test]
fn the_dialling_rank_fails_at_once_naming_both_versions() {
    let mut kvs = local_kv_world(2);
    let mut other = kvs.pop().expect("rank 1");
    let mut me = kvs.pop().expect("rank 0");
    // Rank 1 runs "version 9": it answers HELLO with its notice and closes.
    let l = TcpListener::bind("127.0.0.1:0").expect("listen");
    other.put(&endpoint_key(1), &l.local_addr().expect("addr").to_string()).expect("put");
    let fake = std::thread::spawn(move || {
        other.fence().expect("fence");
        l.set_nonblocking(false).expect("blocking");
        let (mut s, _) = l.accept().expect("accept");
        let mut hello = [0u8; HELLO_LEN];
        s.read_exact(&mut hello).expect("hello");
        let mut notice = version_notice();
        notice[4] = 9;
        s.write_all(&notice).expect("notice");
    });
    let started = Instant::now();
    let e = TcpTransport::connect(&mut me, SECRET, slow_setup()).err().expect("setup must fail");
    fake.join().expect("fake rank");
    let msg = e.to_string();
    assert!(started.elapsed() < Duration::from_secs(5), "took {:?}: {msg}", started.elapsed());
    assert!(msg.contains("version 9") && msg.contains("this rank version 4") && msg.contains("rank 1"), "{msg}");
}

#[test]
fn the_dialled_rank_tells_a_caller_of_another_version_its_own() {
    let mut kvs = local_kv_world(2);
    let mut me = kvs.pop().expect("rank 1");
    let mut other = kvs.pop().expect("rank 0");
    let caller = std::thread::spawn(move || {
        other.fence().expect("fence");
        let ep = other.get(&endpoint_key(1)).expect("endpoint");
        let mut s = TcpStream::connect(ep).expect("dial rank 1");
        s.set_read_timeout(Some(Duration::from_secs(5))).expect("timeout");
        let mut hello = *Connector::new(&SECRET, 0, 1).expect("connector").hello();
        hello[4] = 9;
        s.write_all(&hello).expect("hello");
        let mut got = Vec::new();
        s.read_to_end(&mut got).expect("notice, then closed");
        got
    });
    // Rank 1 keeps waiting for a rank 0 that proves the secret (a stray must
    // not end a job); here it gives up after its short setup timeout.
    let opts = TcpOptions { setup_timeout: Duration::from_secs(2), ..test_opts() };
    let r = TcpTransport::connect(&mut me, SECRET, opts);
    assert_eq!(caller.join().expect("caller"), version_notice(), "MAGIC and our version, then closed");
    assert!(r.is_err(), "rank 0 never proved the secret");
}
