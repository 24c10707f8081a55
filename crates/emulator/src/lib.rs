//! wanmpi's WAN emulator: several emulated hosts on one machine, joined by
//! links with chosen one-way delay, jitter, loss, bandwidth and failures, so
//! that any program (wanmpi's or another MPI's) can be measured under
//! wide-area conditions without netem.
//!
//! Each host is a network namespace (`wemu<id>-h<i>`) with a TUN device
//! `tun0` at `198.18.0.(i+1)/24` (and `tun1` at `198.19.0.(i+1)/24` with a
//! second path). One user-space forwarder process owns every TUN fd and moves
//! IPv4 packets between hosts through a model of each one-way link
//! ([`LinkProfile`]). Everything the emulation creates is recorded in a state
//! directory first, so `down` removes exactly that, also after a crash.
//!
//! A host may sit behind NAT (1:1, masquerading, symmetric; `nat.rs`, done
//! by the kernel's nftables in its namespace), or a whole site behind one
//! router (`sitenat.rs`); every host has its own `/tmp`, `/dev/shm` and host
//! name (`hostns.rs`) and is reached as a separate machine by the ssh-like
//! `wanmpi-emu agent` (`agent.rs`); `scenario.rs` holds issue 26's NAT
//! scenarios for tests.
//!
//! ```no_run
//! use wanmpi_emulator::{Emulation, LinkProfile, Topology, UpOptions};
//! # fn main() -> Result<(), wanmpi_emulator::EmuError> {
//! let topo = Topology::uniform(2, LinkProfile::parse("delay=20ms,loss=1%")?);
//! let emu = Emulation::up(&topo, &UpOptions::default())?;
//! let h1 = emu.host(1)?; // netns name, addresses
//! let status = emu.command(0, "ping")?.args(["-c", "1", &h1.addrs[0].to_string()]).status();
//! let counters = emu.counters()?; // per-link packets, bytes, drops, queue high-water
//! emu.down()?; // also happens on drop
//! # let _ = (status, counters); Ok(()) }
//! ```
//!
//! What it is not: it does not emulate IPv6, does not model the kernel's own
//! queueing inside the namespaces, and the hosts share one kernel (and its
//! TCP congestion control, settable per host with
//! [`Emulation::set_sysctl`] or [`UpOptions::congestion_control`]).
//! Needs root or CAP_NET_ADMIN; [`preflight`] says why not when it fails.

pub mod addr;
pub mod agent;
mod capture;
mod conntrack;
pub mod control;
pub mod counters;
mod emulation;
mod error;
pub mod forwarder;
pub mod hostns;
mod machines;
pub mod nat;
pub mod netns;
pub mod profile;
pub mod scenario;
pub mod sitenat;
pub mod state;
pub mod topology;
mod tun;
pub mod units;

pub use capture::Capture;
pub use counters::{Counters, GlobalCounters, LinkCounters, LinkReport};
pub use emulation::{down_all, down_dir, preflight, Emulation, Host, UpOptions, DEFAULT_MTU, MAX_MTU, MIN_MTU};
pub use error::{EmuError, Result};
pub use nat::{NatInfo, NatKind};
pub use profile::{GilbertElliott, LinkProfile, QueueLimit};
pub use topology::{LinkEvent, LinkSel, Override, Topology};
