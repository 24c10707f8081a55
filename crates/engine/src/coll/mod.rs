//! Collective operations (MPI-3.1 chapter 5), built on point-to-point
//! through the [`CollComm`] trait, on plain byte buffers (datatypes are
//! handled above: a caller packs to and unpacks from these bytes).
//!
//! # Algorithms
//!
//! The goal is few wide-area round trips: on a link with tens of
//! milliseconds of latency, the number of sequential message hops matters
//! more than the bytes. Every step posts all its sends and receives in one
//! [`CollComm::exchange`], so a step costs one latency however many peers it
//! talks to. `p` is the communicator size; "hops" counts sequential
//! latencies on the critical path.
//!
//! | collective | algorithm | hops |
//! | --- | --- | --- |
//! | barrier | dissemination (round k: signal rank+2^k, hear from rank-2^k) | ceil(log2 p) |
//! | bcast | binomial tree, children served largest subtree first | <= ceil(log2 p) |
//! | reduce | binomial tree; non-commutative ops use the tree rooted at rank 0 (ranks unrotated, so every partial is a contiguous run and lower runs are left operands), then rank 0 forwards to the root | <= ceil(log2 p) (+1) |
//! | allreduce | recursive doubling; for p not a power of two the first 2*rem ranks fold pairwise before and unfold after; order-preserving | log2 p' (+2 if p is not a power of two; p' = largest power of two <= p) |
//! | gather | binomial tree, each subtree's blocks passed up in one message | <= ceil(log2 p) |
//! | gatherv | linear: everyone sends to the root, which posts all receives at once (only the root knows the counts) | 1 |
//! | scatter | binomial tree | <= ceil(log2 p) |
//! | scatterv | linear: the root posts all sends at once | 1 |
//! | allgather(v) | Bruck: doubling blocks, any p, variable counts | ceil(log2 p) |
//! | alltoall(v) | all p-1 sends and receives posted at once | 1 |
//! | reduce_scatter(_block) | reduce to rank 0 (order-preserving tree), then rank 0 posts every block at once | <= ceil(log2 p) + 1 |
//! | scan, exscan | recursive doubling over aligned blocks; order-preserving | ceil(log2 p) |
//!
//! # Across sites
//!
//! When a communicator spans sites joined by slow links
//! (`CollComm::site_of` gives two or more sites), the collectives below
//! switch to site-aware algorithms, as MagPIe and MPICH-G2 did: the flat
//! algorithms run inside each site (over `sites::Site`, a view of the
//! site's ranks) and only site leaders talk across sites, all at once. A
//! leader is the lowest rank of its site, except that the root leads its
//! own site in rooted operations. "WAN" counts sequential crossings of a
//! slow link on the critical path, "site" the hops of a flat algorithm
//! inside one site (s = ranks in the site), "msgs" the messages each
//! ordered pair of sites exchanges.
//!
//! | collective | algorithm across sites | WAN | site hops | msgs | file |
//! | --- | --- | --- | --- | --- | --- |
//! | barrier | fan-in to the leader, leaders signal each other in one exchange, fan-out | 1 | 2 | 1 | `sites.rs` |
//! | bcast | the root sends every other leader the data at once, then binomial inside each site | 1 | <= ceil(log2 s) | 1 (from the root's site) | `sites.rs` |
//! | allreduce | site reduce to the leader, leaders swap partials in one exchange and combine them in site order, site bcast | 1 | 2 ceil(log2 s) | 1 | `sites.rs` |
//! | allgather | site gather to the leader, leaders swap their sites' blocks in one exchange, site bcast | 1 | 2 ceil(log2 s) | 1 | `sites.rs` |
//! | reduce | site reduce to the leader, leaders send partials to the root, which combines them in site order | 1 | <= ceil(log2 s) (+1) | 1 (to the root's site) | `hier/reduce.rs` |
//! | gather | site gather to the leader, leaders send their site's blocks to the root | 1 | <= ceil(log2 s) | 1 (to the root's site) | `hier/gather.rs` |
//! | gatherv | root's site: linear; elsewhere lengths (gather) then blocks (linear) to the leader, which sends the root lengths + blocks | 1 | <= ceil(log2 s) + 1 | 1 (to the root's site) | `hier/gather.rs` |
//! | scatter | the root sends every other leader its site's blocks at once, then binomial inside each site | 1 | <= ceil(log2 s) | 1 (from the root's site) | `hier/scatter.rs` |
//! | scatterv | one exchange at the root: its site's blocks, and each other leader the site's counts then its blocks; leaders hand out linearly | 1 | 1 | 2, sent together | `hier/scatter.rs` |
//! | allgatherv | site gatherv to the leader (linear), leaders swap their sites' blocks in one exchange, site bcast of all blocks packed | 1 | 1 + ceil(log2 s) | 1 | `hier/allgather.rs` |
//! | alltoall(v) | unchanged: every message is posted at once, so it already crosses once; routing through leaders would add two site hops and gain nothing in latency | 1 | 0 | ranks x ranks | `alltoall.rs` |
//! | reduce_scatter(_block) | the site-aware reduce to rank 0, then rank 0 posts every block at once (as flat) | 2 | <= ceil(log2 s) (+1) | 1 to rank 0's site, then one per rank back | `reduce_scatter.rs` |
//! | scan, exscan | unchanged (flat recursive doubling: a rank's prefix needs every lower rank in order) | <= ceil(log2 p) | | | `scan.rs` |
//!
//! Order: a non-commutative reduce or allreduce combines per-site partials
//! in site order (sites sorted by their lowest rank), which is rank order
//! only when every site is one contiguous run of ranks; with interleaved
//! sites such an op keeps the flat order-preserving algorithm. Only the
//! root knows gatherv's and scatterv's counts: see `hier/mod.rs` for how the
//! lengths travel.
//!
//! Trade-offs left for later: for long messages a scatter + allgather
//! bcast and a reduce-scatter + allgather allreduce move less data through
//! any one rank; on a WAN a flat (linear) gather or scatter takes one hop
//! instead of log2 p, at the cost of the root's bandwidth.
//!
//! # Tags
//!
//! Collectives run on the communicator's collective context, so these tags
//! never meet user messages. Each family has its own tag. Fixed tags are
//! safe because every rank calls a communicator's collectives in the same
//! order and messages with the same (source, tag) are matched in order
//! (MPI's non-overtaking rule); no algorithm posts two receives with the
//! same (source, tag) in one exchange.
//!
//! | tag | family |
//! | --- | --- |
//! | 1 | barrier |
//! | 2 | bcast |
//! | 3 | reduce, and the reduce phase of reduce_scatter |
//! | 4 | allreduce |
//! | 5 | gather |
//! | 6 | gatherv |
//! | 7 | scatter |
//! | 8 | scatterv |
//! | 9 | allgather, allgatherv |
//! | 10 | alltoall, alltoallv |
//! | 11 | reduce_scatter (scatter phase) |
//! | 12 | scan |
//! | 13 | exscan |
//! | 1000 + t, 2000 + t | family t's first and second phase inside a site (site-aware algorithms; a phase that runs a flat algorithm over `Site` gets that algorithm's tag t, e.g. 1005 for gatherv's site gather of lengths, 1006 for its blocks) |
//! | 3000 | site leaders' messages (to, from or among leaders) |
//! | 3001 | scatterv's blocks from the root to a leader (the counts go first with 3000) |
//!
//! # Schedules (nonblocking, persistent and neighbourhood collectives)
//!
//! `sched/` writes an algorithm down as rounds of sends, receives and local
//! steps that a [`sched::Run`] advances without blocking over any
//! [`sched::Port`]: barrier, bcast, allreduce, reduce, scan and exscan with
//! the same messages and combining order as the flat blocking versions, and
//! one-round exchanges of blocks for gather, scatter, allgather, alltoall
//! and the neighbourhood collectives. The runtime owns them as requests
//! (`crates/runtime/src/icoll/`). Their
//! tags carry the collective's number on the communicator
//! ([`sched::tag`], all >= 65536), so several may be outstanding at once.
//!
//! # MPI_IN_PLACE
//!
//! A `None` send buffer (or receive buffer, for scatter) means MPI_IN_PLACE
//! wherever MPI-3.1 allows it; where it does not (e.g. a non-root rank of
//! reduce), the call fails with `BadArgument` before any message moves.

