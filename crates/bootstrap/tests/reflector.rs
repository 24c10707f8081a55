//! The key/value service's UDP reflector as a rank finds and uses it: a
//! TCP service starts one on its own port number, a client names it
//! (`KeyValue::reflector`), and a socket asking it learns its own address;
//! a service over a unix socket has none.

use std::net::UdpSocket;
use std::time::Duration;
use wanmpi_bootstrap::{reflect, BootstrapAddr, Client, KeyValue, Server, ServerConfig};

const SECRET: [u8; 32] = [0x6b; 32];

fn start(bind: BootstrapAddr) -> Server {
    Server::start(&bind, ServerConfig::new(1, SECRET), Box::new(|_| {})).unwrap()
}

#[test]
fn a_tcp_service_reflects_on_its_port_and_its_clients_find_it() {
    let server = start(BootstrapAddr::Tcp("127.0.0.1".into(), 0));
    let c = Client::connect_to(server.address(), 0, 1, &SECRET, Duration::from_secs(10)).unwrap();
    let at = c.reflector().expect("a TCP client names the reflector");
    assert_eq!(Some(at), server.reflector_addr(), "same address and port number as the TCP service");
    let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
    let seen = reflect::ask(&udp, at, &SECRET, 0, Duration::from_secs(5)).unwrap();
    assert_eq!(seen, Some(udp.local_addr().unwrap()));
    // Another job's secret gets silence.
    assert_eq!(reflect::ask(&udp, at, &[1; 32], 0, Duration::from_millis(400)).unwrap(), None);
}

#[test]
fn a_unix_socket_service_has_no_reflector() {
    let dir = std::env::temp_dir().join(format!("wanmpi-reflector-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("kv.sock");
    let _ = std::fs::remove_file(&path);
    let server = start(BootstrapAddr::Unix(path));
    assert_eq!(server.reflector_addr(), None);
    let c = Client::connect_to(server.address(), 0, 1, &SECRET, Duration::from_secs(10)).unwrap();
    assert_eq!(c.reflector(), None);
    drop(c);
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}
