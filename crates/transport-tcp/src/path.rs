//! The kernel's view of a connection's path (TCP_INFO): round trip,
//! retransmitted share of segments, delivery rate (the adaptive transport
//! compares it with wamp's own measurements), and how long the path has
//! been silent (`redial` replaces a connection silent too long).

use std::os::fd::AsRawFd;
use std::time::Duration;
use wanmpi_transport::PathStats;

fn tcp_info(sock: &socket2::Socket) -> Option<libc::tcp_info> {
    // SAFETY: tcp_info is plain old data; zeroed is a valid value.
    let mut info: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
    // SAFETY: getsockopt on our own fd into a live struct of the size passed.
    let r = unsafe { libc::getsockopt(sock.as_raw_fd(), libc::IPPROTO_TCP, libc::TCP_INFO, (&mut info as *mut libc::tcp_info).cast(), &mut len) };
    (r == 0).then_some(info)
}

/// How long the path has been silent: the time since the last ACK, while
/// data segments wait for one; None when none waits. A receiver that does
/// not read is not silence: its kernel acknowledges what arrives until its
/// window closes, and then nothing is in flight (window probes are not
/// counted here: answered, they still leave the last-ACK time behind). An
/// idle connection's silence is the keepalive's to find (`setup::
/// watch_silence`).
pub(crate) fn silent_for(sock: &socket2::Socket) -> Option<Duration> {
    let info = tcp_info(sock)?;
    (info.tcpi_unacked > 0).then(|| Duration::from_millis(info.tcpi_last_ack_recv as u64))
}

/// Segments retransmitted on this connection so far.
pub(crate) fn retransmits(sock: &socket2::Socket) -> Option<u64> {
    tcp_info(sock).map(|i| u64::from(i.tcpi_total_retrans))
}

pub(crate) fn tcp_path(sock: &socket2::Socket) -> Option<PathStats> {
    let info = tcp_info(sock)?;
    // Segments that carried data: the ones a retransmission can repeat
    // (pure acknowledgements would dilute the share).
    let sent = info.tcpi_data_segs_out as u64;
    let loss = if sent == 0 { 0.0 } else { info.tcpi_total_retrans as f64 / sent as f64 };
    Some(PathStats {
        srtt: Duration::from_micros(info.tcpi_rtt as u64),
        // ~0 until the first sample: "not known", like zero elsewhere.
        min_rtt: if info.tcpi_min_rtt == u32::MAX { Duration::ZERO } else { Duration::from_micros(info.tcpi_min_rtt as u64) },
        loss,
        sent,
        delivery_rate: info.tcpi_delivery_rate as f64,
    })
}
