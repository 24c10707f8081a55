//! Persistent requests (MPI-3.1 §3.9): the arguments are recorded once and
//! each MPI_Start posts a fresh operation with them.

use wanmpi_engine::datatype::Datatype;
use wanmpi_engine::{error::err, ErrorClass, MpiError, MpiResult};

use crate::comm::CommId;
use crate::p2p::{check_datatype, comm_ref, irecv_locked, isend_locked};
use crate::reqtable::{Entry, PersistentSpec, Req, SendMode};
use crate::runtime::Runtime;

impl Runtime {
    /// MPI_Send_init (and the Ssend/Rsend/Bsend variants).
    // Mirrors MPI_Send_init's argument list (with the send mode as one more).
    #[allow(clippy::too_many_arguments)]
    pub fn send_init(&self, buf: *const u8, count: usize, dt: &Datatype, dest: i32, tag: i32, comm: CommId, mode: SendMode) -> MpiResult<Req> {
        let mut st = self.lock();
        comm_ref(&st, comm)?;
        check_datatype(dt)?;
        let spec = PersistentSpec::Send { buf: buf as usize, count, datatype: dt.clone(), dest, tag, comm, mode };
        Ok(st.reqs.insert(Entry::Persistent { spec, active: None }))
    }

    /// MPI_Recv_init.
    pub fn recv_init(&self, buf: *mut u8, count: usize, dt: &Datatype, source: i32, tag: i32, comm: CommId) -> MpiResult<Req> {
        let mut st = self.lock();
        comm_ref(&st, comm)?;
        check_datatype(dt)?;
        let spec = PersistentSpec::Recv { buf: buf as usize, count, datatype: dt.clone(), source, tag, comm };
        Ok(st.reqs.insert(Entry::Persistent { spec, active: None }))
    }

    /// Whether `r` is a persistent request that is not started: the
    /// multiple-completion calls treat it as MPI_REQUEST_NULL (MPI-4.0 §3.7.5).
    pub fn request_inactive(&self, r: Req) -> MpiResult<bool> {
        let st = self.lock();
        match st.reqs.get(r) {
            Some(e) => Ok(matches!(e, Entry::Persistent { active: None, .. })),
            None => err(ErrorClass::Request, "request handle is not valid"),
        }
    }

    /// MPI_Start.
    ///
    /// # Safety
    /// The buffer given at init must be valid until this activation completes.
    pub unsafe fn start(&self, r: Req) -> MpiResult<()> {
        self.startall(&[r])
    }

    /// MPI_Startall.
    ///
    /// # Safety
    /// As `start`, for every request.
    pub unsafe fn startall(&self, rs: &[Req]) -> MpiResult<()> {
        let mut st = self.lock();
        for &r in rs {
            let spec = match st.reqs.get(r) {
                Some(Entry::Persistent { active: None, spec }) => spec.clone(),
                Some(Entry::Persistent { .. }) => return err(ErrorClass::Request, "MPI_Start on a persistent request that is still active"),
                _ => return Err(MpiError::new(ErrorClass::Request, "MPI_Start needs a persistent request")),
            };
            let inner = match spec {
                PersistentSpec::Send { buf, count, datatype, dest, tag, comm, mode } => {
                    isend_locked(&mut st, buf as *const u8, count, &datatype, dest, tag, comm, mode, false)?
                }
                PersistentSpec::Recv { buf, count, datatype, source, tag, comm } => {
                    irecv_locked(&mut st, buf as *mut u8, count, &datatype, source, tag, comm, false)?
                }
                PersistentSpec::Coll { comm, plan, seq } => {
                    st.colls.track(r);
                    crate::icoll::launch(&mut st, comm, &plan, Some(seq), &self.site_view())?
                }
            };
            if let Some(Entry::Persistent { active, .. }) = st.reqs.get_mut(r) {
                *active = Some(Box::new(inner));
            }
        }
        crate::icoll::advance(&mut st);
        self.progress(&mut st)
    }
}
