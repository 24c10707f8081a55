use crate::BootstrapError;

/// Rank of this process in MPI_COMM_WORLD.
pub const ENV_RANK: &str = "WANMPI_RANK";
/// Number of processes in the job.
pub const ENV_SIZE: &str = "WANMPI_SIZE";
/// Where the key/value service listens: `unix:/path` or `tcp:host:port`.
pub const ENV_BOOTSTRAP: &str = "WANMPI_BOOTSTRAP";
/// The job's secret: 64 hex digits (32 random bytes), fresh for every job.
pub const ENV_SECRET: &str = "WANMPI_JOB_SECRET";
/// A job id, unique per launch (names temporary files, appears in logs).
pub const ENV_JOB_ID: &str = "WANMPI_JOB_ID";
/// The transport to use: tcp, sctp, ...
pub const ENV_TRANSPORT: &str = "WANMPI_TRANSPORT";
/// The address this rank publishes for its peers to reach it (optional;
/// transports default to 127.0.0.1).
pub const ENV_ADDR: &str = "WANMPI_ADDR";

/// Everything the launcher tells a rank.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobEnv {
    pub rank: u32,
    pub size: u32,
    pub bootstrap: String,
    pub secret: [u8; 32],
    pub job_id: String,
    pub transport: String,
    pub addr: Option<String>,
}

fn var(name: &'static str) -> Result<String, BootstrapError> {
    std::env::var(name).map_err(|e| BootstrapError::BadEnv { var: name, problem: e.to_string() })
}

fn parse_secret(hex: &str) -> Result<[u8; 32], BootstrapError> {
    let bad = |p: &str| BootstrapError::BadEnv { var: ENV_SECRET, problem: p.to_string() };
    if hex.len() != 64 {
        return Err(bad("must be 64 hex digits"));
    }
    let mut out = [0u8; 32];
    for (i, b) in out.iter_mut().enumerate() {
        *b = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).map_err(|_| bad("not hexadecimal"))?;
    }
    Ok(out)
}

impl JobEnv {
    /// Reads the job environment. `Ok(None)` when the process was not started
    /// by a launcher (no `WANMPI_RANK`): it then runs as a singleton job.
    pub fn from_env() -> Result<Option<JobEnv>, BootstrapError> {
        if std::env::var_os(ENV_RANK).is_none() {
            return Ok(None);
        }
        let num = |name: &'static str| -> Result<u32, BootstrapError> {
            var(name)?.parse().map_err(|e: std::num::ParseIntError| BootstrapError::BadEnv { var: name, problem: e.to_string() })
        };
        let rank = num(ENV_RANK)?;
        let size = num(ENV_SIZE)?;
        if size == 0 || rank >= size {
            return Err(BootstrapError::BadEnv { var: ENV_RANK, problem: format!("rank {rank} not below size {size}") });
        }
        Ok(Some(JobEnv {
            rank,
            size,
            bootstrap: var(ENV_BOOTSTRAP)?,
            secret: parse_secret(&var(ENV_SECRET)?)?,
            job_id: var(ENV_JOB_ID)?,
            transport: std::env::var(ENV_TRANSPORT).unwrap_or_else(|_| "tcp".into()),
            addr: std::env::var(ENV_ADDR).ok().filter(|s| !s.is_empty()),
        }))
    }

    /// The secret as 64 hex digits, as the launcher exports it.
    pub fn secret_hex(secret: &[u8; 32]) -> String {
        secret.iter().map(|b| format!("{b:02x}")).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_round_trips_and_rejects_bad_hex() {
        let s: [u8; 32] = core::array::from_fn(|i| (i * 7) as u8);
        assert_eq!(parse_secret(&JobEnv::secret_hex(&s)).unwrap(), s);
        assert!(parse_secret("abc").is_err());
        assert!(parse_secret(&"zz".repeat(32)).is_err());
    }
}