mod allgather;
mod allreduce;
mod alltoall;
mod args;
mod barrier;
mod bcast;
mod comm;
mod gather;
mod hier;
mod reduce;
mod reduce_scatter;
mod scan;
mod scatter;
pub mod sched;
mod sites;
#[cfg(test)]
mod testing;
#[cfg(test)]
mod tests;
mod tree;

pub use allgather::{allgather, allgatherv};
pub use allreduce::allreduce;
pub use alltoall::{alltoall, alltoallv};
pub use args::Blocks;
pub use barrier::barrier;
pub use bcast::bcast;
pub use comm::{CollComm, CollError, RecvItem, SendItem};
pub use gather::{gather, gatherv};
pub use reduce::reduce;
pub use reduce_scatter::{reduce_scatter, reduce_scatter_block};
pub use scan::{exscan, scan};
pub use scatter::{scatter, scatterv};

pub const TAG_BARRIER: i32 = 1;
pub const TAG_BCAST: i32 = 2;
pub const TAG_REDUCE: i32 = 3;
pub const TAG_ALLREDUCE: i32 = 4;
pub const TAG_GATHER: i32 = 5;
pub const TAG_GATHERV: i32 = 6;
pub const TAG_SCATTER: i32 = 7;
pub const TAG_SCATTERV: i32 = 8;
pub const TAG_ALLGATHER: i32 = 9;
pub const TAG_ALLTOALL: i32 = 10;
pub const TAG_REDUCE_SCATTER: i32 = 11;
pub const TAG_SCAN: i32 = 12;
pub const TAG_EXSCAN: i32 = 13;
