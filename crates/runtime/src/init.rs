//! MPI_Init and MPI_Finalize (MPI-3.1 §8.7): job environment, bootstrap,
//! transport, the world and self communicators, and the initial barrier
//! (every association/connection is up before any MPI traffic: the first
//! SCTP paper's init race).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use wanmpi_bootstrap::{Client, JobEnv, Launcher};
use wanmpi_engine::{Engine, ErrorClass, MpiError, MpiResult};
use wanmpi_transport::{loopback_world, Transport};

use crate::bsend::BsendPool;
use crate::comm::{Comm, CommTable, COMM_WORLD, SELF_PAIR, WORLD_PAIR};
use crate::context::ContextPool;
use crate::group::Group;
use crate::options::RuntimeOptions;
use crate::reqtable::ReqTable;
use crate::runtime::{Runtime, State};
use crate::sites::SiteMap;

/// Sets what follows from how many ranks share this rank's host (by the
/// host map): more than it has CPUs (`oversubscribed`), and a crowded host
/// (`crowded`), whose long messages are read out of the sender.
fn host_load(env: &JobEnv, opts: &mut RuntimeOptions) -> MpiResult<()> {
    let place = crate::transports::Placement::from_env(env.size)?;
    let here = place.host.get(env.rank as usize).copied();
    let ranks_on_host = place.host.iter().filter(|&&h| Some(h) == here).count();
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    opts.oversubscribed = crate::options::oversubscribed(ranks_on_host, cpus);
    opts.apply_crowding(ranks_on_host);
    Ok(())
}

impl Runtime {
    /// Starts this process's part of the job (MPI_Init). A process started
    /// without a launcher runs as a job of one (singleton).
    pub fn init() -> MpiResult<Arc<Runtime>> {
        let mut opts = RuntimeOptions::from_env()?;
        let boot = |e: wanmpi_bootstrap::BootstrapError| MpiError::new(ErrorClass::Other, format!("bootstrap: {e}"));
        // Takes the job secret from its pipe and removes the secret's
        // variables from this process's environment, so nothing the program
        // starts inherits them. Safe only before any thread of ours exists:
        // keep this ahead of the transport and the progress thread.
        let mut spawned = crate::dynamic::Spawned::from_env()?;
        let mut job_id = None;
        let mut published = None;
        let (transport, kv): (Box<dyn Transport>, Option<Box<dyn Launcher>>) = match JobEnv::from_env().map_err(boot)? {
            // Started by srun (PMI-2 or PMIx) rather than mpirun, or alone.
            None => match crate::process_manager::bootstrap()? {
                Some((env, mut pmi)) => {
                    job_id = Some(env.job_id.clone());
                    published = env.addr.clone();
                    host_load(&env, &mut opts)?;
                    let t = crate::transports::connect(&env, &mut *pmi)?;
                    (t, Some(pmi))
                }
                None => (Box::new(loopback_world(1, 1).pop().expect("one rank")), None),
            },
            Some(env) => {
                job_id = Some(env.job_id.clone());
                spawned.parent_port = env.parent_port.clone();
                published = env.addr.clone();
                host_load(&env, &mut opts)?;
                let mut client = Client::connect(&env).map_err(boot)?;
                let t = crate::transports::connect(&env, &mut client)?;
                (t, Some(Box::new(client)))
            }
        };
        let sites = SiteMap::from_env(transport.size())?;
        // A singleton is a job of its own among the jobs it may join.
        let started = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        opts.job = Some(job_id.unwrap_or_else(|| format!("singleton-{}-{started}", std::process::id())));
        let rt = Self::bring_up(transport, opts, kv, sites)?;
        let _ = rt.dynamic.spawned.set(spawned);
        if let Some(a) = published {
            let _ = rt.dynamic.published_addr.set(a);
        }
        rt.connect_to_parent()?;
        Ok(rt)
    }

    /// A runtime over any transport, without a launcher: what tests and
    /// programs that embed wanmpi use (for instance one runtime per thread
    /// over `wanmpi_transport::loopback_world`). Collective: every rank of
    /// the transport's job makes its runtime, which ends with a barrier.
    pub fn over(transport: Box<dyn Transport>, opts: RuntimeOptions) -> MpiResult<Arc<Runtime>> {
        Self::bring_up(transport, opts, None, None)
    }

    /// The engine, the world and self communicators, the progress thread if
    /// wanted, the first barrier, and the site map (`sites`, else measured).
    fn bring_up(
        transport: Box<dyn Transport>,
        opts: RuntimeOptions,
        kv: Option<Box<dyn Launcher>>,
        sites: Option<SiteMap>,
    ) -> MpiResult<Arc<Runtime>> {
        let rank = transport.rank();
        let size = transport.size();
        let mut engine = Engine::new(rank, size, transport.caps().clone(), opts.engine.clone());
        if opts.single_copy.unwrap_or(opts.oversubscribed || opts.crowded) {
            if let Some(reader) = crate::local_read::ProcessRead::for_transport(transport.as_ref()) {
                crate::local_read::allow_readers();
                engine.set_local_read(Box::new(reader));
            }
        }
        let grant = crate::wan::grant_per_peer(opts.wan_window, opts.wan_buffer, size, opts.engine.eager_limit);
        let mut comms = CommTable::default();
        let world = Group::new((0..size).collect());
        comms.insert(Comm::new(Arc::new(world), None, rank as usize, WORLD_PAIR, "MPI_COMM_WORLD".into()));
        comms.insert(Comm::new(Arc::new(Group::new(vec![rank])), None, 0, SELF_PAIR, "MPI_COMM_SELF".into()));
        let state = State {
            engine,
            transport,
            comms,
            reqs: ReqTable::default(),
            contexts: ContextPool::default(),
            bsend: BsendPool::default(),
            messages: Default::default(),
            transport_busy: false,
            arrivals: 0,
            activity: 0,
            fatal: None,
            wan: crate::wan::WanPlan::new(rank, size, grant, opts.wan_peers),
            colls: Default::default(),
            reservations: Default::default(),
            wins: Default::default(),
            joined: false,
            ulfm: Default::default(),
        };
        let by_default = state.transport.wants_progress_thread();
        let rt = Arc::new(Runtime::assemble(state, opts, kv));
        let _ = rt.dynamic.job_uid.set(crate::dynamic::job_uid(rt.opts.job.as_deref()));
        if rt.opts.progress_thread.unwrap_or(by_default) {
            rt.start_progress_thread();
        }
        rt.barrier(COMM_WORLD)?;
        let sites = match sites {
            Some(m) => m,
            None => rt.measure_sites()?,
        };
        let _ = rt.sites.set(sites);
        Ok(rt)
    }

