//! Counters printed at shutdown with WANMPI_WAMP_STATS=1: per peer what the
//! protocol did (packets, losses, repairs, probes) and what it measured.

use crate::transport::WampTransport;
use std::fmt::Write;

pub fn report(t: &WampTransport) -> String {
    let mut s = String::new();
    let r = t.refusals();
    let _ = writeln!(
        s,
        "wamp rank {}: refused datagrams: {} strays, {} forged, {} duplicates/replays, {} malformed, {} for lack of room",
        t.rank, r.strays, r.forged, r.duplicates, r.malformed, r.no_room
    );
    for (peer, p) in t.peers.iter().enumerate() {
        let Some(p) = p else { continue };
        let c = &p.conn;
        let st = &c.stats;
        let _ = writeln!(
            s,
            "  to rank {peer} at {}: sent {} packets ({} B, {} chunks, {} resent, {} repair), received {}, lost {}, probes {}, rebuilt {}; srtt {:.1} ms, min {:.1} ms, rate {:.1} MB/s ({}), loss {:.2} %; address moved {} times",
            p.addr,
            st.packets_sent,
            st.bytes_sent,
            st.data_chunks_sent,
            st.chunks_resent,
            st.repairs_sent,
            st.packets_received,
            st.packets_lost,
            st.probes,
            st.recovered,
            c.rtt().srtt.as_secs_f64() * 1e3,
            c.rtt().min.as_secs_f64() * 1e3,
            c.bandwidth() / 1e6,
            c.phase(),
            c.loss_rate() * 100.0,
            p.rebinds
        );
    }
    s
}
