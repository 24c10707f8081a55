//! Two groups become one inter-communicator (the second half of
//! MPI_Comm_accept/connect, MPI_Comm_spawn and MPI_Comm_join).
//!
//! Their roots already hold a connection that proved the port's secret
//! (`wanmpi_bootstrap::port`). Then, collectively in each group:
//! 1. the root tells its group how that went (or why not, and all fail);
//! 2. every process of both groups sets up a tcp transport among all of
//!    them, keyed by the joint key, exchanging addresses through the
//!    roots (`relay`); tcp because it reaches any host that a port does,
//!    and seals what crosses between hosts;
//! 3. the groups agree that everyone succeeded and on a context pair free
//!    in both;
//! 4. each process attaches the other group as new peers (the engine's
//!    ids past this job's) and makes the inter-communicator.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use wanmpi_bootstrap::port::{Peer, RootLink};
use wanmpi_engine::{coll, ErrorClass, MpiError, MpiResult};
use wanmpi_transport::Transport;
use wanmpi_transport_composite::Joined;
use wanmpi_transport_tcp::{TcpOptions, TcpTransport};

use super::relay::Relay;
use super::{Global, GLOBAL_LEN};
use crate::coll_adapter::coll_error;
use crate::comm::{Comm, CommId};
use crate::comm_create::{and_over, Link};
use crate::group::Group;
use crate::info::Info;
use crate::p2p::comm_ref;
use crate::runtime::Runtime;

/// Which end of the port a group is at: the accepting group comes first
/// in the joint numbering and writes first on the roots' connection.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Side {
    Accept,
    Connect,
}

/// What the root brings: the other root's connection, or why there is none.
pub(crate) type Meeting = MpiResult<Peer>;

impl Runtime {
    /// Collective over the intra-communicator `comm`; `link` is the root's
    /// (None elsewhere); `what` names the other group in messages about its
    /// processes (a lost peer).
    pub(crate) fn join_groups(&self, comm: CommId, root: usize, side: Side, link: Option<Meeting>, what: &str) -> MpiResult<CommId> {
        let (group, rank) = {
            let st = self.lock();
            let c = comm_ref(&st, comm)?;
            if c.is_inter() {
                return Err(MpiError::new(ErrorClass::Comm, "joining groups needs an intra-communicator"));
            }
            (Arc::clone(&c.group), c.rank)
        };
        if root >= group.size() {
            return Err(MpiError::new(ErrorClass::Root, format!("root {root} is not a rank of a communicator of {}", group.size())));
        }
        let (stream, remote, key) = self.tell_group(comm, root, rank, link)?;
        let local = group.size() as u32;
        let (me, first_remote) = match side {
            Side::Accept => (rank as u32, local),
            Side::Connect => (remote + rank as u32, 0),
        };
        let mut relay = Relay::new(self, comm, root, stream.as_ref(), side == Side::Accept, me, local + remote);
        let tcp = self.joint_tcp(&mut relay, key);
        // Everybody reaches this point: agree that everyone succeeded,
        let all_ok = self.and_both(comm, root, side, stream.as_ref(), &[if tcp.is_ok() { u64::MAX } else { 0 }])?[0] == u64::MAX;
        let tcp = tcp?;
        if !all_ok {
            return Err(MpiError::new(ErrorClass::Other, "a process of the other group failed to join"));
        }
        let globals = self.swap_names(comm, root, side, stream.as_ref(), &group, remote)?;
        // and on a context pair free at every process of both (`agree.rs`),
        // keyed alike on both sides by the joint key.
        let agreement = u64::from_le_bytes(key[..8].try_into().expect("8 bytes"));
        let pair = self.agree(agreement, &mut |w: &[u64]| self.and_both(comm, root, side, stream.as_ref(), w))?;
        let remote_ranks: Vec<u32> = (first_remote..first_remote + remote).collect();
        self.attach(group, rank, Box::new(tcp), remote_ranks, pair, what, globals)
    }

    /// The AND of `words` over both groups: each group's, swapped by the
    /// roots on their connection (a failed swap counts as all zero: a "no"
    /// everybody sees), broadcast by each root.
    fn and_both(&self, comm: CommId, root: usize, side: Side, stream: Option<&RootLink>, words: &[u64]) -> MpiResult<Vec<u64>> {
        let mut over_port = |mine: &[u8], theirs: &mut [u8]| -> MpiResult<()> {
            let s = stream.expect("the root has the connection");
            match swap(s, side, mine) {
                Ok(t) if t.len() == theirs.len() => theirs.copy_from_slice(&t),
                Ok(_) => theirs.fill(0),
                Err(e) => {
                    eprintln!("wanmpi: rank {}: joining groups: {e}", self.rank);
                    theirs.fill(0)
                }
            }
            Ok(())
        };
        let link: Option<&mut Link<'_>> = if stream.is_some() { Some(&mut over_port) } else { None };
        and_over(&mut self.adapter(comm)?, Some(root), link, words)
    }

