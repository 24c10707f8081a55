//! Structs of usrsctp.h, `#[repr(C)]`, field for field. `Default` is all
//! zeroes, which is what the C API expects for "not set".

use libc::sockaddr_storage;

pub type sctp_assoc_t = u32;

/// Opaque `struct socket` of usrsctp.
#[repr(C)]
pub struct socket {
    _private: [u8; 0],
}

/// AF_CONN address: the host's own handle (`sconn_addr`) plus an SCTP port
/// (network byte order). Linux layout (no length byte).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct sockaddr_conn {
    pub sconn_family: u16,
    pub sconn_port: u16,
    pub sconn_addr: *mut libc::c_void,
}

impl Default for sockaddr_conn {
    fn default() -> Self {
        sockaddr_conn { sconn_family: 0, sconn_port: 0, sconn_addr: std::ptr::null_mut() }
    }
}

#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct sctp_rcvinfo {
    pub rcv_sid: u16,
    pub rcv_ssn: u16,
    pub rcv_flags: u16,
    pub rcv_ppid: u32,
    pub rcv_tsn: u32,
    pub rcv_cumtsn: u32,
    pub rcv_context: u32,
    pub rcv_assoc_id: sctp_assoc_t,
}

#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct sctp_sndinfo {
    pub snd_sid: u16,
    pub snd_flags: u16,
    pub snd_ppid: u32,
    pub snd_context: u32,
    pub snd_assoc_id: sctp_assoc_t,
}

#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct sctp_initmsg {
    pub sinit_num_ostreams: u16,
    pub sinit_max_instreams: u16,
    pub sinit_max_attempts: u16,
    pub sinit_max_init_timeo: u16,
}

#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct sctp_rtoinfo {
    pub srto_assoc_id: sctp_assoc_t,
    pub srto_initial: u32,
    pub srto_max: u32,
    pub srto_min: u32,
}

#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct sctp_assocparams {
    pub sasoc_assoc_id: sctp_assoc_t,
    pub sasoc_peer_rwnd: u32,
    pub sasoc_local_rwnd: u32,
    pub sasoc_cookie_life: u32,
    pub sasoc_asocmaxrxt: u16,
    pub sasoc_number_peer_destinations: u16,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct sctp_paddrparams {
    pub spp_address: sockaddr_storage,
    pub spp_assoc_id: sctp_assoc_t,
    pub spp_hbinterval: u32,
    pub spp_pathmtu: u32,
    pub spp_flags: u32,
    pub spp_ipv6_flowlabel: u32,
    pub spp_pathmaxrxt: u16,
    pub spp_dscp: u8,
}

impl Default for sctp_paddrparams {
    fn default() -> Self {
        // SAFETY: plain old data; all-zero is the C API's "unset".
        unsafe { std::mem::zeroed() }
    }
}

/// For SCTP_MAXSEG, SCTP_MAX_BURST, SCTP_PLUGGABLE_CC, SCTP_FRAGMENT_INTERLEAVE...
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct sctp_assoc_value {
    pub assoc_id: sctp_assoc_t,
    pub assoc_value: u32,
}

#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct sctp_sack_info {
    pub sack_assoc_id: sctp_assoc_t,
    pub sack_delay: u32,
    pub sack_freq: u32,
}

#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct sctp_event {
    pub se_assoc_id: sctp_assoc_t,
    pub se_type: u16,
    pub se_on: u8,
}

/// Common header of every notification.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct sctp_tlv {
    pub sn_type: u16,
    pub sn_flags: u16,
    pub sn_length: u32,
}

#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct sctp_assoc_change {
    pub sac_type: u16,
    pub sac_flags: u16,
    pub sac_length: u32,
    pub sac_state: u16,
    pub sac_error: u16,
    pub sac_outbound_streams: u16,
    pub sac_inbound_streams: u16,
    pub sac_assoc_id: sctp_assoc_t,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct sctp_paddr_change {
    pub spc_type: u16,
    pub spc_flags: u16,
    pub spc_length: u32,
    pub spc_aaddr: sockaddr_storage,
    pub spc_state: u32,
    pub spc_error: u32,
    pub spc_assoc_id: sctp_assoc_t,
    pub spc_padding: [u8; 4],
}

#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct sctp_shutdown_event {
    pub sse_type: u16,
    pub sse_flags: u16,
    pub sse_length: u32,
    pub sse_assoc_id: sctp_assoc_t,
}

#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct sctp_pdapi_event {
    pub pdapi_type: u16,
    pub pdapi_flags: u16,
    pub pdapi_length: u32,
    pub pdapi_indication: u32,
    pub pdapi_stream: u32,
    pub pdapi_seq: u32,
    pub pdapi_assoc_id: sctp_assoc_t,
}

#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct sctp_send_failed_event {
    pub ssfe_type: u16,
    pub ssfe_flags: u16,
    pub ssfe_length: u32,
    pub ssfe_error: u32,
    pub ssfe_info: sctp_sndinfo,
    pub ssfe_assoc_id: sctp_assoc_t,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct sctp_paddrinfo {
    pub spinfo_address: sockaddr_storage,
    pub spinfo_assoc_id: sctp_assoc_t,
    pub spinfo_state: i32,
    pub spinfo_cwnd: u32,
    pub spinfo_srtt: u32,
    pub spinfo_rto: u32,
    pub spinfo_mtu: u32,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct sctp_status {
    pub sstat_assoc_id: sctp_assoc_t,
    pub sstat_state: i32,
    pub sstat_rwnd: u32,
    pub sstat_unackdata: u16,
    pub sstat_penddata: u16,
    pub sstat_instrms: u16,
    pub sstat_outstrms: u16,
    pub sstat_fragmentation_point: u32,
    pub sstat_primary: sctp_paddrinfo,
}

impl Default for sctp_status {
    fn default() -> Self {
        // SAFETY: plain old data; all-zero is valid.
        unsafe { std::mem::zeroed() }
    }
}

/// `struct sctpstat`: 166 counters (RFC 3873 MIB and usrsctp's own), kept
/// as a raw array; `consts::stat` names the indexes wanmpi reads.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct sctpstat {
    pub raw: [u32; 166],
}

impl Default for sctpstat {
    fn default() -> Self {
        sctpstat { raw: [0; 166] }
    }
}

/// The AF_CONN output callback: `addr` is the `sconn_addr` of the
/// destination, `buffer` one complete SCTP packet.
pub type conn_output_fn =
    unsafe extern "C" fn(addr: *mut libc::c_void, buffer: *mut libc::c_void, length: libc::size_t, tos: u8, set_df: u8) -> libc::c_int;