    /// Sites from what the transport measured: every rank shares its near
    /// set (one allgather over the flat algorithm) and all take the same
    /// clusters. A transport that measures nothing gives one site.
    fn measure_sites(&self) -> MpiResult<SiteMap> {
        let size = self.size;
        // The exchange moves size² bytes: past this, one site (the flat
        // algorithms) unless the launcher gives the map.
        if size == 1 || size > crate::sites::MAX_MEASURED {
            return Ok(SiteMap::single(size));
        }
        let mine = {
            let st = self.lock();
            crate::sites::near_bytes(self.rank, size, st.transport.as_ref())
        };
        let mut all = vec![0u8; (size as usize) * (size as usize)];
        wanmpi_engine::coll::allgather(&mut self.adapter(COMM_WORLD)?, Some(&mine), &mut all, size as usize)
            .map_err(crate::coll_adapter::coll_error)?;
        let near: Vec<Vec<bool>> = all.chunks(size as usize).map(|c| c.iter().map(|b| *b != 0).collect()).collect();
        Ok(SiteMap::from_near_sets(&near))
    }

    /// MPI_Finalize: waits for every peer, lets queued data leave, closes
    /// the transport and tells the launcher this rank finished cleanly.
    pub fn finalize(&self) -> MpiResult<()> {
        if self.finalized.load(Ordering::SeqCst) {
            return Err(MpiError::new(ErrorClass::Other, "MPI_Finalize called twice"));
        }
        // MPI_COMM_SELF is freed first, as if by the program: its attributes'
        // delete callbacks run while MPI still works (MPI_Finalized says no).
        // Then MPI_COMM_WORLD's, as MPICH does (bindings such as rsmpi
        // drop their attribute values there). A failing callback is
        // reported, not returned: the other ranks are on their way into the
        // final barrier and would wait for this one.
        for (comm, name) in [(crate::comm::COMM_SELF, "MPI_COMM_SELF"), (COMM_WORLD, "MPI_COMM_WORLD")] {
            if let Err(e) = self.delete_all_attrs(comm) {
                eprintln!("wanmpi: rank {}: MPI_Finalize: deleting {name}'s attributes: {e}", self.rank);
            }
        }
        self.finalized.store(true, Ordering::SeqCst);
        // With --tolerate-rank-failure the final barrier is an agreement
        // decided by mpirun (`ulfm/agreement.rs`): it ends when every rank
        // came or is dead, where a barrier's messages could wait forever on
        // a rank that left it early because another had died.
        let tolerant = self.opts.tolerate_rank_failure && self.kv.lock().unwrap_or_else(|p| p.into_inner()).is_some();
        let synced = if tolerant { self.comm_agree(COMM_WORLD, 1).map(|_| ()) } else { self.barrier(COMM_WORLD) };
        match synced {
            // With --tolerate-rank-failure a dead rank cannot join the
            // final barrier; the survivors finish without it.
            Err(e) if self.opts.tolerate_rank_failure && self.lock().engine.failed_peers().next().is_some() => {
                eprintln!("wanmpi: rank {}: finalizing without the lost ranks ({e})", self.rank);
            }
            r => r?,
        }
        self.lock().engine.say_goodbye();
        self.wait_until(|st| Ok((!st.engine.has_pending_output()).then_some(())))?;
        self.stop_progress_thread();
        let mut st = self.lock();
        if self.opts.print_stats {
            eprint!("wanmpi: rank {} engine: {}", self.rank, st.engine.stats());
            if let Some(m) = self.sites.get().filter(|m| m.count() > 1) {
                eprintln!("wanmpi: rank {} sites: {} ({} sites)", self.rank, m.to_text(), m.count());
            }
        }
        // Under ULFM the dead are left behind: the transport owes them nothing.
        let failed: Vec<u32> = st.engine.failed_peers().map(|(p, _)| *p).collect();
        for p in failed {
            st.transport.peer_failed(p);
        }
        st.transport.shutdown(Duration::from_secs(10)).map_err(|e| MpiError::new(ErrorClass::Other, format!("transport shutdown: {e}")))?;
        drop(st);
        if let Some(c) = self.kv.lock().unwrap_or_else(|p| p.into_inner()).as_mut() {
            c.finalize().map_err(|e| MpiError::new(ErrorClass::Other, format!("bootstrap: {e}")))?;
        }
        Ok(())
    }

    pub fn is_finalized(&self) -> bool {
        self.finalized.load(Ordering::SeqCst)
    }

    /// MPI_Abort: ends every process of the job with `code`.
    pub fn abort(&self, code: i32, msg: &str) -> ! {
        self.die(&format!("MPI_Abort called with code {code}{}{msg}", if msg.is_empty() { "" } else { ": " }), code)
    }
}
