//! A port between two threads: the handshake, the sealed link, strangers
//! that send nothing or too much, and what errors show.

use super::*;
use std::net::TcpStream;
use std::time::{Duration, Instant};

fn open() -> Port {
    Port::open("127.0.0.1", "127.0.0.1", None).expect("open")
}

fn secret_hex(name: &str) -> String {
    name.rsplit(':').next().expect("secret").to_string()
}

#[test]
fn both_roots_derive_one_key_and_swap_sealed_blobs() {
    let p = open();
    let name = p.name();
    let t = std::thread::spawn(move || {
        let peer = connect(&name, 3, Duration::from_secs(5)).expect("connect");
        peer.link.send(b"from c").expect("send");
        peer.link.send(b"").expect("send empty");
        (peer.size, peer.key, peer.link.recv().expect("recv"))
    });
    let peer = p.accept(2, Duration::from_secs(5), "test").expect("accept");
    assert_eq!(peer.size, 3);
    assert_eq!(peer.link.recv().expect("recv"), b"from c");
    assert_eq!(peer.link.recv().expect("recv"), b"");
    peer.link.send(b"from a").expect("send");
    let (size, key, got) = t.join().expect("thread");
    assert_eq!((size, key, got), (2, peer.key, b"from a".to_vec()));
}

/// A man in the middle flips one byte of a blob: the other root refuses
/// it, naming where it came from.
#[test]
fn a_tampered_blob_fails_naming_the_other_root() {
    let p = open();
    let name = p.name();
    let t = std::thread::spawn(move || {
        let peer = connect(&name, 1, Duration::from_secs(5)).expect("connect");
        let mut wire = peer.link.sealed_for_test(b"the address table").expect("seal");
        wire[7] ^= 1;
        peer.link.write_raw(&wire).expect("write");
        // Hold the connection until the other side has read.
        let _ = peer.link.recv();
    });
    let peer = p.accept(1, Duration::from_secs(5), "test").expect("accept");
    let e = peer.link.recv().expect_err("a flipped byte must not open");
    let text = e.to_string();
    assert!(text.contains("failed its authentication") && text.contains(peer.link.peer()), "{text}");
    assert!(peer.link.peer().starts_with("127.0.0.1:"), "{}", peer.link.peer());
    drop(peer);
    t.join().expect("thread");
}

#[test]
fn a_stranger_is_refused_and_the_port_keeps_waiting() {
    let p = open();
    let mut wrong = PortName::parse(&p.name()).expect("parse");
    wrong.secret[0] ^= 1;
    let (wrong, right) = (wrong.render(), p.name());
    let t = std::thread::spawn(move || {
        let e = connect(&wrong, 1, Duration::from_secs(5)).expect_err("a wrong secret must not join");
        assert!(matches!(e, ConnectError::Refused(..)), "{e}");
        report_failure(&right, "the children did not start: no such file", Duration::from_secs(5)).expect("report");
    });
    match p.accept(1, Duration::from_secs(10), "test") {
        Err(AcceptError::Failed(t)) => assert!(t.contains("no such file"), "{t}"),
        other => panic!("expected the failure report, got {other:?}"),
    }
    t.join().expect("thread");
}

#[test]
fn an_accept_with_nobody_coming_ends_at_its_bound() {
    let p = open();
    let t0 = Instant::now();
    assert!(matches!(p.accept(1, Duration::from_millis(300), "test"), Err(AcceptError::TimedOut(_))));
    assert!(t0.elapsed() < Duration::from_secs(3));
}

/// Runs a real connect while `stranger` (given the port's address) does
/// its worst; returns how long the connect took.
fn connect_beside(stranger: impl FnOnce(std::net::SocketAddr) + Send + 'static) -> Duration {
    let p = open();
    let name = p.name();
    let addr: std::net::SocketAddr = format!("127.0.0.1:{}", PortName::parse(&name).expect("parse").port).parse().expect("addr");
    let (tx, rx) = std::sync::mpsc::channel();
    let s = std::thread::spawn(move || {
        stranger(addr);
        let _ = tx.send(());
    });
    // The strangers are in (or under way) before the real connector starts.
    let _ = rx.recv_timeout(Duration::from_secs(10));
    let c = std::thread::spawn(move || {
        let t0 = Instant::now();
        let peer = connect(&name, 1, Duration::from_secs(20)).expect("connect");
        (t0.elapsed(), peer)
    });
    p.accept(1, Duration::from_secs(30), "test").expect("accept");
    let (took, _peer) = c.join().expect("connector");
    s.join().expect("strangers");
    took
}

