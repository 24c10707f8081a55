//! NAT in front of emulated hosts behaves as the real kinds do, with real
//! UDP and TCP through the kernel's conntrack (sockets made inside the
//! hosts): 1:1 reachable both ways with ports kept, masquerading drops the
//! unsolicited and passes replies and hole punching, symmetric maps each
//! destination to its own port. Needs root; prints SKIPPED otherwise.

mod common;

use common::*;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::time::{Duration, Instant};
use wanmpi_emulator::{Emulation, NatKind};

fn nat_topo(kinds: &[NatKind]) -> wanmpi_emulator::Topology {
    let mut t = topo(kinds.len(), "delay=1ms");
    t.set_nat(kinds).expect("nat kinds");
    t
}

/// The next datagram on `s` within `limit`: its bytes and source.
fn recv_within(s: &UdpSocket, limit: Duration) -> Option<(Vec<u8>, SocketAddr)> {
    s.set_read_timeout(Some(limit)).expect("timeout");
    let mut buf = [0u8; 256];
    s.recv_from(&mut buf).ok().map(|(n, from)| (buf[..n].to_vec(), from))
}

fn public(emu: &Emulation, host: usize, port: u16) -> SocketAddr {
    SocketAddr::new(emu.nat(host).expect("host").public.into(), port)
}

fn tcp_listener_in(emu: &Emulation, host: usize, port: u16) -> TcpListener {
    emu.in_host(host, move || TcpListener::bind(("0.0.0.0", port))).expect("enter").expect("listen")
}

fn tcp_connect_from(emu: &Emulation, host: usize, to: SocketAddr, limit: Duration) -> std::io::Result<TcpStream> {
    emu.in_host(host, move || TcpStream::connect_timeout(&to, limit)).expect("enter")
}

#[test]
fn one_to_one_is_reachable_both_ways_with_ports_kept() {
    let _g = serial();
    let Some(emu) = up_or_skip("one_to_one_is_reachable_both_ways_with_ports_kept", &nat_topo(&[NatKind::None, NatKind::OneToOne])) else {
        return;
    };
    let info = emu.nat(1).expect("nat");
    assert_eq!((info.kind, info.public, info.private), (NatKind::OneToOne, Ipv4Addr::new(198, 18, 0, 2), Some(Ipv4Addr::new(10, 1, 0, 2))));
    // The public address is on no interface of the host (the "Cannot assign requested address").
    let bind_public = emu.in_host(1, || UdpSocket::bind("198.18.0.2:0")).expect("enter");
    assert_eq!(bind_public.err().map(|e| e.raw_os_error()), Some(Some(libc::EADDRNOTAVAIL)));

    // outbound UDP: seen at the public address, port kept
    let (s0, s1) = (udp_in(&emu, 0, 7000), udp_in(&emu, 1, 7001));
    s1.send_to(b"out", public(&emu, 0, 7000)).expect("send");
    let (_, from) = recv_within(&s0, Duration::from_secs(2)).expect("1:1 outbound UDP did not arrive");
    assert_eq!(from, public(&emu, 1, 7001), "source not the public address with the port kept");
    // inbound UDP, unsolicited, on another port
    let s1b = udp_in(&emu, 1, 7002);
    s0.send_to(b"in", public(&emu, 1, 7002)).expect("send");
    let (data, from) = recv_within(&s1b, Duration::from_secs(2)).expect("1:1 inbound UDP did not arrive");
    assert_eq!((data.as_slice(), from), (&b"in"[..], public(&emu, 0, 7000)));

    // inbound TCP: accepted at the private address
    let l1 = tcp_listener_in(&emu, 1, 7003);
    let mut c = tcp_connect_from(&emu, 0, public(&emu, 1, 7003), Duration::from_secs(3)).expect("1:1 inbound TCP refused");
    let (mut a, peer) = l1.accept().expect("accept");
    assert_eq!(peer.ip(), Ipv4Addr::new(198, 18, 0, 1));
    assert_eq!(a.local_addr().expect("local").ip(), Ipv4Addr::new(10, 1, 0, 2), "DNAT to the private address");
    c.write_all(b"ping").expect("write");
    let mut got = [0u8; 4];
    a.read_exact(&mut got).expect("read");
    assert_eq!(&got, b"ping");
    // outbound TCP: seen from the public address
    let l0 = tcp_listener_in(&emu, 0, 7004);
    let _c2 = tcp_connect_from(&emu, 1, public(&emu, 0, 7004), Duration::from_secs(3)).expect("1:1 outbound TCP");
    let (_, peer) = l0.accept().expect("accept");
    assert_eq!(peer.ip(), Ipv4Addr::new(198, 18, 0, 2));
    // the host reaches its own public address (hairpin, as a cloud VM does)
    let l1b = tcp_listener_in(&emu, 1, 7005);
    tcp_connect_from(&emu, 1, public(&emu, 1, 7005), Duration::from_secs(3)).expect("hairpin to own public address");
    l1b.accept().expect("accept hairpin");
}

