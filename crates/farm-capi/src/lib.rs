//! wanmpi-farm-capi: the task farm for C programs (`include/wanmpi_farm.h`,
//! `libwanmpi_farm.so`).
//!
//! The farm of `wanmpi-farm` runs unchanged; its MPI calls go through
//! [`ops::COps`] to the C MPI library the program links (wanmpi's libmpi,
//! or any MPI with the MPICH ABI), so program and farm share one MPI
//! runtime and the C program's `MPI_Comm` is used as it is. This crate is
//! only the C shell: configuration and callbacks in, a report and an MPI
//! error code out. It is not a Rust API (use `wanmpi-farm` for that).

mod callbacks;
mod ffi;
mod ops;

use std::cell::RefCell;
use std::ffi::CString;
use std::os::raw::{c_char, c_int};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::Duration;

use wanmpi_farm::raw::RawComm;
use wanmpi_farm::{FarmConfig, FarmError, Outcome, ProgressMode};

use callbacks::{CFarm, Callbacks};
use ffi::Comm;
use ops::{check, COps};

/// `wanmpi_farm_config` (include/wanmpi_farm.h).
#[repr(C)]
pub struct Config {
    pub total_tasks: u64,
    pub fanout: u32,
    pub max_requests: u32,
    pub adaptive: c_int,
    pub end_game: c_int,
    pub max_task_bytes: usize,
    pub max_result_bytes: usize,
    pub stall_timeout_s: f64,
    pub print_summary: c_int,
    pub progress: c_int,
    /// 0: no writer (rank 0 processes results); r >= 1: rank r does.
    pub writer: c_int,
}

/// `wanmpi_farm_report` (include/wanmpi_farm.h).
#[repr(C)]
#[derive(Default)]
pub struct Report {
    pub is_manager: c_int,
    pub tasks: u64,
    pub elapsed_s: f64,
    pub predicted_s: f64,
    pub compute_bound_s: f64,
    pub reissued: u64,
    pub duplicates: u64,
    pub lost_workers: u64,
    pub tasks_done: u64,
    pub is_writer: c_int,
    pub writer: c_int,
}

