//! Point-to-point communication (MPI-3.1 chapter 3): the send modes,
//! receive, sendrecv, probe and matched probe, persistent requests and the
//! buffered-send buffer. Blocking calls are the nonblocking ones plus a wait.

use std::ffi::c_void;
use std::os::raw::{c_int, c_long};

use wanmpi_runtime::{ErrorClass, Message, MpiError, Req, SendMode, Status};

use crate::args::{buffer, comm_id, count, datatype_arg, out, Count, DatatypeArg};
use crate::error::{call, fail, R};
use crate::global::{objs, rt};
use crate::predef::{BYTE, DATATYPE_NULL, MESSAGE_NO_PROC, MESSAGE_NULL, PROC_NULL};
use crate::request::new_request;
use crate::status::{self, MPI_Status};

struct Args {
    n: usize,
    dt: DatatypeArg,
}

fn decode<C: Count>(buf: *const c_void, c: C, dt: c_int) -> R<Args> {
    let n = count(c)?;
    let dt = datatype_arg(dt)?;
    buffer(buf as *const u8, n, &dt)?;
    Ok(Args { n, dt })
}

/// `decode` for a call with `peer`: nothing to or from MPI_PROC_NULL may
/// name MPI_DATATYPE_NULL, as MPICH accepts (its test pt2pt/recvnull).
fn decode_for<C: Count>(buf: *const c_void, c: C, dt: c_int, peer: c_int) -> R<Args> {
    let n = count(c)?;
    if n == 0 && dt == DATATYPE_NULL && peer == PROC_NULL {
        return decode(buf, c, BYTE);
    }
    decode(buf, c, dt)
}

unsafe fn isend<C: Count>(buf: *const c_void, c: C, dt: c_int, dest: c_int, tag: c_int, comm: c_int, mode: SendMode) -> R<Req> {
    let a = decode_for(buf, c, dt, dest)?;
    let cid = comm_id(comm)?;
    rt()?.isend(buf as *const u8, a.n, &a.dt, dest, tag, cid, mode)
}

unsafe fn irecv<C: Count>(buf: *mut c_void, c: C, dt: c_int, source: c_int, tag: c_int, comm: c_int) -> R<Req> {
    let a = decode_for(buf, c, dt, source)?;
    let cid = comm_id(comm)?;
    rt()?.irecv(buf as *mut u8, a.n, &a.dt, source, tag, cid)
}

