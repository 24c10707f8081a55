//! The key/value channel over TCP is sealed after its handshake: a man in
//! the middle (a forwarding proxy on loopback) sees no published value,
//! and a flipped, injected or replayed byte on either direction is refused
//! (the connection ends with an integrity error, the service reports it
//! naming the rank, and nothing altered reaches the table or the rank).

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::mpsc::{channel, Receiver};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use wanmpi_bootstrap::{BootstrapAddr, BootstrapError, Client, KeyValue, Server, ServerConfig, ServerEvent};

const SECRET: [u8; 32] = [0x5a; 32];
const T: Duration = Duration::from_secs(10);
/// What rank 0 publishes: no whitespace, as values are.
const VALUE: &str = "the-eagle-lands-at-dawn-198.18.0.7:40123";
/// Bytes of rank 0's hello line: "hello 0 " + 32 hex + " " + 64 hex + "\n".
const HELLO: usize = 8 + 32 + 1 + 64 + 1;
/// Bytes the service sends before its sealed records: the greeting
/// ("wanmpi-kv 2 " + 32 hex + "\n") and "ok " + 64 hex + "\n".
const GREETING_AND_OK: usize = 12 + 32 + 1 + 3 + 64 + 1;
/// A sealed record of a line of `n` bytes.
fn record(n: usize) -> usize {
    4 + n + 16
}

#[derive(Clone, Debug)]
enum Op {
    None,
    /// Flip a bit of the byte at this offset, towards the service or back.
    Flip {
        to_server: bool,
        at: usize,
    },
    /// Insert bytes towards the service before this offset.
    Inject {
        at: usize,
        bytes: Vec<u8>,
    },
    /// Send again, before offset `at`, the `len` bytes that began at `from`.
    Replay {
        from: usize,
        len: usize,
        at: usize,
    },
}

/// The bytes a proxy passed on: towards the service, and back.
type Captured = Arc<Mutex<(Vec<u8>, Vec<u8>)>>;

/// Starts a proxy to `port`; returns its port and the bytes seen each way.
fn proxy(port: u16, op: Op) -> (u16, Captured) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let me = l.local_addr().unwrap().port();
    let cap = Arc::new(Mutex::new((vec![], vec![])));
    let c = cap.clone();
    std::thread::spawn(move || {
        let Ok((client, _)) = l.accept() else { return };
        let server = TcpStream::connect(("127.0.0.1", port)).unwrap();
        for s in [&client, &server] {
            s.set_read_timeout(Some(T)).unwrap();
        }
        let (c2, s2, back, op2) = (client.try_clone().unwrap(), server.try_clone().unwrap(), c.clone(), op.clone());
        std::thread::spawn(move || forward(s2, c2, op2, back, false));
        forward(client, server, op, c, true);
    });
    (me, cap)
}

fn forward(mut from: TcpStream, mut to: TcpStream, op: Op, cap: Captured, to_server: bool) {
    let mut orig = vec![];
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let start = orig.len();
        orig.extend_from_slice(&buf[..n]);
        let mut out = vec![];
        for i in start..orig.len() {
            match &op {
                Op::Inject { at, bytes } if to_server && *at == i => out.extend_from_slice(bytes),
                Op::Replay { from, len, at } if to_server && *at == i => out.extend_from_slice(&orig[*from..*from + *len]),
                _ => {}
            }
            let flip = matches!(op, Op::Flip { to_server: t, at } if t == to_server && at == i);
            out.push(orig[i] ^ flip as u8);
        }
        {
            let mut c = cap.lock().unwrap();
            if to_server { &mut c.0 } else { &mut c.1 }.extend_from_slice(&out);
        }
        if to.write_all(&out).is_err() {
            break;
        }
    }
    let _ = to.shutdown(Shutdown::Write);
}

fn start(size: u32) -> (Server, Receiver<ServerEvent>, u16) {
    let (tx, rx) = channel();
    let tx = Mutex::new(tx);
    let server = Server::start(
        &BootstrapAddr::Tcp("127.0.0.1".into(), 0),
        ServerConfig::new(size, SECRET),
        Box::new(move |e| drop(tx.lock().unwrap().send(e))),
    )
    .unwrap();
    let port = server.address().rsplit(':').next().unwrap().parse().unwrap();
    (server, rx, port)
}

