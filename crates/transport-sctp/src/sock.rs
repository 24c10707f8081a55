//! A thin owner of one usrsctp one-to-many socket: typed socket options,
//! send and receive with RFC 6458 info structs, errno mapped to io::Error.

use crate::error::SctpError;
use std::io;
use std::mem::size_of;
use usrsctp_sys as sys;

pub(crate) struct Sock {
    raw: *mut sys::socket,
}

/// What one `usrsctp_recvv` returned.
pub(crate) struct Recvd {
    pub len: usize,
    pub notification: bool,
    pub eor: bool,
    pub info: Option<sys::sctp_rcvinfo>,
}

pub(crate) fn conn_addr(token: usize, port: u16) -> sys::sockaddr_conn {
    sys::sockaddr_conn { sconn_family: sys::AF_CONN as u16, sconn_port: port.to_be(), sconn_addr: token as *mut libc::c_void }
}

pub(crate) fn would_block(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EAGAIN) | Some(libc::EINPROGRESS))
}

impl Sock {
    /// A non-blocking SOCK_SEQPACKET (one-to-many) AF_CONN socket.
    pub fn new() -> Result<Sock, SctpError> {
        // SAFETY: no callbacks (we poll with recvv), no ulp info.
        let raw =
            unsafe { sys::usrsctp_socket(sys::AF_CONN, libc::SOCK_SEQPACKET, sys::IPPROTO_SCTP, std::ptr::null(), None, 0, std::ptr::null_mut()) };
        if raw.is_null() {
            return Err(SctpError::stack("usrsctp_socket"));
        }
        let s = Sock { raw };
        // SAFETY: valid socket.
        if unsafe { sys::usrsctp_set_non_blocking(s.raw, 1) } < 0 {
            return Err(SctpError::stack("usrsctp_set_non_blocking"));
        }
        Ok(s)
    }

    pub fn set<T>(&self, level: i32, name: i32, value: &T, what: &'static str) -> Result<(), SctpError> {
        // SAFETY: `value` is a live T of the size passed.
        let r = unsafe { sys::usrsctp_setsockopt(self.raw, level, name, (value as *const T).cast(), size_of::<T>() as libc::socklen_t) };
        if r < 0 {
            return Err(SctpError::stack(what));
        }
        Ok(())
    }

    pub fn set_sctp<T>(&self, name: i32, value: &T, what: &'static str) -> Result<(), SctpError> {
        self.set(sys::IPPROTO_SCTP, name, value, what)
    }

    /// Reads an association-level option (`usrsctp_opt_info`).
    pub fn info<T: Default>(&self, assoc: u32, name: i32) -> io::Result<T> {
        let mut v = T::default();
        let mut len = size_of::<T>() as libc::socklen_t;
        // SAFETY: `v` is a live T of `len` bytes.
        let r = unsafe { sys::usrsctp_opt_info(self.raw, assoc, name, (&mut v as *mut T).cast(), &mut len) };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(v)
    }

    /// Binds every registered AF_CONN address (wildcard) on `port`.
    pub fn bind(&self, port: u16) -> Result<(), SctpError> {
        let mut a = conn_addr(0, port);
        // SAFETY: a valid sockaddr_conn of the size passed.
        let r = unsafe { sys::usrsctp_bind(self.raw, (&mut a as *mut sys::sockaddr_conn).cast(), size_of::<sys::sockaddr_conn>() as _) };
        if r < 0 {
            return Err(SctpError::stack("usrsctp_bind"));
        }
        // SAFETY: valid socket; on a one-to-many socket listen accepts INITs.
        if unsafe { sys::usrsctp_listen(self.raw, 1) } < 0 {
            return Err(SctpError::stack("usrsctp_listen"));
        }
        Ok(())
    }

    /// Starts an association to the peer behind `token`, SCTP port `port`.
    pub fn connect(&self, token: usize, port: u16) -> Result<(), SctpError> {
        let mut a = conn_addr(token, port);
        // SAFETY: a valid sockaddr_conn of the size passed.
        let r = unsafe { sys::usrsctp_connect(self.raw, (&mut a as *mut sys::sockaddr_conn).cast(), size_of::<sys::sockaddr_conn>() as _) };
        if r < 0 {
            let e = io::Error::last_os_error();
            if !would_block(&e) {
                return Err(SctpError::Stack { call: "usrsctp_connect", err: e });
            }
        }
        Ok(())
    }