unsafe fn send<C: Count>(buf: *const c_void, c: C, dt: c_int, dest: c_int, tag: c_int, comm: c_int, mode: SendMode) -> c_int {
    call(comm, || {
        let a = decode_for(buf, c, dt, dest)?;
        let cid = comm_id(comm)?;
        let s = rt()?.send(buf as *const u8, a.n, &a.dt, dest, tag, cid, mode)?;
        s.error.map_or(Ok(()), Err)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Send(buf: *const c_void, c: c_int, dt: c_int, dest: c_int, tag: c_int, comm: c_int) -> c_int {
    send(buf, c, dt, dest, tag, comm, SendMode::Standard)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Send_c(buf: *const c_void, c: c_long, dt: c_int, dest: c_int, tag: c_int, comm: c_int) -> c_int {
    send(buf, c, dt, dest, tag, comm, SendMode::Standard)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Ssend(buf: *const c_void, c: c_int, dt: c_int, dest: c_int, tag: c_int, comm: c_int) -> c_int {
    send(buf, c, dt, dest, tag, comm, SendMode::Synchronous)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Ssend_c(buf: *const c_void, c: c_long, dt: c_int, dest: c_int, tag: c_int, comm: c_int) -> c_int {
    send(buf, c, dt, dest, tag, comm, SendMode::Synchronous)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Rsend(buf: *const c_void, c: c_int, dt: c_int, dest: c_int, tag: c_int, comm: c_int) -> c_int {
    send(buf, c, dt, dest, tag, comm, SendMode::Ready)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Rsend_c(buf: *const c_void, c: c_long, dt: c_int, dest: c_int, tag: c_int, comm: c_int) -> c_int {
    send(buf, c, dt, dest, tag, comm, SendMode::Ready)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Bsend(buf: *const c_void, c: c_int, dt: c_int, dest: c_int, tag: c_int, comm: c_int) -> c_int {
    send(buf, c, dt, dest, tag, comm, SendMode::Buffered)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Bsend_c(buf: *const c_void, c: c_long, dt: c_int, dest: c_int, tag: c_int, comm: c_int) -> c_int {
    send(buf, c, dt, dest, tag, comm, SendMode::Buffered)
}

unsafe fn start_send<C: Count>(buf: *const c_void, c: C, dt: c_int, dest: c_int, tag: c_int, comm: c_int, mode: SendMode, req: *mut c_int) -> c_int {
    call(comm, || {
        let out_req = out(req, "request")?;
        let r = isend(buf, c, dt, dest, tag, comm, mode)?;
        *out_req = new_request(r, comm, false)?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Isend(buf: *const c_void, c: c_int, dt: c_int, dest: c_int, tag: c_int, comm: c_int, req: *mut c_int) -> c_int {
    start_send(buf, c, dt, dest, tag, comm, SendMode::Standard, req)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Isend_c(buf: *const c_void, c: c_long, dt: c_int, dest: c_int, tag: c_int, comm: c_int, req: *mut c_int) -> c_int {
    start_send(buf, c, dt, dest, tag, comm, SendMode::Standard, req)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Issend(buf: *const c_void, c: c_int, dt: c_int, dest: c_int, tag: c_int, comm: c_int, req: *mut c_int) -> c_int {
    start_send(buf, c, dt, dest, tag, comm, SendMode::Synchronous, req)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Issend_c(buf: *const c_void, c: c_long, dt: c_int, dest: c_int, tag: c_int, comm: c_int, req: *mut c_int) -> c_int {
    start_send(buf, c, dt, dest, tag, comm, SendMode::Synchronous, req)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Irsend(buf: *const c_void, c: c_int, dt: c_int, dest: c_int, tag: c_int, comm: c_int, req: *mut c_int) -> c_int {
    start_send(buf, c, dt, dest, tag, comm, SendMode::Ready, req)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Irsend_c(buf: *const c_void, c: c_long, dt: c_int, dest: c_int, tag: c_int, comm: c_int, req: *mut c_int) -> c_int {
    start_send(buf, c, dt, dest, tag, comm, SendMode::Ready, req)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Ibsend(buf: *const c_void, c: c_int, dt: c_int, dest: c_int, tag: c_int, comm: c_int, req: *mut c_int) -> c_int {
    start_send(buf, c, dt, dest, tag, comm, SendMode::Buffered, req)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Ibsend_c(buf: *const c_void, c: c_long, dt: c_int, dest: c_int, tag: c_int, comm: c_int, req: *mut c_int) -> c_int {
    start_send(buf, c, dt, dest, tag, comm, SendMode::Buffered, req)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Recv(buf: *mut c_void, c: c_int, dt: c_int, source: c_int, tag: c_int, comm: c_int, st: *mut MPI_Status) -> c_int {
    recv(buf, c, dt, source, tag, comm, st)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Recv_c(buf: *mut c_void, c: c_long, dt: c_int, source: c_int, tag: c_int, comm: c_int, st: *mut MPI_Status) -> c_int {
    recv(buf, c, dt, source, tag, comm, st)
}

// MPI_Recv and MPI_Recv_c.
unsafe fn recv<C: Count>(buf: *mut c_void, c: C, dt: c_int, source: c_int, tag: c_int, comm: c_int, st: *mut MPI_Status) -> c_int {
    call(comm, || {
        let a = decode_for(buf, c, dt, source)?;
        let cid = comm_id(comm)?;
        let s = rt()?.recv(buf as *mut u8, a.n, &a.dt, source, tag, cid)?;
        status::write(st, &s);
        s.error.map_or(Ok(()), Err)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Irecv(buf: *mut c_void, c: c_int, dt: c_int, source: c_int, tag: c_int, comm: c_int, req: *mut c_int) -> c_int {
    start_recv(buf, c, dt, source, tag, comm, req)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Irecv_c(buf: *mut c_void, c: c_long, dt: c_int, source: c_int, tag: c_int, comm: c_int, req: *mut c_int) -> c_int {
    start_recv(buf, c, dt, source, tag, comm, req)
}

// MPI_Irecv and MPI_Irecv_c.
unsafe fn start_recv<C: Count>(buf: *mut c_void, c: C, dt: c_int, source: c_int, tag: c_int, comm: c_int, req: *mut c_int) -> c_int {
    call(comm, || {
        let out_req = out(req, "request")?;
        let r = irecv(buf, c, dt, source, tag, comm)?;
        *out_req = new_request(r, comm, false)?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Sendrecv(
    sbuf: *const c_void,
    scount: c_int,
    sdt: c_int,
    dest: c_int,
    stag: c_int,
    rbuf: *mut c_void,
    rcount: c_int,
    rdt: c_int,
    source: c_int,
    rtag: c_int,
    comm: c_int,
    st: *mut MPI_Status,
) -> c_int {
    sendrecv(sbuf, scount, sdt, dest, stag, rbuf, rcount, rdt, source, rtag, comm, st)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Sendrecv_c(
    sbuf: *const c_void,
    scount: c_long,
    sdt: c_int,
    dest: c_int,
    stag: c_int,
    rbuf: *mut c_void,
    rcount: c_long,
    rdt: c_int,
    source: c_int,
    rtag: c_int,
    comm: c_int,
    st: *mut MPI_Status,
) -> c_int {
    sendrecv(sbuf, scount, sdt, dest, stag, rbuf, rcount, rdt, source, rtag, comm, st)
}

// MPI_Sendrecv and MPI_Sendrecv_c.
#[allow(clippy::too_many_arguments)]
unsafe fn sendrecv<C: Count>(
    sbuf: *const c_void,
    scount: C,
    sdt: c_int,
    dest: c_int,
    stag: c_int,
    rbuf: *mut c_void,
    rcount: C,
    rdt: c_int,
    source: c_int,
    rtag: c_int,
    comm: c_int,
    st: *mut MPI_Status,
) -> c_int {
    call(comm, || {
        let rr = irecv(rbuf, rcount, rdt, source, rtag, comm)?;
        let sr = isend(sbuf, scount, sdt, dest, stag, comm, SendMode::Standard)?;
        let done = rt()?.waitall(&[Some(rr), Some(sr)])?;
        let recv = done[0].as_ref().map(|c| c.status.clone()).unwrap_or_else(Status::proc_null);
        status::write(st, &recv);
        if let Some(e) = done.iter().flatten().find_map(|c| c.status.error.clone()) {
            return Err(e);
        }
        Ok(())
    })
}

/// MPI_Isendrecv (MPI-4.0 §3.10): one request for both halves.
#[no_mangle]
pub unsafe extern "C" fn PMPI_Isendrecv(
    sbuf: *const c_void,
    scount: c_int,
    sdt: c_int,
    dest: c_int,
    stag: c_int,
    rbuf: *mut c_void,
    rcount: c_int,
    rdt: c_int,
    source: c_int,
    rtag: c_int,
    comm: c_int,
    req: *mut c_int,
) -> c_int {
    isendrecv(sbuf, scount, sdt, dest, stag, rbuf, rcount, rdt, source, rtag, comm, req)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Isendrecv_c(
    sbuf: *const c_void,
    scount: c_long,
    sdt: c_int,
    dest: c_int,
    stag: c_int,
    rbuf: *mut c_void,
    rcount: c_long,
    rdt: c_int,
    source: c_int,
    rtag: c_int,
    comm: c_int,
    req: *mut c_int,
) -> c_int {
    isendrecv(sbuf, scount, sdt, dest, stag, rbuf, rcount, rdt, source, rtag, comm, req)
}

// MPI_Isendrecv and MPI_Isendrecv_c.
#[allow(clippy::too_many_arguments)]
unsafe fn isendrecv<C: Count>(
    sbuf: *const c_void,
    scount: C,
    sdt: c_int,
    dest: c_int,
    stag: c_int,
    rbuf: *mut c_void,
    rcount: C,
    rdt: c_int,
    source: c_int,
    rtag: c_int,
    comm: c_int,
    req: *mut c_int,
) -> c_int {
    call(comm, || {
        let o = out(req, "request")?;
        let (s, r) = (decode_for(sbuf, scount, sdt, dest)?, decode_for(rbuf, rcount, rdt, source)?);
        let q = rt()?.isendrecv((sbuf as *const u8, s.n, &s.dt), dest, stag, (rbuf as *mut u8, r.n, &r.dt), source, rtag, comm_id(comm)?)?;
        *o = new_request(q, comm, false)?;
        Ok(())
    })
}

/// MPI_Isendrecv_replace (MPI-4.0 §3.10).
#[no_mangle]
pub unsafe extern "C" fn PMPI_Isendrecv_replace(
    buf: *mut c_void,
    c: c_int,
    dt: c_int,
    dest: c_int,
    stag: c_int,
    source: c_int,
    rtag: c_int,
    comm: c_int,
    req: *mut c_int,
) -> c_int {
    isendrecv_replace(buf, c, dt, dest, stag, source, rtag, comm, req)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Isendrecv_replace_c(
    buf: *mut c_void,
    c: c_long,
    dt: c_int,
    dest: c_int,
    stag: c_int,
    source: c_int,
    rtag: c_int,
    comm: c_int,
    req: *mut c_int,
) -> c_int {
    isendrecv_replace(buf, c, dt, dest, stag, source, rtag, comm, req)
}

// MPI_Isendrecv_replace and MPI_Isendrecv_replace_c.
#[allow(clippy::too_many_arguments)]
unsafe fn isendrecv_replace<C: Count>(
    buf: *mut c_void,
    c: C,
    dt: c_int,
    dest: c_int,
    stag: c_int,
    source: c_int,
    rtag: c_int,
    comm: c_int,
    req: *mut c_int,
) -> c_int {
    call(comm, || {
        let o = out(req, "request")?;
        let a = decode(buf, c, dt)?;
        let q = rt()?.isendrecv_replace(buf as *mut u8, a.n, &a.dt, dest, stag, source, rtag, comm_id(comm)?)?;
        *o = new_request(q, comm, false)?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Sendrecv_replace(
    buf: *mut c_void,
    c: c_int,
    dt: c_int,
    dest: c_int,
    stag: c_int,
    source: c_int,
    rtag: c_int,
    comm: c_int,
    st: *mut MPI_Status,
) -> c_int {
    sendrecv_replace(buf, c, dt, dest, stag, source, rtag, comm, st)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Sendrecv_replace_c(
    buf: *mut c_void,
    c: c_long,
    dt: c_int,
    dest: c_int,
    stag: c_int,
    source: c_int,
    rtag: c_int,
    comm: c_int,
    st: *mut MPI_Status,
) -> c_int {
    sendrecv_replace(buf, c, dt, dest, stag, source, rtag, comm, st)
}

// MPI_Sendrecv_replace and MPI_Sendrecv_replace_c.
#[allow(clippy::too_many_arguments)]
unsafe fn sendrecv_replace<C: Count>(
    buf: *mut c_void,
    c: C,
    dt: c_int,
    dest: c_int,
    stag: c_int,
    source: c_int,
    rtag: c_int,
    comm: c_int,
    st: *mut MPI_Status,
) -> c_int {
    call(comm, || {
        let a = decode(buf, c, dt)?;
        let cid = comm_id(comm)?;
        // The outgoing data is packed first, so the receive may overwrite
        // the buffer; packed bytes are what goes on the wire anyway.
        let mut packed = Vec::new();
        a.dt.pack(buf as *const u8, a.n, &mut packed);
        let byte = crate::predef::datatype(0x4c00_010d).ok_or_else(|| MpiError::new(ErrorClass::Intern, "MPI_BYTE missing"))?;
        let r = rt()?;
        let rr = r.irecv(buf as *mut u8, a.n, &a.dt, source, rtag, cid)?;
        let sr = r.isend(packed.as_ptr(), packed.len(), byte, dest, stag, cid, SendMode::Standard)?;
        let done = r.waitall(&[Some(rr), Some(sr)])?;
        drop(packed);
        let recv = done[0].as_ref().map(|c| c.status.clone()).unwrap_or_else(Status::proc_null);
        status::write(st, &recv);
        done.iter().flatten().find_map(|c| c.status.error.clone()).map_or(Ok(()), Err)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Probe(source: c_int, tag: c_int, comm: c_int, st: *mut MPI_Status) -> c_int {
    call(comm, || {
        let s = rt()?.probe(source, tag, comm_id(comm)?)?;
        status::write(st, &s);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Iprobe(source: c_int, tag: c_int, comm: c_int, flag: *mut c_int, st: *mut MPI_Status) -> c_int {
    call(comm, || {
        let flag = out(flag, "flag")?;
        let s = rt()?.iprobe(source, tag, comm_id(comm)?)?;
        *flag = c_int::from(s.is_some());
        if let Some(s) = s {
            status::write(st, &s);
        }
        Ok(())
    })
}

fn message_handle(m: Message, comm: c_int) -> R<c_int> {
    match m {
        Message::NoProc => Ok(MESSAGE_NO_PROC),
        Message::Id(_) => objs().msgs.insert((m, comm)).ok_or_else(|| MpiError::new(ErrorClass::NoMem, "too many messages")),
    }
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Mprobe(source: c_int, tag: c_int, comm: c_int, msg: *mut c_int, st: *mut MPI_Status) -> c_int {
    call(comm, || {
        let msg = out(msg, "message")?;
        let (m, s) = rt()?.mprobe(source, tag, comm_id(comm)?)?;
        *msg = message_handle(m, comm)?;
        status::write(st, &s);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Improbe(source: c_int, tag: c_int, comm: c_int, flag: *mut c_int, msg: *mut c_int, st: *mut MPI_Status) -> c_int {
    call(comm, || {
        let flag = out(flag, "flag")?;
        let msg = out(msg, "message")?;
        match rt()?.improbe(source, tag, comm_id(comm)?)? {
            Some((m, s)) => {
                *flag = 1;
                *msg = message_handle(m, comm)?;
                status::write(st, &s);
            }
            None => *flag = 0,
        }
        Ok(())
    })
}

/// Takes a message handle (it becomes MPI_MESSAGE_NULL).
fn take_message(h: &mut c_int) -> R<(Message, c_int)> {
    let m = match *h {
        MESSAGE_NO_PROC => (Message::NoProc, crate::predef::COMM_SELF),
        MESSAGE_NULL => return fail(ErrorClass::Request, "MPI_MESSAGE_NULL is not a valid message here"),
        v => objs().msgs.remove(v).ok_or_else(|| MpiError::new(ErrorClass::Request, format!("{v:#x} is not a valid message handle")))?,
    };
    *h = MESSAGE_NULL;
    Ok(m)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Mrecv(buf: *mut c_void, c: c_int, dt: c_int, msg: *mut c_int, st: *mut MPI_Status) -> c_int {
    mrecv(buf, c, dt, msg, st)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Mrecv_c(buf: *mut c_void, c: c_long, dt: c_int, msg: *mut c_int, st: *mut MPI_Status) -> c_int {
    mrecv(buf, c, dt, msg, st)
}

// MPI_Mrecv and MPI_Mrecv_c.
unsafe fn mrecv<C: Count>(buf: *mut c_void, c: C, dt: c_int, msg: *mut c_int, st: *mut MPI_Status) -> c_int {
    call(crate::predef::COMM_WORLD, || {
        let a = decode(buf, c, dt)?;
        let (m, _) = take_message(out(msg, "message")?)?;
        let r = rt()?.imrecv(buf as *mut u8, a.n, &a.dt, m)?;
        let done = rt()?.wait(r)?;
        status::write(st, &done.status);
        done.status.error.map_or(Ok(()), Err)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Imrecv(buf: *mut c_void, c: c_int, dt: c_int, msg: *mut c_int, req: *mut c_int) -> c_int {
    imrecv(buf, c, dt, msg, req)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Imrecv_c(buf: *mut c_void, c: c_long, dt: c_int, msg: *mut c_int, req: *mut c_int) -> c_int {
    imrecv(buf, c, dt, msg, req)
}

// MPI_Imrecv and MPI_Imrecv_c.
unsafe fn imrecv<C: Count>(buf: *mut c_void, c: C, dt: c_int, msg: *mut c_int, req: *mut c_int) -> c_int {
    call(crate::predef::COMM_WORLD, || {
        let a = decode(buf, c, dt)?;
        let out_req = out(req, "request")?;
        let (m, comm) = take_message(out(msg, "message")?)?;
        let r = rt()?.imrecv(buf as *mut u8, a.n, &a.dt, m)?;
        *out_req = new_request(r, comm, false)?;
        Ok(())
    })
}

unsafe fn send_init<C: Count>(buf: *const c_void, c: C, dt: c_int, dest: c_int, tag: c_int, comm: c_int, mode: SendMode, req: *mut c_int) -> c_int {
    call(comm, || {
        let out_req = out(req, "request")?;
        let a = decode(buf, c, dt)?;
        let r = rt()?.send_init(buf as *const u8, a.n, &a.dt, dest, tag, comm_id(comm)?, mode)?;
        *out_req = new_request(r, comm, true)?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Send_init(buf: *const c_void, c: c_int, dt: c_int, dest: c_int, tag: c_int, comm: c_int, req: *mut c_int) -> c_int {
    send_init(buf, c, dt, dest, tag, comm, SendMode::Standard, req)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Send_init_c(buf: *const c_void, c: c_long, dt: c_int, dest: c_int, tag: c_int, comm: c_int, req: *mut c_int) -> c_int {
    send_init(buf, c, dt, dest, tag, comm, SendMode::Standard, req)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Ssend_init(buf: *const c_void, c: c_int, dt: c_int, dest: c_int, tag: c_int, comm: c_int, req: *mut c_int) -> c_int {
    send_init(buf, c, dt, dest, tag, comm, SendMode::Synchronous, req)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Ssend_init_c(buf: *const c_void, c: c_long, dt: c_int, dest: c_int, tag: c_int, comm: c_int, req: *mut c_int) -> c_int {
    send_init(buf, c, dt, dest, tag, comm, SendMode::Synchronous, req)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Rsend_init(buf: *const c_void, c: c_int, dt: c_int, dest: c_int, tag: c_int, comm: c_int, req: *mut c_int) -> c_int {
    send_init(buf, c, dt, dest, tag, comm, SendMode::Ready, req)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Rsend_init_c(buf: *const c_void, c: c_long, dt: c_int, dest: c_int, tag: c_int, comm: c_int, req: *mut c_int) -> c_int {
    send_init(buf, c, dt, dest, tag, comm, SendMode::Ready, req)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Bsend_init(buf: *const c_void, c: c_int, dt: c_int, dest: c_int, tag: c_int, comm: c_int, req: *mut c_int) -> c_int {
    send_init(buf, c, dt, dest, tag, comm, SendMode::Buffered, req)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Bsend_init_c(buf: *const c_void, c: c_long, dt: c_int, dest: c_int, tag: c_int, comm: c_int, req: *mut c_int) -> c_int {
    send_init(buf, c, dt, dest, tag, comm, SendMode::Buffered, req)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Recv_init(buf: *mut c_void, c: c_int, dt: c_int, source: c_int, tag: c_int, comm: c_int, req: *mut c_int) -> c_int {
    recv_init(buf, c, dt, source, tag, comm, req)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Recv_init_c(buf: *mut c_void, c: c_long, dt: c_int, source: c_int, tag: c_int, comm: c_int, req: *mut c_int) -> c_int {
    recv_init(buf, c, dt, source, tag, comm, req)
}

// MPI_Recv_init and MPI_Recv_init_c.
unsafe fn recv_init<C: Count>(buf: *mut c_void, c: C, dt: c_int, source: c_int, tag: c_int, comm: c_int, req: *mut c_int) -> c_int {
    call(comm, || {
        let out_req = out(req, "request")?;
        let a = decode(buf, c, dt)?;
        let r = rt()?.recv_init(buf as *mut u8, a.n, &a.dt, source, tag, comm_id(comm)?)?;
        *out_req = new_request(r, comm, true)?;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Buffer_attach(buf: *mut c_void, size: c_int) -> c_int {
    buffer_attach(buf, size)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Buffer_attach_c(buf: *mut c_void, size: c_long) -> c_int {
    buffer_attach(buf, size)
}

// MPI_Buffer_attach and MPI_Buffer_attach_c.
unsafe fn buffer_attach<C: Count>(buf: *mut c_void, size: C) -> c_int {
    call(crate::predef::COMM_WORLD, || {
        let n = usize::try_from(size.wide()).or_else(|_| fail(ErrorClass::Arg, format!("buffer size {size} is negative")))?;
        rt()?.buffer_attach(buf as usize, n)
    })
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Buffer_detach(buffer_addr: *mut c_void, size: *mut c_int) -> c_int {
    buffer_detach(buffer_addr, size)
}

#[no_mangle]
pub unsafe extern "C" fn PMPI_Buffer_detach_c(buffer_addr: *mut c_void, size: *mut c_long) -> c_int {
    buffer_detach(buffer_addr, size)
}

// MPI_Buffer_detach and MPI_Buffer_detach_c.
unsafe fn buffer_detach<C: Count>(buffer_addr: *mut c_void, size: *mut C) -> c_int {
    call(crate::predef::COMM_WORLD, || {
        let addr = out(buffer_addr as *mut *mut c_void, "buffer_addr")?;
        let size = out(size, "size")?;
        let (a, n) = rt()?.buffer_detach()?;
        *addr = a as *mut c_void;
        *size = crate::args::to_count(n, "size")?;
        Ok(())
    })
}
