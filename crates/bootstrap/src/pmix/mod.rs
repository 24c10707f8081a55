//! Started by a PMIx server instead of mpirun: Slurm's `srun --mpi=pmix`
//! (the default MPI plugin at many sites) or another launcher that speaks
//! PMIx. The rank finds `PMIX_NAMESPACE` and `PMIX_RANK` in its
//! environment, loads the system's libpmix (`ffi`), learns the job's size
//! from the server, and makes the job environment over PMIx's key/value
//! calls as under PMI-2 (`pmi_job`).
//!
//! PMIx keys belong to the process that put them, and a get must name it
//! (OpenPMIx's shared-memory store does not search the job for a key asked
//! of `PMIX_RANK_UNDEF`), while our keys are job-wide names whose owner the
//! reader does not always know (rank 0 puts every rank's wrap). So a rank
//! gathers what it put between two fences into one record (`record`), puts
//! that under `wanmpi-kv-EPOCH` at the fence (with data collected to every
//! node), and a get reads other ranks' records of past epochs until it
//! finds the key: first the rank a trailing number in the key names, then
//! rank 0, then the rest. After a collecting fence these reads are local.
//!
//! Not supported under PMIx: MPI_Comm_spawn (it needs mpirun).

mod ffi;
mod record;

use crate::{BootstrapError, JobEnv, KeyValue, SpawnRequest};
use ffi::{Api, Info, Proc, Value, ValueData};
use std::collections::HashMap;
use std::ffi::{c_char, CStr, CString};

pub const ENV_NAMESPACE: &str = "PMIX_NAMESPACE";
pub const ENV_RANK: &str = "PMIX_RANK";

/// A rank's PMIx client.
pub struct Pmix {
    api: Api,
    me: Proc,
    size: u32,
    finalized: bool,
    /// Fences passed; records of epochs below it can be read.
    epoch: u32,
    /// What this rank put since the last fence.
    pending: Vec<(String, String)>,
    /// Every key read or put so far.
    known: HashMap<String, String>,
    /// Per rank, the first epoch whose record has not been read.
    read_up_to: Vec<u32>,
}

/// A value PMIx returned, copied out.
enum Got {
    Text(String),
    Number(u32),
    Other,
}

fn protocol(text: String) -> BootstrapError {
    BootstrapError::Protocol(format!("PMIx: {text}"))
}

fn c_string(what: &str, s: &str) -> Result<CString, BootstrapError> {
    CString::new(s).map_err(|_| protocol(format!("{what} {s:?} holds a NUL byte")))
}

impl Pmix {
    /// Connects when a PMIx server started the process (`PMIX_NAMESPACE`
    /// set); `Ok(None)` otherwise.
    pub fn from_env() -> Result<Option<Pmix>, BootstrapError> {
        if std::env::var_os(ENV_NAMESPACE).is_none() || std::env::var_os(ENV_RANK).is_none() {
            return Ok(None);
        }
        let api = Api::load().map_err(|e| protocol(format!("started under PMIx ({ENV_NAMESPACE} is set) but {e}")))?;
        let mut me = Proc { nspace: [0; ffi::NSPACE_LEN], rank: ffi::RANK_UNDEF };
        // SAFETY: `me` is a valid pmix_proc_t to fill; no info array.
        let rc = unsafe { (api.init)(&mut me, std::ptr::null_mut(), 0) };
        if rc != ffi::SUCCESS {
            return Err(protocol(format!("PMIx_Init failed: {}", api.describe(rc))));
        }
        let mut p = Pmix { api, me, size: 0, finalized: false, epoch: 0, pending: vec![], known: HashMap::new(), read_up_to: vec![] };
        let job = Proc { rank: ffi::RANK_WILDCARD, ..p.me };
        p.size = p.get_number(&job, c"pmix.job.size")?;
        if p.size == 0 || p.me.rank >= p.size {
            return Err(protocol(format!("rank {} not below the job's size {}", p.me.rank, p.size)));
        }
        p.read_up_to = vec![0; p.size as usize];
        Ok(Some(p))
    }

    /// What mpirun would give the rank (`pmi_job::job_env`): the job
    /// environment and the host map.
    pub fn job_env(&mut self) -> Result<(JobEnv, String), BootstrapError> {
        crate::pmi_job::job_env(self, "pmix")
    }

    /// A copy of the value PMIx holds for `key` of `proc`, or None when it
    /// has none.
    fn get_raw(&self, proc: &Proc, key: &CStr) -> Result<Option<Got>, BootstrapError> {
        let mut out: *mut Value = std::ptr::null_mut();
        // SAFETY: proc and key are valid; PMIx allocates *out on success.
        let rc = unsafe { (self.api.get)(proc, key.as_ptr(), std::ptr::null(), 0, &mut out) };
        if rc != ffi::SUCCESS || out.is_null() {
            // Not found (PMIX_ERR_NOT_FOUND and kin): the caller decides.
            return Ok(None);
        }
        // SAFETY: PMIx returned a valid value; the kind says which member
        // is set; the value is destructed and freed once, here.
        unsafe {
            let v = &*out;
            let got = match v.kind {
                ffi::TYPE_STRING if !v.data.string.is_null() => Got::Text(CStr::from_ptr(v.data.string).to_string_lossy().into_owned()),
                ffi::TYPE_UINT32 => Got::Number(v.data.uint32),
                _ => Got::Other,
            };
            (self.api.value_destruct)(out);
            libc::free(out.cast());
            Ok(Some(got))
        }
    }