thread_local! {
    // Like errno: the C API's only way to hand back a message.
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

fn set_error(msg: &str) {
    let c = CString::new(msg.replace('\0', " ")).unwrap_or_default();
    LAST_ERROR.with(|e| *e.borrow_mut() = c);
}

/// Fills `cfg` with the Rust library's defaults.
///
/// # Safety
/// `cfg` is NULL or points to a writable `wanmpi_farm_config`.
#[no_mangle]
pub unsafe extern "C" fn wanmpi_farm_config_init(cfg: *mut Config) {
    let d = FarmConfig::default();
    if let Some(c) = cfg.as_mut() {
        *c = Config {
            total_tasks: 0,
            fanout: d.fanout,
            max_requests: d.max_requests,
            adaptive: d.adaptive.into(),
            end_game: d.end_game.into(),
            max_task_bytes: d.max_task_bytes,
            max_result_bytes: d.max_result_bytes,
            stall_timeout_s: d.stall_timeout.as_secs_f64(),
            print_summary: d.print_summary.into(),
            progress: 1,
            writer: 0,
        };
    }
}

/// The message of this thread's latest failure ("" if none).
#[no_mangle]
pub extern "C" fn wanmpi_farm_error_string() -> *const c_char {
    LAST_ERROR.with(|e| e.borrow().as_ptr())
}

fn farm_config(c: &Config) -> Result<FarmConfig, String> {
    if !(c.stall_timeout_s.is_finite() && c.stall_timeout_s > 0.0) {
        return Err(format!("stall_timeout_s must be positive, not {}", c.stall_timeout_s));
    }
    if c.writer < 0 {
        return Err(format!("writer must be 0 (none) or a rank >= 1, not {}", c.writer));
    }
    Ok(FarmConfig {
        fanout: c.fanout,
        max_requests: c.max_requests,
        adaptive: c.adaptive != 0,
        end_game: c.end_game != 0,
        max_task_bytes: c.max_task_bytes,
        max_result_bytes: c.max_result_bytes,
        stall_timeout: Duration::from_secs_f64(c.stall_timeout_s.min(1e9)),
        print_summary: c.print_summary != 0,
        progress: if c.progress != 0 { ProgressMode::Auto } else { ProgressMode::Off },
        writer: (c.writer > 0).then_some(c.writer),
        ..FarmConfig::default()
    })
}

/// The farm's two communicators: tasks and results with overtaking
/// allowed, control messages in order; both return errors as values.
// Byte strings with \0, not c"" literals: the workspace's MSRV is 1.75.
#[allow(clippy::manual_c_str_literals)]
fn duplicate(comm: Comm) -> Result<(Comm, Comm), wanmpi::MpiError> {
    let (mut info, mut data, mut ctl) = (ffi::INFO_NULL, 0, 0);
    // SAFETY: every call writes to a local handle; strings are NUL-terminated.
    unsafe {
        check(ffi::MPI_Info_create(&mut info), "MPI_Info_create")?;
        let set = ffi::MPI_Info_set(info, b"mpi_assert_allow_overtaking\0".as_ptr().cast(), b"true\0".as_ptr().cast());
        let dup = ffi::MPI_Comm_dup_with_info(comm, info, &mut data);
        ffi::MPI_Info_free(&mut info);
        check(set, "MPI_Info_set")?;
        check(dup, "MPI_Comm_dup_with_info")?;
        check(ffi::MPI_Comm_dup_with_info(comm, ffi::INFO_NULL, &mut ctl), "MPI_Comm_dup_with_info")?;
        check(ffi::MPI_Comm_set_errhandler(data, ffi::ERRORS_RETURN), "MPI_Comm_set_errhandler")?;
        check(ffi::MPI_Comm_set_errhandler(ctl, ffi::ERRORS_RETURN), "MPI_Comm_set_errhandler")?;
    }
    Ok((data, ctl))
}

fn fill(report: &mut Report, out: &Outcome) {
    *report = Report { predicted_s: -1.0, compute_bound_s: -1.0, ..Report::default() };
    match out {
        Outcome::Manager(r) => {
            report.is_manager = 1;
            report.tasks = r.total_tasks;
            report.elapsed_s = r.elapsed_s;
            report.predicted_s = r.predicted_s().unwrap_or(-1.0);
            report.compute_bound_s = r.compute_bound_s().unwrap_or(-1.0);
            report.reissued = r.reissued;
            report.duplicates = r.duplicates_discarded;
            report.lost_workers = r.lost_ranks().len() as u64;
            report.writer = r.writer.unwrap_or(0);
        }
        Outcome::Worker(w) => report.tasks_done = w.stats.tasks_done,
        Outcome::Writer(w) => {
            report.is_writer = 1;
            report.writer = w.rank;
            report.tasks = w.stats.processed;
            report.elapsed_s = w.elapsed_s;
            report.duplicates = w.stats.duplicates;
        }
    }
}

/// An MPI error class for a farm failure.
fn code_of(e: &FarmError) -> c_int {
    match e {
        FarmError::Mpi(m) => m.class as c_int,
        FarmError::Config(_) | FarmError::TooFewProcesses(_) | FarmError::MissingClosure(_) => ffi::ERR_ARG,
        _ => ffi::ERR_OTHER,
    }
}

unsafe fn run(comm: Comm, cfg: *const Config, cb: *const Callbacks, report: *mut Report) -> Result<(), (c_int, String)> {
    let arg = |m: &str| (ffi::ERR_ARG, m.to_string());
    let c = cfg.as_ref().ok_or_else(|| arg("cfg is NULL"))?;
    let cb = cb.as_ref().ok_or_else(|| arg("callbacks is NULL"))?;
    let fc = farm_config(c).map_err(|m| arg(&m))?;
    let (mut rank, mut size) = (0, 0);
    let mpi = |e: wanmpi::MpiError| (e.class as c_int, e.msg);
    check(ffi::MPI_Comm_rank(comm, &mut rank), "MPI_Comm_rank").map_err(mpi)?;
    check(ffi::MPI_Comm_size(comm, &mut size), "MPI_Comm_size").map_err(mpi)?;
    let is_writer = fc.writer == Some(rank);
    if rank == 0 && fc.writer.is_none() && (cb.create_task.is_none() || cb.process_result.is_none()) {
        return Err(arg("rank 0 (the manager) needs create_task and process_result"));
    }
    if rank == 0 && fc.writer.is_some() && cb.create_task.is_none() {
        return Err(arg("rank 0 (the scheduler) needs create_task"));
    }
    if is_writer && cb.process_result.is_none() {
        return Err(arg("the writer rank needs process_result"));
    }
    if rank != 0 && !is_writer && cb.do_task.is_none() {
        return Err(arg("workers need do_task"));
    }
    let (mut data, mut ctl) = duplicate(comm).map_err(mpi)?;
    let mut farm = CFarm { cb, total: c.total_tasks, task_cap: fc.max_task_bytes, result_cap: fc.max_result_bytes, failure: None };
    let rd = RawComm::from_ops(Arc::new(COps { comm: data }));
    let rc = RawComm::from_ops(Arc::new(COps { comm: ctl }));
    let out = wanmpi_farm::run_raw(rank, size, rd, rc, &fc, &mut farm);
    // With lost ranks freeing may fail; the farm's result stands either way.
    ffi::MPI_Comm_free(&mut data);
    ffi::MPI_Comm_free(&mut ctl);
    let out = out.map_err(|e| (code_of(&e), e.to_string()))?;
    if let Some(r) = report.as_mut() {
        fill(r, &out);
    }
    match farm.failure {
        Some(why) => Err((ffi::ERR_OTHER, format!("a callback failed: {why}"))),
        None => Ok(()),
    }
}

/// Runs the farm (collective over `comm`); see include/wanmpi_farm.h.
///
/// # Safety
/// `cfg` and `callbacks` are NULL or valid; `report` is NULL or writable;
/// the callbacks keep the contract of the header.
#[no_mangle]
pub unsafe extern "C" fn wanmpi_farm_run(comm: c_int, cfg: *const Config, callbacks: *const Callbacks, report: *mut Report) -> c_int {
    set_error("");
    let r = catch_unwind(AssertUnwindSafe(|| run(comm, cfg, callbacks, report)))
        .unwrap_or_else(|_| Err((ffi::ERR_OTHER, "internal error (a panic in the farm)".into())));
    match r {
        Ok(()) => ffi::SUCCESS,
        Err((code, msg)) => {
            set_error(&msg);
            code
        }
    }
}
