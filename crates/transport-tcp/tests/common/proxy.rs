//! A man in the middle on loopback: forwards one TCP connection both ways,
//! records every byte it saw, and alters the client's stream at chosen
//! offsets (flip a bit, inject bytes, replay or drop a stretch). Offsets
//! count the client's original stream from its first handshake byte.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use wanmpi_bootstrap::{BootstrapError, KeyValue, LocalKv};
use wanmpi_transport_tcp::endpoint_key;

/// One alteration of the client-to-server stream.
#[derive(Debug, Clone)]
pub enum Op {
    /// Forward everything as it is.
    None,
    /// Flip the lowest bit of the byte at this offset.
    Flip(usize),
    /// Insert these bytes before the byte at this offset.
    Inject(usize, Vec<u8>),
    /// Send again, before the byte at `at`, the `len` bytes that began at `from`.
    Replay { from: usize, len: usize, at: usize },
    /// Leave out `len` bytes from this offset.
    Drop(usize, usize),
}

/// What passed through: the client's bytes as sent on, and the server's.
#[derive(Default)]
pub struct Captured {
    pub to_server: Vec<u8>,
    pub to_client: Vec<u8>,
}

/// Bound on any read of the proxy: a test never waits longer on it.
const IDLE: Duration = Duration::from_secs(20);

/// Starts a proxy to `target`; returns its address and what it captured.
pub fn start(target: String, op: Op) -> (String, Arc<Mutex<Captured>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let cap = Arc::new(Mutex::new(Captured::default()));
    let c = cap.clone();
    std::thread::spawn(move || {
        // One connection (the job's); the thread ends with the test process otherwise.
        let Ok((client, _)) = listener.accept() else { return };
        let server = TcpStream::connect(&target).unwrap();
        for s in [&client, &server] {
            s.set_read_timeout(Some(IDLE)).unwrap();
            s.set_nodelay(true).unwrap();
        }
        let (c2, s2) = (client.try_clone().unwrap(), server.try_clone().unwrap());
        let back = c.clone();
        std::thread::spawn(move || forward(s2, c2, Op::None, back, false));
        forward(client, server, op, c, true);
    });
    (addr, cap)
}

fn forward(mut from: TcpStream, mut to: TcpStream, op: Op, cap: Arc<Mutex<Captured>>, to_server: bool) {
    let mut orig = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let start = orig.len();
        orig.extend_from_slice(&buf[..n]);
        let mut out = Vec::with_capacity(n);
        for i in start..orig.len() {
            match &op {
                Op::Inject(at, bytes) if *at == i => out.extend_from_slice(bytes),
                Op::Replay { from, len, at } if *at == i => out.extend_from_slice(&orig[*from..*from + *len]),
                Op::Drop(at, len) if (*at..*at + *len).contains(&i) => continue,
                _ => {}
            }
            let flip = matches!(op, Op::Flip(at) if at == i);
            out.push(orig[i] ^ flip as u8);
        }
        let mut c = cap.lock().unwrap();
        if to_server { &mut c.to_server } else { &mut c.to_client }.extend_from_slice(&out);
        drop(c);
        if to.write_all(&out).is_err() {
            break;
        }
    }
    let _ = to.shutdown(Shutdown::Write);
}

/// A key/value endpoint that hands out `proxy(real endpoint)` instead of
/// rank `target`'s real endpoint.
pub struct ProxyKv {
    pub inner: LocalKv,
    pub target: u32,
    pub proxy: Box<dyn FnMut(String) -> String + Send>,
}

impl KeyValue for ProxyKv {
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
        Ok(if key == endpoint_key(self.target) { (self.proxy)(v) } else { v })
    }
}
