//! Raw FFI bindings to the system `libusrsctp` (the FreeBSD/KAME SCTP stack
//! in user space), written by hand against Debian's `libusrsctp-dev` 0.9.5.
//!
//! Only what wanmpi uses is bound: the socket calls, AF_CONN mode (the host
//! owns the packets and the clock: `usrsctp_init_nothreads`,
//! `usrsctp_conninput`, the output callback, `usrsctp_handle_timers`), the
//! socket options and notification structs of RFC 6458, and the global
//! statistics. Every struct's size is checked against the C header in the
//! tests below (numbers taken from a C program compiled against the header).
//!
//! Which library: the patched usrsctp built by `scripts/build-usrsctp` when
//! it is there (static, [`PATCHED`] is true), else Debian's binary one.
//!
//! What this crate is not: safe. The safe wrapper lives in
//! `wanmpi-transport-sctp`.

#![allow(non_camel_case_types)]

mod consts;
mod funcs;
mod types;

pub use consts::*;
pub use funcs::*;
pub use types::*;

/// True when this build links the patched usrsctp that `scripts/build-usrsctp`
/// makes (Debian's sources plus `patches/usrsctp/`), false when it links
/// Debian's binary libusrsctp (the fallback; see build.rs).
pub const PATCHED: bool = cfg!(usrsctp_patched);

/// Turns the patched library's tail-loss probe (patch 0002) on or off,
/// process-wide. Returns false, doing nothing, with Debian's library, which
/// has none.
///
/// # Safety
/// usrsctp must be initialised (its init resets every sysctl to default).
pub unsafe fn set_tail_loss_probe(on: bool) -> bool {
    #[cfg(usrsctp_patched)]
    {
        // SAFETY: a plain store into the initialised library's settings.
        unsafe { usrsctp_sysctl_set_sctp_wanmpi_tlp(u32::from(on)) == 0 }
    }
    #[cfg(not(usrsctp_patched))]
    {
        let _ = on;
        false
    }
}

#[cfg(test)]
mod layout_tests {
    use super::*;
    use std::mem::{align_of, size_of};

    // Sizes printed by a C program compiled against /usr/include/usrsctp.h.
    #[test]
    fn struct_sizes_match_the_c_header() {
        assert_eq!(size_of::<sockaddr_conn>(), 16);
        assert_eq!(size_of::<sctp_rcvinfo>(), 28);
        assert_eq!(size_of::<sctp_sndinfo>(), 16);
        assert_eq!(size_of::<sctp_initmsg>(), 8);
        assert_eq!(size_of::<sctp_rtoinfo>(), 16);
        assert_eq!(size_of::<sctp_assocparams>(), 20);
        assert_eq!(size_of::<sctp_paddrparams>(), 152);
        assert_eq!(align_of::<sctp_paddrparams>(), 8);
        assert_eq!(size_of::<sctp_assoc_value>(), 8);
        assert_eq!(size_of::<sctp_sack_info>(), 12);
        assert_eq!(size_of::<sctp_event>(), 8);
        assert_eq!(size_of::<sctp_assoc_change>(), 20);
        assert_eq!(size_of::<sctp_paddrinfo>(), 152);
        assert_eq!(size_of::<sctp_status>(), 176);
        assert_eq!(size_of::<sctp_shutdown_event>(), 12);
        assert_eq!(size_of::<sctp_pdapi_event>(), 24);
        assert_eq!(size_of::<sctp_send_failed_event>(), 32);
        assert_eq!(size_of::<sctp_paddr_change>(), 152);
        assert_eq!(size_of::<sctpstat>(), 664);
    }

    #[test]
    fn field_offsets_match_the_c_header() {
        let p = sctp_paddrparams::default();
        let base = &p as *const _ as usize;
        assert_eq!(&p.spp_hbinterval as *const _ as usize - base, 132);
        assert_eq!(&p.spp_pathmtu as *const _ as usize - base, 136);
        assert_eq!(&p.spp_flags as *const _ as usize - base, 140);
        assert_eq!(&p.spp_pathmaxrxt as *const _ as usize - base, 148);
        let s = sctp_status::default();
        let base = &s as *const _ as usize;
        assert_eq!(&s.sstat_primary as *const _ as usize - base, 24);
        assert_eq!(&s.sstat_primary.spinfo_cwnd as *const _ as usize - base, 24 + 136);
        let r = sctp_rcvinfo::default();
        assert_eq!(&r.rcv_assoc_id as *const _ as usize - &r as *const _ as usize, 24);
        let c = sctp_assoc_change::default();
        assert_eq!(&c.sac_assoc_id as *const _ as usize - &c as *const _ as usize, 16);
    }

    #[test]
    fn crc32c_of_the_library_matches_the_rfc_3720_check_value() {
        // "123456789" -> 0xE3069283. usrsctp returns the value to store
        // natively in the header, which on a little-endian host is the
        // standard CRC value itself.
        let mut data = *b"123456789";
        let crc = unsafe { usrsctp_crc32c(data.as_mut_ptr().cast(), data.len()) };
        #[cfg(target_endian = "little")]
        assert_eq!(crc, 0xE306_9283);
    }
}
