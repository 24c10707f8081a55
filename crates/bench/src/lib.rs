//! `wanmpi bench`: the papers' experiments as grids. A grid is MPI
//! implementations (wanmpi with a transport, Open MPI, MPICH) x one-way
//! latencies x loss rates x message sizes x repetitions; every point is one
//! run of a program (the ping-pong by default) across a WAN emulation with
//! one rank per emulated host, under a time limit.
//!
//! Results go to a CSV as each run ends (so `--resume` continues a stopped
//! grid), then to a Markdown table per message size shaped like the papers'
//! (rows: loss; columns: latency, one sub-column per implementation) and a
//! PNG plot per size. Failed, timed-out and skipped cells are marked, never
//! dropped. Every row records the TCP congestion control of the hosts.
//!
//! What it is not: a statistics package (it reports medians and counts), or
//! a way to run on real remote machines (it always uses the emulator).

pub mod cell;
pub mod cli;
pub mod compile;
mod error;
pub mod exec;
pub mod grid;
pub mod netns_files;
pub mod outage;
pub mod plot;
pub mod record;
pub mod runner;
pub mod table;

pub use error::BenchError;
