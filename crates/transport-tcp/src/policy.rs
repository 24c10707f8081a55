//! Which connections are sealed: the job-wide rule (shared with sctp, in
//! `wanmpi_bootstrap::seal_policy`) with tcp's own switch.

pub use wanmpi_bootstrap::seal_policy::{wants_seal, Maps, Seal, ENV_INSECURE_LAN};

/// Forces sealing of tcp on (`1`, also on one host) or off (`0`).
pub const ENV_ENCRYPT: &str = "WANMPI_TCP_ENCRYPT";
