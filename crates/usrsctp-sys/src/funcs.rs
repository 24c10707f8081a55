//! The functions of usrsctp.h that wanmpi calls.

use crate::types::*;
use libc::{c_char, c_int, c_uint, c_void, size_t, sockaddr, socklen_t, ssize_t};

/// The receive upcall takes a union by value, which Rust cannot declare
/// portably; wanmpi polls with `usrsctp_recvv` instead and passes null.
pub type receive_cb_ptr = *const c_void;
pub type send_cb_fn = unsafe extern "C" fn(sock: *mut socket, sb_free: u32, ulp_info: *mut c_void) -> c_int;
pub type debug_printf_fn = unsafe extern "C" fn(format: *const c_char, ...);

extern "C" {
    pub fn usrsctp_init_nothreads(port: u16, conn_output: Option<conn_output_fn>, debug_printf: Option<debug_printf_fn>);
    pub fn usrsctp_finish() -> c_int;

    pub fn usrsctp_socket(
        domain: c_int,
        ty: c_int,
        protocol: c_int,
        receive_cb: receive_cb_ptr,
        send_cb: Option<send_cb_fn>,
        sb_threshold: u32,
        ulp_info: *mut c_void,
    ) -> *mut socket;
    pub fn usrsctp_setsockopt(so: *mut socket, level: c_int, name: c_int, value: *const c_void, len: socklen_t) -> c_int;
    pub fn usrsctp_getsockopt(so: *mut socket, level: c_int, name: c_int, value: *mut c_void, len: *mut socklen_t) -> c_int;
    pub fn usrsctp_opt_info(so: *mut socket, id: sctp_assoc_t, opt: c_int, arg: *mut c_void, size: *mut socklen_t) -> c_int;
    pub fn usrsctp_getpaddrs(so: *mut socket, id: sctp_assoc_t, raddrs: *mut *mut sockaddr) -> c_int;
    pub fn usrsctp_freepaddrs(addrs: *mut sockaddr);
    pub fn usrsctp_sendv(
        so: *mut socket,
        data: *const c_void,
        len: size_t,
        to: *mut sockaddr,
        addrcnt: c_int,
        info: *mut c_void,
        infolen: socklen_t,
        infotype: c_uint,
        flags: c_int,
    ) -> ssize_t;
    pub fn usrsctp_recvv(
        so: *mut socket,
        dbuf: *mut c_void,
        len: size_t,
        from: *mut sockaddr,
        fromlen: *mut socklen_t,
        info: *mut c_void,
        infolen: *mut socklen_t,
        infotype: *mut c_uint,
        msg_flags: *mut c_int,
    ) -> ssize_t;
    pub fn usrsctp_bind(so: *mut socket, name: *mut sockaddr, namelen: socklen_t) -> c_int;
    pub fn usrsctp_listen(so: *mut socket, backlog: c_int) -> c_int;
    pub fn usrsctp_connect(so: *mut socket, name: *mut sockaddr, namelen: socklen_t) -> c_int;
    pub fn usrsctp_close(so: *mut socket);
    pub fn usrsctp_shutdown(so: *mut socket, how: c_int) -> c_int;
    pub fn usrsctp_getassocid(so: *mut socket, addr: *mut sockaddr) -> sctp_assoc_t;
    pub fn usrsctp_set_non_blocking(so: *mut socket, onoff: c_int) -> c_int;

    pub fn usrsctp_conninput(addr: *mut c_void, buffer: *const c_void, length: size_t, ecn_bits: u8);
    pub fn usrsctp_register_address(addr: *mut c_void);
    pub fn usrsctp_deregister_address(addr: *mut c_void);
    pub fn usrsctp_handle_timers(elapsed_milliseconds: u32);

    pub fn usrsctp_enable_crc32c_offload();
    pub fn usrsctp_disable_crc32c_offload();
    pub fn usrsctp_crc32c(buffer: *mut c_void, length: size_t) -> u32;
    pub fn usrsctp_get_stat(stat: *mut sctpstat);

    pub fn usrsctp_sysctl_set_sctp_ecn_enable(value: u32) -> c_int;
    pub fn usrsctp_sysctl_set_sctp_rto_min_default(value: u32) -> c_int;
    pub fn usrsctp_sysctl_set_sctp_rto_initial_default(value: u32) -> c_int;
    pub fn usrsctp_sysctl_set_sctp_rto_max_default(value: u32) -> c_int;
    pub fn usrsctp_sysctl_set_sctp_init_rto_max_default(value: u32) -> c_int;
    pub fn usrsctp_sysctl_set_sctp_sendspace(value: u32) -> c_int;
    pub fn usrsctp_sysctl_set_sctp_recvspace(value: u32) -> c_int;
    pub fn usrsctp_sysctl_set_sctp_initial_cwnd(value: u32) -> c_int;
    pub fn usrsctp_sysctl_get_sctp_initial_cwnd() -> u32;
    pub fn usrsctp_sysctl_set_sctp_blackhole(value: u32) -> c_int;
    pub fn usrsctp_sysctl_set_sctp_use_cwnd_based_maxburst(value: u32) -> c_int;
    pub fn usrsctp_sysctl_set_sctp_max_retran_chunk(value: u32) -> c_int;
}

// Only in the patched library (scripts/build-usrsctp, patches/usrsctp/).
#[cfg(usrsctp_patched)]
extern "C" {
    /// Tail-loss probe on (1, the patched library's default) or off (0): patch 0002.
    pub fn usrsctp_sysctl_set_sctp_wanmpi_tlp(value: u32) -> c_int;
}
