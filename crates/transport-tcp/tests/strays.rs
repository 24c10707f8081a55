//! Connections that cannot prove the job secret are refused, during setup
//! and after it, while the job's own connections work; a job whose ranks
//! disagree on the secret fails setup within its timeout.

mod common;
use common::*;
use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use wanmpi_bootstrap::{local_kv_world, BootstrapError, KeyValue, LocalKv};
use wanmpi_transport_tcp::auth::{self, AuthError, Connector, CHALLENGE_LEN, PROOF_LEN};
use wanmpi_transport_tcp::{endpoint_key, TransportError};

type Hook = Box<dyn FnMut(&str, &str) + Send>;

/// A key/value endpoint that runs `hook(key, value)` after each `get`.
struct SpyKv {
    inner: LocalKv,
    hook: Hook,
}

impl KeyValue for SpyKv {
    fn rank(&self) -> u32 {
        self.inner.rank()
    }
    fn size(&self) -> u32 {
        self.inner.size()
    }
    fn put(&mut self, key: &str, value: &str) -> Result<(), BootstrapError> {
        self.inner.put(key, value)
    }
    fn fence(&mut self) -> Result<(), BootstrapError> {
        self.inner.fence()
    }
    fn get(&mut self, key: &str) -> Result<String, BootstrapError> {
        let v = self.inner.get(key)?;
        (self.hook)(key, &v);
        Ok(v)
    }
}

const T: Duration = Duration::from_secs(5);
/// This job's own secret, so that a late stray can never be admitted by
/// another test's job that happens to reuse the port.
const JOB: [u8; 32] = [0x5A; 32];

/// True when the other side closed (EOF or reset) rather than answering.
fn closed_on_us(s: &mut TcpStream) -> bool {
    s.set_read_timeout(Some(T)).unwrap();
    let mut b = [0u8; 64];
    match s.read(&mut b) {
        Ok(0) => true,
        Err(e) => matches!(e.kind(), ErrorKind::ConnectionReset | ErrorKind::BrokenPipe),
        Ok(_) => false,
    }
}

fn garbage(ep: &str) -> bool {
    let mut s = TcpStream::connect(ep).unwrap();
    s.write_all(&[0xEE; 64]).unwrap();
    closed_on_us(&mut s)
}

fn forged_proof(ep: &str) -> bool {
    let mut s = TcpStream::connect(ep).unwrap();
    s.set_read_timeout(Some(T)).unwrap();
    let c = Connector::new(&[9; 32], 0, 1).unwrap();
    s.write_all(c.hello()).unwrap();
    let mut chal = [0u8; CHALLENGE_LEN];
    s.read_exact(&mut chal).unwrap();
    s.write_all(&[0x11; PROOF_LEN]).unwrap();
    closed_on_us(&mut s)
}

fn wrong_secret_connector(ep: &str) -> Result<(), AuthError> {
    let mut s = TcpStream::connect(ep).unwrap();
    s.set_read_timeout(Some(T)).unwrap();
    s.set_write_timeout(Some(T)).unwrap();
    auth::connect_blocking(&mut s, &[9; 32], 0, 1).map(drop)
}

#[test]
fn strays_during_and_after_setup_are_refused_and_the_job_works() {
    let outcomes = Arc::new(Mutex::new(vec![]));
    let silent = Arc::new(Mutex::new(None));
    let mut kvs = local_kv_world(2);
    let kv1 = kvs.pop().unwrap();
    let kv0 = kvs.pop().unwrap();
    let (o, s) = (outcomes.clone(), silent.clone());
    // Rank 0 reads rank 1's endpoint after the fence, when rank 1 is already
    // waiting for connections: the strays call first, then rank 0 dials.
    let spy = SpyKv {
        inner: kv0,
        hook: Box::new(move |key, ep| {
            if key != endpoint_key(1) {
                return;
            }
            *s.lock().unwrap() = Some(TcpStream::connect(ep).unwrap());
            let mut o = o.lock().unwrap();
            o.push(format!("garbage closed: {}", garbage(ep)));
            o.push(format!("forged proof closed: {}", forged_proof(ep)));
            o.push(format!("wrong secret: {:?}", wrong_secret_connector(ep).err().map(|e| e.to_string())));
            o.push(ep.to_string());
        }),
    };
    let a = std::thread::spawn(move || wanmpi_transport_tcp::TcpTransport::connect(&mut { spy }, JOB, test_opts()));
    let b = std::thread::spawn(move || wanmpi_transport_tcp::TcpTransport::connect(&mut { kv1 }, JOB, test_opts()));
    let mut a = a.join().unwrap().expect("rank 0 set up despite strays");
    let mut b = b.join().unwrap().expect("rank 1 set up despite strays");
    let outcomes = outcomes.lock().unwrap().clone();
    assert_eq!(outcomes[0], "garbage closed: true");
    assert_eq!(outcomes[1], "forged proof closed: true");
    assert_eq!(outcomes[2], format!("wrong secret: {:?}", Some(AuthError::BadProof.to_string())));
    // The silent stray did not hold setup up, and was closed at its end.
    let mut quiet = silent.lock().unwrap().take().unwrap();
    assert!(closed_on_us(&mut quiet));

    // After setup the listener is closed: a late stray gets nowhere.
    let ep = &outcomes[3];
    if let Ok(mut late) = TcpStream::connect(ep.as_str()) {
        late.set_read_timeout(Some(T)).unwrap();
        late.set_write_timeout(Some(T)).unwrap();
        assert!(auth::connect_blocking(&mut late, &JOB, 0, 1).is_err(), "late stray admitted");
    }

    pump(&mut a, vec![(1, make(0, 1, 0, 100))], 0, T);
    let got = pump(&mut b, vec![(0, make(1, 0, 0, 100))], 1, T);
    assert_eq!(check(&got[0].1), (0, 1, 0));
    let got = pump(&mut a, vec![], 1, T);
    assert_eq!(check(&got[0].1), (1, 0, 0));
}

#[test]
fn ranks_with_different_secrets_fail_setup_within_the_timeout() {
    let t0 = std::time::Instant::now();
    let res = connect_all(
        local_kv_world(2),
        |r| [r as u8; 32],
        |_| wanmpi_transport_tcp::TcpOptions { setup_timeout: Duration::from_millis(800), ..test_opts() },
    );
    assert!(t0.elapsed() < Duration::from_secs(10));
    for r in res {
        match r {
            Err(TransportError::Setup(m)) => assert!(m.contains("timed out"), "{m}"),
            Err(e) => panic!("unexpected error {e}"),
            Ok(_) => panic!("a rank with the wrong secret was admitted"),
        }
    }
}
