//! The C callbacks as a `Farm`: buffers of the configured capacity are
//! handed to the callbacks, and their lengths and return codes checked.

use std::os::raw::{c_int, c_void};

use wanmpi_farm::Farm;

pub type CreateFn = unsafe extern "C" fn(*mut c_void, u64, *mut c_void, usize, *mut usize) -> c_int;
pub type DoFn = unsafe extern "C" fn(*mut c_void, u64, *const c_void, usize, *mut c_void, usize, *mut usize) -> c_int;
pub type ProcessFn = unsafe extern "C" fn(*mut c_void, u64, *const c_void, usize) -> c_int;

/// `wanmpi_farm_callbacks` (include/wanmpi_farm.h).
#[repr(C)]
pub struct Callbacks {
    pub create_task: Option<CreateFn>,
    pub do_task: Option<DoFn>,
    pub process_result: Option<ProcessFn>,
    pub user: *mut c_void,
}

/// A farm made of C callbacks. The `Farm` trait cannot fail, so the first
/// failure is kept, later callbacks of this process are skipped (their
/// tasks and results are empty), and `wanmpi_farm_run` reports it.
pub struct CFarm<'a> {
    pub cb: &'a Callbacks,
    pub total: u64,
    pub task_cap: usize,
    pub result_cap: usize,
    pub failure: Option<String>,
}

impl CFarm<'_> {
    fn fail(&mut self, why: String) {
        self.failure.get_or_insert(why);
    }
}

impl Farm for CFarm<'_> {
    fn total_tasks(&self) -> u64 {
        self.total
    }

    fn create_task(&mut self, id: u64) -> Vec<u8> {
        let Some(f) = self.cb.create_task.filter(|_| self.failure.is_none()) else { return vec![] };
        let mut buf = vec![0u8; self.task_cap];
        let mut len = 0usize;
        // SAFETY: the callback gets a buffer of `task_cap` bytes and a length to write.
        let rc = unsafe { f(self.cb.user, id, buf.as_mut_ptr().cast(), buf.len(), &mut len) };
        if rc != 0 {
            self.fail(format!("create_task({id}) returned {rc}"));
            return vec![];
        }
        if len > buf.len() {
            self.fail(format!("create_task({id}) wrote a length of {len}, over max_task_bytes {}", buf.len()));
            return vec![];
        }
        buf.truncate(len);
        buf
    }

    fn do_task(&mut self, id: u64, task: &[u8]) -> Vec<u8> {
        let Some(f) = self.cb.do_task.filter(|_| self.failure.is_none()) else { return vec![] };
        let mut out = vec![0u8; self.result_cap];
        let mut len = 0usize;
        // SAFETY: `task` is valid for its length; `out` for `result_cap` bytes.
        let rc = unsafe { f(self.cb.user, id, task.as_ptr().cast(), task.len(), out.as_mut_ptr().cast(), out.len(), &mut len) };
        if rc != 0 {
            self.fail(format!("do_task({id}) returned {rc}"));
            return vec![];
        }
        if len > out.len() {
            self.fail(format!("do_task({id}) wrote a length of {len}, over max_result_bytes {}", out.len()));
            return vec![];
        }
        out.truncate(len);
        out
    }

    fn process_result(&mut self, id: u64, result: &[u8]) {
        let Some(f) = self.cb.process_result.filter(|_| self.failure.is_none()) else { return };
        // SAFETY: `result` is valid for its length during the call.
        let rc = unsafe { f(self.cb.user, id, result.as_ptr().cast(), result.len()) };
        if rc != 0 {
            self.fail(format!("process_result({id}) returned {rc}"));
        }
    }
}