#[test]
fn masq_drops_the_unsolicited_and_passes_replies_and_hole_punching() {
    let _g = serial();
    let kinds = [NatKind::None, NatKind::Masq, NatKind::Masq];
    let Some(emu) = up_or_skip("masq_drops_the_unsolicited_and_passes_replies_and_hole_punching", &nat_topo(&kinds)) else { return };
    let (s0, s1) = (udp_in(&emu, 0, 7000), udp_in(&emu, 1, 7001));
    // unsolicited UDP and TCP into the masqueraded host: nothing gets in
    s0.send_to(b"unsolicited", public(&emu, 1, 7001)).expect("send");
    assert!(recv_within(&s1, Duration::from_millis(500)).is_none(), "an unsolicited datagram passed the firewall");
    let _l1 = tcp_listener_in(&emu, 1, 7002);
    let t0 = Instant::now();
    let dial = tcp_connect_from(&emu, 0, public(&emu, 1, 7002), Duration::from_secs(1));
    assert!(dial.is_err(), "an unsolicited TCP connection passed the firewall");
    println!("unsolicited TCP into masq: {:?} after {:?}", dial.err().map(|e| e.kind()), t0.elapsed());
    // outbound, and the reply to it
    s1.send_to(b"out", public(&emu, 0, 7000)).expect("send");
    let (_, from) = recv_within(&s0, Duration::from_secs(2)).expect("outbound UDP from masq did not arrive");
    assert_eq!(from, public(&emu, 1, 7001), "masq keeps the port when it can");
    s0.send_to(b"reply", from).expect("send");
    let (data, _) = recv_within(&s1, Duration::from_secs(2)).expect("the reply did not pass the firewall");
    assert_eq!(data, b"reply");
    // outbound TCP works
    let l0 = tcp_listener_in(&emu, 0, 7003);
    tcp_connect_from(&emu, 1, public(&emu, 0, 7003), Duration::from_secs(3)).expect("outbound TCP from masq");
    l0.accept().expect("accept");

    // hole punching between the two masqueraded hosts: both send at once
    let (p1, p2) = (udp_in(&emu, 1, 7101), udp_in(&emu, 2, 7102));
    let (to2, to1) = (public(&emu, 2, 7102), public(&emu, 1, 7101));
    let (mut got1, mut got2) = (None, None);
    let deadline = Instant::now() + Duration::from_secs(5);
    while (got1.is_none() || got2.is_none()) && Instant::now() < deadline {
        p1.send_to(b"punch from 1", to2).expect("send");
        p2.send_to(b"punch from 2", to1).expect("send");
        got1 = got1.or_else(|| recv_within(&p1, Duration::from_millis(100)));
        got2 = got2.or_else(|| recv_within(&p2, Duration::from_millis(100)));
    }
    let (Some((d1, f1)), Some((d2, f2))) = (got1, got2) else { panic!("hole punching between two masq hosts failed") };
    assert_eq!((d1.as_slice(), f1, d2.as_slice(), f2), (&b"punch from 2"[..], to2, &b"punch from 1"[..], to1));
}

#[test]
fn symmetric_maps_each_destination_to_its_own_port() {
    let _g = serial();
    let kinds = [NatKind::Symmetric, NatKind::None, NatKind::None, NatKind::Masq];
    let Some(emu) = up_or_skip("symmetric_maps_each_destination_to_its_own_port", &nat_topo(&kinds)) else { return };
    let (r1, r2) = (udp_in(&emu, 1, 7001), udp_in(&emu, 2, 7002));
    let seen = |from_host: usize, port: u16| -> (u16, u16) {
        let s = udp_in(&emu, from_host, port);
        s.send_to(b"x", public(&emu, 1, 7001)).expect("send");
        s.send_to(b"x", public(&emu, 2, 7002)).expect("send");
        let (_, a) = recv_within(&r1, Duration::from_secs(2)).expect("datagram to host 1");
        let (_, b) = recv_within(&r2, Duration::from_secs(2)).expect("datagram to host 2");
        assert_eq!((a.ip(), b.ip()), (emu.nat(from_host).unwrap().public.into(), emu.nat(from_host).unwrap().public.into()));
        (a.port(), b.port())
    };
    let (a, b) = seen(0, 7100);
    println!("symmetric: one socket (port 7100) seen at ports {a} and {b}");
    assert_ne!(a, b, "symmetric NAT gave two destinations the same port");
    // the control: masquerading keeps one mapping for every destination
    assert_eq!(seen(3, 7300), (7300, 7300), "masq mapped one socket to two ports");
    // and a port learnt through host 1 does not reach the symmetric host from host 2
    let s0 = udp_in(&emu, 0, 7200);
    s0.send_to(b"x", public(&emu, 1, 7001)).expect("send");
    let (_, learnt) = recv_within(&r1, Duration::from_secs(2)).expect("datagram");
    r2.send_to(b"via learnt port", learnt).expect("send");
    assert!(recv_within(&s0, Duration::from_millis(500)).is_none(), "a port learnt by host 1 let host 2 in");
}