/// Connections that send nothing hold no slot the real one needs: before,
/// each was greeted alone for 10 s, so three delayed a connect by 30 s.
#[test]
fn idle_connections_do_not_delay_a_real_one() {
    let held = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let h = held.clone();
    let took = connect_beside(move |addr| {
        for _ in 0..3 {
            h.lock().expect("lock").push(TcpStream::connect(addr).expect("idle connect"));
        }
    });
    println!("a connect beside 3 idle connections took {took:?}");
    assert!(took < Duration::from_secs(1), "3 idle connections delayed the connect by {took:?}");
    drop(held);
}

/// A flood of 1000 connections (kept open, sending nothing or a trickle)
/// while the real one connects: the table stays bounded and the real one
/// gets in within a second.
#[test]
fn a_flood_of_connections_does_not_delay_a_real_one_much() {
    let held = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let h = held.clone();
    let took = connect_beside(move |addr| {
        // The flood keeps going beside the real connect: it starts now and
        // the real one starts once 100 are in.
        let (tx, rx) = std::sync::mpsc::channel();
        let flood = std::thread::spawn(move || {
            for i in 0..1000 {
                let Ok(s) = TcpStream::connect_timeout(&addr, Duration::from_secs(2)) else { continue };
                // A trickle: one byte of a request line and no more.
                if i % 2 == 0 {
                    let _ = std::io::Write::write(&mut &s, b"j");
                }
                h.lock().expect("lock").push(s);
                if i == 100 {
                    let _ = tx.send(());
                }
            }
        });
        let _ = rx.recv_timeout(Duration::from_secs(10));
        // The flood goes on beside the real connect; it ends on its own.
        drop(flood);
    });
    println!("a connect beside a flood of 1000 connections took {took:?}");
    assert!(took < Duration::from_secs(1), "a flood delayed the connect by {took:?}");
    drop(held);
}

#[test]
fn a_failing_connect_shows_no_secret() {
    // A port that existed and closed: nothing listens there now.
    let p = open();
    let name = p.name();
    drop(p);
    let e = connect(&name, 1, Duration::from_secs(2)).expect_err("nothing listens");
    let text = e.to_string();
    assert!(!text.contains(&secret_hex(&name)[..16]) && text.contains("127.0.0.1:"), "{text}");
    // A name that does not parse hides its secret too.
    let garbled = name.replacen("wanmpi-port:1", "wanmpi-port:9", 1);
    let text = connect(&garbled, 1, Duration::from_secs(2)).expect_err("garbled").to_string();
    assert!(!text.contains(&secret_hex(&name)[..16]), "{text}");
    // And a refusal.
    let q = open();
    let mut wrong = PortName::parse(&q.name()).expect("parse");
    wrong.secret[5] ^= 0x40;
    let wrong = wrong.render();
    let w = wrong.clone();
    let t = std::thread::spawn(move || connect(&w, 1, Duration::from_secs(5)).expect_err("wrong").to_string());
    let _ = q.accept(1, Duration::from_millis(1500), "test");
    let text = t.join().expect("thread");
    assert!(!text.contains(&secret_hex(&wrong)[..16]) && !text.contains(&secret_hex(&q.name())[..16]), "{text}");
}

/// A spawn accepts in slices of 250 ms (it looks for mpirun's note between
/// them): a connector further than a slice away (a slow WAN) must still
/// get in, so what waits is kept from one slice to the next.
#[test]
fn a_slow_connector_gets_in_across_accept_slices() {
    use crate::auth::{self, Role};
    use std::io::{BufRead, BufReader, Write};
    let p = open();
    let port = PortName::parse(&p.name()).expect("parse");
    let t = std::thread::spawn(move || {
        let s = TcpStream::connect(("127.0.0.1", port.port)).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
        let mut r = BufReader::new(s.try_clone().expect("clone"));
        let mut greeting = String::new();
        r.read_line(&mut greeting).expect("greeting");
        let nonce = greeting.trim().rsplit(' ').next().expect("nonce").to_string();
        // A round trip longer than two slices.
        std::thread::sleep(Duration::from_millis(500));
        let proof = auth::prove(&port.secret, Role::Client, &nonce, 0);
        (&s).write_all(format!("join 00ff {proof} 1\n").as_bytes()).expect("join");
        let mut answer = String::new();
        r.read_line(&mut answer).expect("answer");
        answer
    });
    let mut joined = false;
    for _ in 0..40 {
        match p.accept(1, Duration::from_millis(200), "test") {
            Ok(_) => {
                joined = true;
                break;
            }
            Err(AcceptError::TimedOut(_)) => {}
            Err(e) => panic!("{e}"),
        }
    }
    assert!(joined, "the slow connector never got in");
    assert!(t.join().expect("connector").starts_with("ok "));
}
