//! The port handshake (crates/bootstrap, `port.rs`): any string as a port
//! name never panics; any bytes as what a port answers (its greeting, its
//! reply to `join`) to a connecting root never panic, never admit it
//! without the port's secret, and end within the bound. The port is a
//! listener on loopback whose one thread answers every connection with
//! the input.
#![no_main]
use libfuzzer_sys::fuzz_target;
use std::io::Write;
use std::net::TcpListener;
use std::sync::mpsc::{channel, Sender};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;
use wanmpi_bootstrap::port::{connect, PortName};

/// The fake port: its name, and where to hand it the next answer.
fn port() -> &'static (String, Mutex<Sender<Vec<u8>>>) {
    static PORT: OnceLock<(String, Mutex<Sender<Vec<u8>>>)> = OnceLock::new();
    PORT.get_or_init(|| {
        let l = TcpListener::bind("127.0.0.1:0").expect("loopback listener");
        let name = PortName { host: "127.0.0.1".into(), port: l.local_addr().expect("bound").port(), secret: [0x44; 32] }.render();
        let (tx, rx) = channel::<Vec<u8>>();
        std::thread::spawn(move || {
            for answer in rx {
                let Ok((mut s, _)) = l.accept() else { continue };
                // Whatever the connector says stays unread in the socket.
                let _ = s.write_all(&answer);
            }
        });
        (name, Mutex::new(tx))
    })
}

fuzz_target!(|data: &[u8]| {
    if let Ok(s) = std::str::from_utf8(data) {
        let _ = PortName::parse(s);
    }
    let (name, tx) = port();
    if tx.lock().map(|t| t.send(data.to_vec())).is_err() {
        return;
    }
    if let Ok(peer) = connect(name, 1, Duration::from_secs(2)) {
        panic!("admitted by a port that never proved its secret (group of {})", peer.size);
    }
});