    fn get_number(&self, proc: &Proc, key: &CStr) -> Result<u32, BootstrapError> {
        match self.get_raw(proc, key)? {
            Some(Got::Number(n)) => Ok(n),
            Some(_) => Err(protocol(format!("{} is not a uint32", key.to_string_lossy()))),
            None => Err(BootstrapError::Missing(key.to_string_lossy().into_owned())),
        }
    }

    fn put_string(&mut self, key: &str, value: &str) -> Result<(), BootstrapError> {
        let k = c_string("key", key)?;
        let v = c_string("value", value)?;
        // PMIx copies the value during the call.
        let mut val = Value { kind: ffi::TYPE_STRING, data: ValueData { string: v.as_ptr() as *mut c_char } };
        // SAFETY: key and value live across the call.
        let rc = unsafe { (self.api.put)(ffi::SCOPE_GLOBAL, k.as_ptr(), &mut val) };
        self.check(rc, "PMIx_Put")
    }

    /// Reads rank `r`'s records of the epochs not read yet.
    fn read_records(&mut self, r: u32) -> Result<(), BootstrapError> {
        let them = Proc { rank: r, ..self.me };
        while self.read_up_to[r as usize] < self.epoch {
            let e = self.read_up_to[r as usize];
            let key = c_string("key", &format!("wanmpi-kv-{e}"))?;
            let text = match self.get_raw(&them, &key)? {
                Some(Got::Text(text)) => text,
                Some(_) => return Err(protocol(format!("rank {r}'s record {e} is not a string"))),
                None => return Err(protocol(format!("rank {r} published no record at fence {e}"))),
            };
            let pairs = record::decode(&text).map_err(|why| protocol(format!("rank {r}'s record {e}: {why}")))?;
            self.known.extend(pairs);
            self.read_up_to[r as usize] = e + 1;
        }
        Ok(())
    }

    fn check(&self, rc: i32, what: &str) -> Result<(), BootstrapError> {
        if rc == ffi::SUCCESS {
            Ok(())
        } else {
            Err(protocol(format!("{what} failed: {}", self.api.describe(rc))))
        }
    }
}

impl KeyValue for Pmix {
    fn rank(&self) -> u32 {
        self.me.rank
    }
    fn size(&self) -> u32 {
        self.size
    }
    fn put(&mut self, key: &str, value: &str) -> Result<(), BootstrapError> {
        self.pending.push((key.to_string(), value.to_string()));
        Ok(())
    }
    fn fence(&mut self) -> Result<(), BootstrapError> {
        let text = record::encode(&self.pending);
        self.put_string(&format!("wanmpi-kv-{}", self.epoch), &text)?;
        for (k, v) in self.pending.drain(..) {
            self.known.insert(k, v);
        }
        // SAFETY: no arguments.
        let rc = unsafe { (self.api.commit)() };
        self.check(rc, "PMIx_Commit")?;
        let collect = Info::flag(c"pmix.collect", true);
        // SAFETY: no process list (the whole namespace), one info.
        let rc = unsafe { (self.api.fence)(std::ptr::null(), 0, &collect, 1) };
        self.check(rc, "PMIx_Fence")?;
        self.epoch += 1;
        Ok(())
    }
    fn get(&mut self, key: &str) -> Result<String, BootstrapError> {
        for r in record::search_order(key, self.size) {
            if let Some(v) = self.known.get(key) {
                return Ok(v.clone());
            }
            if r != self.me.rank {
                self.read_records(r)?;
            }
        }
        self.known.get(key).cloned().ok_or_else(|| BootstrapError::Missing(key.to_string()))
    }
}

impl crate::Launcher for Pmix {
    fn finalize(&mut self) -> Result<(), BootstrapError> {
        if std::mem::replace(&mut self.finalized, true) {
            return Ok(());
        }
        // SAFETY: no info array.
        let rc = unsafe { (self.api.finalize)(std::ptr::null(), 0) };
        self.check(rc, "PMIx_Finalize")
    }
    fn abort(&mut self, code: i32, message: &str) -> Result<(), BootstrapError> {
        let msg = CString::new(message.replace('\0', " ")).unwrap_or_default();
        // SAFETY: a NUL-terminated message; no process list (the whole job).
        let rc = unsafe { (self.api.abort)(code, msg.as_ptr(), std::ptr::null_mut(), 0) };
        self.check(rc, "PMIx_Abort")
    }
    fn spawn(&mut self, _request: &SpawnRequest) -> Result<(), BootstrapError> {
        Err(protocol("MPI_Comm_spawn is not supported under a PMIx launcher (srun --mpi=pmix); start the job with mpirun".into()))
    }
}
