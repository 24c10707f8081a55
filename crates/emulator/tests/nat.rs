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
    nat_topo_with(kinds, "delay=1ms")
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

/// NAT costs no delay of its own: UDP round trips through a masq client
/// and a 1:1 server match those between two public hosts (probes
/// interleaved, so both pairs see the same load on the machine; the
/// minimum, as the median moves by milliseconds with the load; a second
/// round when the first is off, as one scheduling stall can lift a minimum).
#[test]
fn nat_adds_no_delay_of_its_own() {
    let _g = serial();
    let kinds = [NatKind::None, NatKind::None, NatKind::Masq, NatKind::OneToOne];
    let Some(emu) = up_or_skip("nat_adds_no_delay_of_its_own", &nat_topo_with(&kinds, "delay=5ms")) else { return };
    let (stop1, h1) = echo_server(&emu, 1, 7001);
    let (stop3, h3) = echo_server(&emu, 3, 7003);
    let (c0, c2) = (udp_in(&emu, 0, 0), udp_in(&emu, 2, 0));
    let round = || {
        let (mut open, mut natted) = (Vec::new(), Vec::new());
        for seq in 0..60u64 {
            if let Some(d) = probe(&c0, public(&emu, 1, 7001), seq, Duration::from_secs(1)) {
                open.push(ms(d));
            }
            if let Some(d) = probe(&c2, public(&emu, 3, 7003), seq, Duration::from_secs(1)) {
                natted.push(ms(d));
            }
        }
        assert!(open.len() >= 57 && natted.len() >= 57, "probes lost: {} and {} of 60 answered", open.len(), natted.len());
        let min = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
        let (a, b) = (min(&open), min(&natted));
        let (ma, mb) = (median(&mut open), median(&mut natted));
        println!("delay=5ms: UDP RTT between public hosts min {a:.3} ms median {ma:.3} ms; masq to 1to1 min {b:.3} ms median {mb:.3} ms");
        (a, b)
    };
    let results: Vec<(f64, f64)> = (0..2).map(|_| round()).collect();
    for (stop, h) in [(stop1, h1), (stop3, h3)] {
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let _ = h.join();
    }
    assert!(results.iter().any(|(a, b)| *b < a + 0.3), "NAT added delay in both rounds: {results:?}");
}

fn nat_topo_with(kinds: &[NatKind], profile: &str) -> wanmpi_emulator::Topology {
    let mut t = topo(kinds.len(), profile);
    t.set_nat(kinds).expect("nat kinds");
    t
}

/// `expire_nat` forgets a host's mappings (replies stop getting in until it
/// sends again, then on its old port); `rebind_nat` gives its flows new
/// public ports, each time again.
#[test]
fn mappings_expire_and_rebind_on_demand() {
    let _g = serial();
    let Some(emu) = up_or_skip("mappings_expire_and_rebind_on_demand", &nat_topo(&[NatKind::None, NatKind::Masq])) else { return };
    let (s0, s1) = (udp_in(&emu, 0, 7000), udp_in(&emu, 1, 7001));
    let out = |what: &str| -> SocketAddr {
        s1.send_to(what.as_bytes(), public(&emu, 0, 7000)).expect("send");
        recv_within(&s0, Duration::from_secs(2)).unwrap_or_else(|| panic!("{what}: no datagram from the masq host")).1
    };
    let back = |to: SocketAddr| -> bool {
        s0.send_to(b"back", to).expect("send");
        recv_within(&s1, Duration::from_millis(500)).is_some()
    };
    let first = out("first");
    assert_eq!(first, public(&emu, 1, 7001));
    assert!(back(first), "reply on a live mapping");
    emu.expire_nat(1).expect("expire");
    assert!(!back(first), "a reply on an expired mapping got in");
    assert_eq!(out("after expiry"), first, "masq gives the same port back after expiry");
    assert!(back(first));
    emu.rebind_nat(1).expect("rebind");
    let rebound = out("after rebinding");
    assert_eq!(rebound.ip(), first.ip());
    assert_ne!(rebound.port(), first.port(), "rebinding kept the port");
    assert!((10000..=29999).contains(&rebound.port()), "{rebound}");
    assert!(!back(first), "the old mapping still lets replies in");
    assert!(back(rebound), "the new mapping does not let replies in");
    emu.rebind_nat(1).expect("rebind again");
    let again = out("after a second rebinding");
    assert_ne!(again.port(), rebound.port(), "a second rebinding kept the port");
    println!("masq mapping of port 7001: {} -> rebound {} -> {}", first.port(), rebound.port(), again.port());
    assert!(emu.expire_nat(0).is_err(), "host 0 has no NAT");
}

