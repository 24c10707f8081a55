//! Constants from usrsctp.h (and a few from usrsctplib's netinet/sctp.h that
//! the public header leaves out; those are marked).

pub const AF_CONN: i32 = 123;
pub const IPPROTO_SCTP: i32 = 132;
pub const MSG_NOTIFICATION: i32 = 0x2000;
/// Linux value; usrsctp uses the host's `MSG_EOR`.
pub const MSG_EOR: i32 = libc::MSG_EOR;

pub const SCTP_FUTURE_ASSOC: u32 = 0;
pub const SCTP_CURRENT_ASSOC: u32 = 1;
pub const SCTP_ALL_ASSOC: u32 = 2;

pub const SCTP_RECVV_NOINFO: u32 = 0;
pub const SCTP_RECVV_RCVINFO: u32 = 1;
pub const SCTP_RECVV_NXTINFO: u32 = 2;
pub const SCTP_RECVV_RN: u32 = 3;

pub const SCTP_SENDV_NOINFO: u32 = 0;
pub const SCTP_SENDV_SNDINFO: u32 = 1;

// Notification types.
pub const SCTP_ASSOC_CHANGE: u16 = 0x0001;
pub const SCTP_PEER_ADDR_CHANGE: u16 = 0x0002;
pub const SCTP_REMOTE_ERROR: u16 = 0x0003;
pub const SCTP_SEND_FAILED: u16 = 0x0004;
pub const SCTP_SHUTDOWN_EVENT: u16 = 0x0005;
pub const SCTP_PARTIAL_DELIVERY_EVENT: u16 = 0x0007;
pub const SCTP_SENDER_DRY_EVENT: u16 = 0x000a;
pub const SCTP_SEND_FAILED_EVENT: u16 = 0x000e;

// sac_state values.
pub const SCTP_COMM_UP: u16 = 0x0001;
pub const SCTP_COMM_LOST: u16 = 0x0002;
pub const SCTP_RESTART: u16 = 0x0003;
pub const SCTP_SHUTDOWN_COMP: u16 = 0x0004;
pub const SCTP_CANT_STR_ASSOC: u16 = 0x0005;

// snd_flags.
pub const SCTP_EOF: u16 = 0x0100;
pub const SCTP_ABORT: u16 = 0x0200;
pub const SCTP_UNORDERED: u16 = 0x0400;
pub const SCTP_SACK_IMMEDIATELY: u16 = 0x4000;

// Socket options (level IPPROTO_SCTP).
pub const SCTP_RTOINFO: i32 = 0x0001;
pub const SCTP_ASSOCINFO: i32 = 0x0002;
pub const SCTP_INITMSG: i32 = 0x0003;
pub const SCTP_NODELAY: i32 = 0x0004;
pub const SCTP_PEER_ADDR_PARAMS: i32 = 0x000a;
pub const SCTP_MAXSEG: i32 = 0x000e;
pub const SCTP_DELAYED_SACK: i32 = 0x000f;
pub const SCTP_FRAGMENT_INTERLEAVE: i32 = 0x0010;
pub const SCTP_PARTIAL_DELIVERY_POINT: i32 = 0x0011;
pub const SCTP_MAX_BURST: i32 = 0x0019;
pub const SCTP_EVENT: i32 = 0x001e;
pub const SCTP_RECVRCVINFO: i32 = 0x001f;
pub const SCTP_STATUS: i32 = 0x0100;
pub const SCTP_GET_PEER_ADDR_INFO: i32 = 0x0101;
/// From netinet/sctp.h (not in the public header).
pub const SCTP_PLUGGABLE_CC: i32 = 0x1202;
/// From netinet/sctp.h (not in the public header): I-DATA, RFC 8260.
pub const SCTP_INTERLEAVING_SUPPORTED: i32 = 0x1206;

// spp_flags.
pub const SPP_HB_ENABLE: u32 = 0x0001;
pub const SPP_HB_DISABLE: u32 = 0x0002;
pub const SPP_PMTUD_ENABLE: u32 = 0x0008;
pub const SPP_PMTUD_DISABLE: u32 = 0x0010;

// Congestion control modules (SCTP_PLUGGABLE_CC).
pub const SCTP_CC_RFC2581: u32 = 0;
pub const SCTP_CC_HSTCP: u32 = 1;
pub const SCTP_CC_HTCP: u32 = 2;
pub const SCTP_CC_RTCC: u32 = 3;
/// wanmpi's loss-tolerant module (patches/usrsctp/0003): only in the patched
/// library ([`crate::PATCHED`]); Debian's refuses it with EINVAL.
pub const SCTP_CC_WANMPI_LT: u32 = 4;

// Association states (sstat_state, usrsctp.h). usrsctp maps its internal
// state onto these (sctp_map_assoc_state): an association with the
// SHUTDOWN-PENDING flag set reads as SCTP_SHUTDOWN_PENDING whatever its
// state, an aborted one as SCTP_CLOSED.
pub const SCTP_CLOSED: i32 = 0x0000;
pub const SCTP_COOKIE_WAIT: i32 = 0x0002;
pub const SCTP_COOKIE_ECHOED: i32 = 0x0004;
pub const SCTP_ESTABLISHED: i32 = 0x0008;
pub const SCTP_SHUTDOWN_SENT: i32 = 0x0010;
pub const SCTP_SHUTDOWN_RECEIVED: i32 = 0x0020;
pub const SCTP_SHUTDOWN_ACK_SENT: i32 = 0x0040;
pub const SCTP_SHUTDOWN_PENDING: i32 = 0x0080;

/// Indexes into `sctpstat::raw` (offset of the C field / 4).
pub mod stat {
    pub const CURRESTAB: usize = 2;
    pub const ABORTED: usize = 7;
    pub const CHECKSUMERRORS: usize = 10;
    pub const RECVPACKETS: usize = 21;
    pub const RECVDUPDATA: usize = 26;
    pub const RECVSWCRC: usize = 38;
    pub const RECVHWCRC: usize = 39;
    pub const SENDPACKETS: usize = 40;
    pub const SENDDATA: usize = 42;
    pub const SENDRETRANSDATA: usize = 43;
    pub const SENDFASTRETRANS: usize = 44;
    pub const SENDSWCRC: usize = 51;
    pub const TIMODATA: usize = 68;
    pub const TIMOHEARTBEAT: usize = 73;
    pub const BADSUM: usize = 98;
    /// `sctps_reserved[0..6]`, used by the patched library (always 0 in
    /// Debian's): tail-loss probes sent (patch 0002), losses the
    /// loss-tolerant module did not back off for, its back-offs for the
    /// loss rate and for the delay (0003), T3 expiries it answered by
    /// halving cwnd rather than collapsing it (0006), repeated expiries
    /// with nothing acked between, taken as silence (0007).
    pub const WANMPI_TLP_PROBES: usize = 135;
    pub const WANMPI_LT_TOLERATED: usize = 136;
    pub const WANMPI_LT_BACKOFFS_RATE: usize = 137;
    pub const WANMPI_LT_BACKOFFS_DELAY: usize = 138;
    pub const WANMPI_LT_T3_HALVED: usize = 139;
    pub const WANMPI_LT_T3_SILENT: usize = 140;
}