    /// Step 3b: the other group's names among jobs (`globals_of`), for
    /// describing groups across the jobs later. The root broadcasts
    /// whether its swap worked, so a failure there fails every member.
    fn swap_names(&self, comm: CommId, root: usize, side: Side, stream: Option<&RootLink>, group: &Group, remote: u32) -> MpiResult<Vec<Global>> {
        let mut theirs = vec![0u8; 1 + remote as usize * GLOBAL_LEN];
        if let Some(s) = stream {
            match swap(s, side, &self.globals_of(group.members())) {
                Ok(got) if got.len() + 1 == theirs.len() => {
                    theirs[0] = 1;
                    theirs[1..].copy_from_slice(&got);
                }
                Ok(_) => {}
                Err(e) => eprintln!("wanmpi: rank {}: joining groups: {e}", self.rank),
            }
        }
        coll::bcast(&mut self.adapter(comm)?, &mut theirs, root).map_err(coll_error)?;
        if theirs[0] != 1 {
            return Err(MpiError::new(
                ErrorClass::Other,
                "the roots could not exchange their groups' names (the connection failed or the other root described another group)",
            ));
        }
        Ok(theirs[1..]
            .chunks_exact(GLOBAL_LEN)
            .map(|c| (u64::from_le_bytes(c[..8].try_into().expect("8 bytes")), u32::from_le_bytes(c[8..].try_into().expect("4 bytes"))))
            .collect())
    }

    /// Step 1: the root's news to its group (the other group's size and the
    /// joint key, or an error that every member returns).
    fn tell_group(&self, comm: CommId, root: usize, rank: usize, link: Option<Meeting>) -> MpiResult<(Option<RootLink>, u32, [u8; 32])> {
        let mut head = [0u8; 1 + 4 + 32];
        let (mut text, mut stream) = (Vec::new(), None);
        if rank == root {
            match link.ok_or_else(|| MpiError::new(ErrorClass::Intern, "the root has no link"))? {
                Ok(peer) => {
                    head[0] = 1;
                    head[1..5].copy_from_slice(&peer.size.to_le_bytes());
                    head[5..].copy_from_slice(&peer.key);
                    stream = Some(peer.link);
                }
                Err(e) => {
                    text = e.msg.clone().into_bytes();
                    head[1..5].copy_from_slice(&(e.class as i32).to_le_bytes());
                    head[5..9].copy_from_slice(&(text.len() as u32).to_le_bytes());
                }
            }
        }
        let mut a = self.adapter(comm)?;
        coll::bcast(&mut a, &mut head, root).map_err(coll_error)?;
        if head[0] == 0 {
            text.resize(u32::from_le_bytes(head[5..9].try_into().expect("4 bytes")) as usize, 0);
            coll::bcast(&mut a, &mut text, root).map_err(coll_error)?;
            let class = ErrorClass::from_code(i32::from_le_bytes(head[1..5].try_into().expect("4 bytes"))).unwrap_or(ErrorClass::Other);
            return Err(MpiError::new(class, String::from_utf8_lossy(&text).into_owned()));
        }
        let remote = u32::from_le_bytes(head[1..5].try_into().expect("4 bytes"));
        if remote == 0 {
            return Err(MpiError::new(ErrorClass::Other, "the other group is empty"));
        }
        Ok((stream, remote, head[5..].try_into().expect("32 bytes")))
    }

    /// Step 2: tcp among both groups. A failure before the exchange still
    /// takes part in it, so nobody waits for this process.
    fn joint_tcp(&self, relay: &mut Relay<'_>, key: [u8; 32]) -> MpiResult<TcpTransport> {
        let failed = |e: String| MpiError::new(ErrorClass::Other, format!("connecting to the other group: {e}"));
        let opts = TcpOptions::from_env().map(|mut o| {
            // The engine cuts frames to this job's transport's size.
            o.max_frame = o.max_frame.max(self.lock().transport.caps().max_frame);
            // No site map covers two jobs: a trusted LAN (--insecure-lan)
            // cannot tell which of these connections cross a WAN.
            o.seal = o.seal.across_jobs();
            o
        });
        let result = opts.and_then(|o| TcpTransport::connect(relay, key, o)).map_err(|e| failed(e.to_string()));
        if result.is_err() && relay.fences == 0 {
            relay.fail();
        }
        result
    }

    /// Step 4: the other group becomes peers, and the communicator is made.
    #[allow(clippy::too_many_arguments)]
    fn attach(
        &self,
        group: Arc<Group>,
        rank: usize,
        part: Box<dyn Transport>,
        ranks: Vec<u32>,
        pair: u32,
        what: &str,
        globals: Vec<Global>,
    ) -> MpiResult<CommId> {
        let count = ranks.len() as u32;
        let mut st = self.lock();
        let setup = |e: wanmpi_transport::TransportError| MpiError::new(ErrorClass::Other, format!("attaching the other group: {e}"));
        if !st.joined {
            let stand_in = Box::new(wanmpi_transport::loopback_world(1, 1).pop().expect("one rank"));
            let base = std::mem::replace(&mut st.transport, stand_in);
            st.transport = Box::new(Joined::new(base).map_err(setup)?);
            st.joined = true;
        }
        let first = st.transport.attach(part, ranks).map_err(setup)?;
        let also = st.engine.add_peers(count);
        debug_assert_eq!(first, also, "the engine and the transport number peers alike");
        self.dynamic.joined(first, what, globals);
        self.ready_fd.store(st.transport.readiness_fd().unwrap_or(-1), Ordering::Relaxed);
        let remote = Group::new((first..first + count).collect());
        let c = Comm::new(group, Some(Arc::new(remote)), rank, pair, String::new());
        Ok(self.install(&mut st, c, Info::default()))
    }
}

/// One blob each way between the roots, the accepting side first.
fn swap(s: &RootLink, side: Side, mine: &[u8]) -> std::io::Result<Vec<u8>> {
    match side {
        Side::Accept => s.send(mine).and_then(|()| s.recv()),
        Side::Connect => s.recv().and_then(|t| s.send(mine).map(|()| t)),
    }
}