    /// The AF_CONN token of the association's peer.
    pub fn peer_token(&self, assoc: u32) -> Option<usize> {
        let mut addrs: *mut libc::sockaddr = std::ptr::null_mut();
        // SAFETY: usrsctp allocates the list; we free it below.
        let n = unsafe { sys::usrsctp_getpaddrs(self.raw, assoc, &mut addrs) };
        if n <= 0 || addrs.is_null() {
            return None;
        }
        // SAFETY: n > 0 addresses; AF_CONN ones are sockaddr_conn.
        let token = unsafe {
            let first = addrs.cast::<sys::sockaddr_conn>().read_unaligned();
            (first.sconn_family == sys::AF_CONN as u16).then_some(first.sconn_addr as usize)
        };
        // SAFETY: returned by usrsctp_getpaddrs.
        unsafe { sys::usrsctp_freepaddrs(addrs) };
        token
    }

    /// Sends one whole message on `sid` of `assoc`. Ok(len) or the errno.
    pub fn send(&self, assoc: u32, sid: u16, ppid: u32, flags: u16, data: &[u8]) -> io::Result<usize> {
        let mut info = sys::sctp_sndinfo { snd_sid: sid, snd_flags: flags, snd_ppid: ppid, snd_context: 0, snd_assoc_id: assoc };
        // usrsctp rejects a NULL data pointer even for an empty SCTP_EOF send.
        let dummy = [0u8; 1];
        let ptr = if data.is_empty() { dummy.as_ptr() } else { data.as_ptr() };
        // SAFETY: `ptr` is valid for `data.len()` bytes; info is a live sndinfo.
        let n = unsafe {
            sys::usrsctp_sendv(
                self.raw,
                ptr.cast(),
                data.len(),
                std::ptr::null_mut(),
                0,
                (&mut info as *mut sys::sctp_sndinfo).cast(),
                size_of::<sys::sctp_sndinfo>() as _,
                sys::SCTP_SENDV_SNDINFO,
                0,
            )
        };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(n as usize)
    }

    /// Receives the next message or piece of one; None when nothing is ready.
    pub fn recv(&self, buf: &mut [u8]) -> io::Result<Option<Recvd>> {
        let mut info = sys::sctp_rcvinfo::default();
        let mut infolen = size_of::<sys::sctp_rcvinfo>() as libc::socklen_t;
        let mut infotype: libc::c_uint = 0;
        let mut flags: libc::c_int = 0;
        let mut from = [0u8; 128];
        let mut fromlen = from.len() as libc::socklen_t;
        // SAFETY: all pointers are live buffers of the sizes passed.
        let n = unsafe {
            sys::usrsctp_recvv(
                self.raw,
                buf.as_mut_ptr().cast(),
                buf.len(),
                from.as_mut_ptr().cast(),
                &mut fromlen,
                (&mut info as *mut sys::sctp_rcvinfo).cast(),
                &mut infolen,
                &mut infotype,
                &mut flags,
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            return if would_block(&e) { Ok(None) } else { Err(e) };
        }
        Ok(Some(Recvd {
            len: n as usize,
            notification: flags & sys::MSG_NOTIFICATION != 0,
            eor: flags & sys::MSG_EOR != 0,
            info: (infotype == sys::SCTP_RECVV_RCVINFO).then_some(info),
        }))
    }

    /// Makes close abort every association instead of shutting it down.
    pub fn abort_on_close(&self) {
        let l = libc::linger { l_onoff: 1, l_linger: 0 };
        let _ = self.set(libc::SOL_SOCKET, libc::SO_LINGER, &l, "SO_LINGER");
    }
}

impl Drop for Sock {
    fn drop(&mut self) {
        // SAFETY: we own the socket and close it once.
        unsafe { sys::usrsctp_close(self.raw) };
    }
}