/// A site behind one masquerading router: its hosts share the site's one
/// public address (a port two of them use is remapped for one), talk to each
/// other directly on their private LAN, and nothing unsolicited gets in.
#[test]
fn a_site_behind_one_router_shares_its_public_address() {
    let _g = serial();
    let mut t = wanmpi_emulator::Topology::sites(
        2,
        2,
        wanmpi_emulator::LinkProfile::default(),
        wanmpi_emulator::LinkProfile::parse("delay=2ms").expect("profile"),
    );
    t.set_site_nat(&[NatKind::None, NatKind::Masq]).expect("site nat");
    let Some(emu) = up_or_skip("a_site_behind_one_router_shares_its_public_address", &t) else { return };
    let site_public = Ipv4Addr::new(198, 18, 0, 3);
    let (n2, n3) = (emu.nat(2).expect("nat"), emu.nat(3).expect("nat"));
    assert_eq!((n2.public, n3.public, n2.kind), (site_public, site_public, NatKind::Masq));
    assert_eq!((n2.private, n3.private), (Some(Ipv4Addr::new(172, 16, 1, 2)), Some(Ipv4Addr::new(172, 16, 1, 3))));
    let s0 = udp_in(&emu, 0, 7000);
    let to0 = public(&emu, 0, 7000);
    // both hosts from the same port: one keeps it, the other is remapped
    let (a2, a3) = (udp_in(&emu, 2, 7100), udp_in(&emu, 3, 7100));
    a2.send_to(b"from 2", to0).expect("send");
    let (_, f2) = recv_within(&s0, Duration::from_secs(2)).expect("datagram from host 2");
    a3.send_to(b"from 3", to0).expect("send");
    let (_, f3) = recv_within(&s0, Duration::from_secs(2)).expect("datagram from host 3");
    println!("site behind masq: host 2 port 7100 seen as {f2}, host 3 port 7100 as {f3}");
    assert_eq!((f2.ip(), f3.ip()), (std::net::IpAddr::from(site_public), std::net::IpAddr::from(site_public)));
    assert_eq!(f2.port(), 7100);
    assert_ne!(f3.port(), 7100, "two hosts behind one router got one public port");
    // replies reach the right host
    s0.send_to(b"to 3", f3).expect("send");
    assert_eq!(recv_within(&a3, Duration::from_secs(2)).map(|(d, _)| d), Some(b"to 3".to_vec()));
    s0.send_to(b"to 2", f2).expect("send");
    assert_eq!(recv_within(&a2, Duration::from_secs(2)).map(|(d, _)| d), Some(b"to 2".to_vec()));
    // nothing unsolicited gets in: UDP to an unmapped port, TCP
    let u2 = udp_in(&emu, 2, 7200);
    s0.send_to(b"unsolicited", SocketAddr::new(site_public.into(), 7200)).expect("send");
    assert!(recv_within(&u2, Duration::from_millis(500)).is_none(), "an unsolicited datagram got into the site");
    let _l2 = tcp_listener_in(&emu, 2, 7201);
    assert!(tcp_connect_from(&emu, 0, SocketAddr::new(site_public.into(), 7201), Duration::from_secs(1)).is_err());
    // inside the site: direct, private addresses
    let b3 = udp_in(&emu, 3, 7300);
    u2.send_to(b"lan", SocketAddr::new(Ipv4Addr::new(172, 16, 1, 3).into(), 7300)).expect("send");
    let (_, from) = recv_within(&b3, Duration::from_secs(2)).expect("datagram over the site's LAN");
    assert_eq!(from, SocketAddr::new(Ipv4Addr::new(172, 16, 1, 2).into(), 7200));
    // and out through TCP
    let l0 = tcp_listener_in(&emu, 0, 7400);
    tcp_connect_from(&emu, 3, public(&emu, 0, 7400), Duration::from_secs(3)).expect("TCP out of the site");
    assert_eq!(l0.accept().expect("accept").1.ip(), std::net::IpAddr::from(site_public));
    // the site's router rebinds every host's flows
    emu.rebind_nat(3).expect("rebind the site");
    a2.send_to(b"again", to0).expect("send");
    let (_, again) = recv_within(&s0, Duration::from_secs(2)).expect("datagram after rebinding");
    assert!(again.ip() == std::net::IpAddr::from(site_public) && again.port() != 7100, "{again}");
    let (id, dir, pid) = (emu.id().to_string(), emu.state_dir().to_path_buf(), emu.forwarder_pid());
    emu.down().expect("down");
    assert_gone(&id, &dir, pid); // the router's namespace too
}