/// Rank 0 of a job of 1, through a proxy doing `op`: publishes VALUE,
/// fences and reads it back. Returns the outcome of each call, the
/// capture, what a second connection (direct) reads under the key
/// afterwards, and the service's refusals.
struct Run {
    fence: Result<(), BootstrapError>,
    get: Option<Result<String, BootstrapError>>,
    seen: (Vec<u8>, Vec<u8>),
    in_table: Result<String, BootstrapError>,
    refusals: Vec<(String, String)>,
}

fn run(op: Op) -> Run {
    let (server, rx, port) = start(1);
    let (pport, cap) = proxy(port, op);
    let mut c0 = Client::connect_to(&format!("tcp:127.0.0.1:{pport}"), 0, 1, &SECRET, T).unwrap();
    c0.put("ep.0", VALUE).unwrap();
    let fence = c0.fence();
    let get = fence.is_ok().then(|| c0.get("ep.0"));
    drop(c0);
    let in_table = Client::connect_to(server.address(), 0, 1, &SECRET, T).unwrap().get("ep.0");
    let refusals = rx.try_iter().filter_map(|e| if let ServerEvent::Refused { peer, reason } = e { Some((peer, reason)) } else { None }).collect();
    let seen = cap.lock().unwrap().clone();
    Run { fence, get, seen, in_table, refusals }
}

fn shows(bytes: &[u8], text: &str) -> bool {
    bytes.windows(12).any(|w| text.as_bytes().windows(12).any(|p| p == w))
}

#[test]
fn a_capture_of_the_channel_holds_no_published_value() {
    let r = run(Op::None);
    r.fence.unwrap();
    assert_eq!(r.get.unwrap().unwrap(), VALUE);
    let (to_server, to_client) = &r.seen;
    // The capture sees the traffic: the hello line is in clear, the rest not.
    assert!(to_server.starts_with(b"hello 0 ") && to_server.len() > HELLO + record(13 + VALUE.len()));
    assert!(!shows(to_server, VALUE), "the published value in clear towards the service");
    assert!(!shows(to_client, VALUE), "the value in clear in the reply");
    assert!(!shows(to_server, "put ep.0 ") && !shows(to_client, "val the-eagle"));
    assert!(r.refusals.is_empty(), "{:?}", r.refusals);
}

fn assert_refused(r: &Run) {
    let e = r.fence.as_ref().expect_err("the tampered channel must fail rank 0's fence");
    assert!(r.get.is_none());
    assert!(!matches!(&r.in_table, Ok(v) if v != VALUE), "an altered value reached the table: {:?}", r.in_table);
    let named = r.refusals.iter().any(|(peer, why)| peer.starts_with("rank 0 at ") && why.contains("integrity check failed"));
    assert!(named, "the service reports the tampering naming rank 0: {:?} (rank 0 saw: {e})", r.refusals);
}

#[test]
fn a_flipped_byte_towards_the_service_is_refused() {
    // Inside the first record (the put): the value never reaches the table.
    let r = run(Op::Flip { to_server: true, at: HELLO + 4 + 12 });
    assert_refused(&r);
    assert!(matches!(r.in_table, Err(BootstrapError::Missing(_))), "{:?}", r.in_table);
}

#[test]
fn an_injected_record_is_refused() {
    let mut forged = 5u32.to_le_bytes().to_vec();
    forged.extend_from_slice(b"fence");
    forged.extend_from_slice(&[0x42; 16]);
    let r = run(Op::Inject { at: HELLO, bytes: forged });
    assert_refused(&r);
}

#[test]
fn a_replayed_record_is_refused() {
    // The put again after the fence: record 2 is not what was sealed as 2.
    let put = record(format!("put ep.0 {VALUE}").len());
    let r = run(Op::Replay { from: HELLO, len: put, at: HELLO + put + record(5) });
    // The put and fence went through before the replay; the get after it fails.
    match (&r.fence, &r.get) {
        (Ok(()), Some(Err(e))) => assert!(!e.to_string().is_empty()),
        other => panic!("expected the fence through and the get refused, got {other:?}"),
    }
    assert!(r.refusals.iter().any(|(p, why)| p.starts_with("rank 0 at ") && why.contains("record 2")), "{:?}", r.refusals);
}

#[test]
fn a_flipped_byte_in_a_reply_fails_the_rank_not_its_data() {
    // Inside the first sealed reply (the put's ok).
    let r = run(Op::Flip { to_server: false, at: GREETING_AND_OK + 5 });
    let e = r.fence.expect_err("an altered reply must not pass");
    assert!(e.to_string().contains("integrity check failed on record 0"), "{e}");
}