/// A TCP socket bound to `port` in `host`, connecting to `to` (non-blocking
/// connect started; the caller waits for it).
fn tcp_dial_from_port(emu: &Emulation, host: usize, port: u16, to: SocketAddr) -> std::os::fd::OwnedFd {
    use std::os::fd::FromRawFd;
    emu.in_host(host, move || {
        // SAFETY: plain socket calls on an fd owned at once; sockaddr_in laid out by hand.
        unsafe {
            let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC, 0);
            assert!(fd >= 0, "socket");
            let owned = std::os::fd::OwnedFd::from_raw_fd(fd);
            let one: libc::c_int = 1;
            libc::setsockopt(fd, libc::SOL_SOCKET, libc::SO_REUSEADDR, (&one as *const libc::c_int).cast(), 4);
            let sin = |a: SocketAddr| {
                let SocketAddr::V4(v4) = a else { panic!("IPv4 only") };
                libc::sockaddr_in {
                    sin_family: libc::AF_INET as u16,
                    sin_port: v4.port().to_be(),
                    sin_addr: libc::in_addr { s_addr: u32::from_ne_bytes(v4.ip().octets()) },
                    sin_zero: [0; 8],
                }
            };
            let me = sin(SocketAddr::from(([0, 0, 0, 0], port)));
            let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
            assert_eq!(libc::bind(fd, (&me as *const libc::sockaddr_in).cast(), len), 0, "bind {port}");
            let there = sin(to);
            libc::connect(fd, (&there as *const libc::sockaddr_in).cast(), len);
            owned
        }
    })
    .expect("enter host")
}

/// Is `fd`'s non-blocking connect done, within `limit`?
fn connected_within(fd: &std::os::fd::OwnedFd, limit: Duration) -> bool {
    use std::os::fd::AsRawFd;
    let mut p = libc::pollfd { fd: fd.as_raw_fd(), events: libc::POLLOUT, revents: 0 };
    // SAFETY: one valid pollfd.
    let n = unsafe { libc::poll(&mut p, 1, limit.as_millis() as i32) };
    let mut err: libc::c_int = 0;
    let mut len = 4 as libc::socklen_t;
    // SAFETY: SO_ERROR into an int.
    unsafe { libc::getsockopt(fd.as_raw_fd(), libc::SOL_SOCKET, libc::SO_ERROR, (&mut err as *mut libc::c_int).cast(), &mut len) };
    n == 1 && p.revents & libc::POLLOUT != 0 && err == 0
}

/// TCP through two masquerading NATs: a connection dialled by one side alone
/// never gets in, but both dialling each other at once (simultaneous open,
/// ports kept by both NATs) makes one connection, as conntrack allows.
#[test]
fn tcp_simultaneous_open_crosses_two_masq_nats() {
    let _g = serial();
    let Some(emu) = up_or_skip("tcp_simultaneous_open_crosses_two_masq_nats", &nat_topo(&[NatKind::Masq, NatKind::Masq])) else { return };
    let _listening = tcp_listener_in(&emu, 1, 7601);
    let alone = tcp_dial_from_port(&emu, 0, 7600, public(&emu, 1, 7601));
    assert!(!connected_within(&alone, Duration::from_secs(1)), "a lone dial got through a masq NAT");
    drop(alone);
    let a = tcp_dial_from_port(&emu, 0, 7500, public(&emu, 1, 7501));
    let b = tcp_dial_from_port(&emu, 1, 7501, public(&emu, 0, 7500));
    // SYNs are retried (1 s, then 3 s), so the crossing is bounded by a few seconds
    let (ca, cb) = (connected_within(&a, Duration::from_secs(5)), connected_within(&b, Duration::from_secs(5)));
    println!("TCP simultaneous open through two masq NATs: host 0 {ca}, host 1 {cb}");
    assert!(ca && cb, "simultaneous open did not cross two masq NATs");
}
