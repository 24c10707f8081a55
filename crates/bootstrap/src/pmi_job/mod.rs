//! What mpirun would give a rank, made by the ranks themselves when a
//! process manager started them instead (Slurm's `srun --mpi=pmi2` through
//! `pmi2`, `--mpi=pmix` or any PMIx server through `pmix`): rank 0 draws
//! the job secret and the job id; every rank publishes its host name (so
//! each knows which peers share its host: the host map, what mpirun's
//! `WANMPI_HOST_MAP` says) and a public key at a first fence; rank 0 then
//! publishes the secret wrapped for each rank under that rank's key
//! (`wrap`), and a second fence hands each rank its wrap. The process
//! manager's key/value traffic is not encrypted, so the secret never passes
//! through it in clear. The host names come with each host's addresses,
//! from which every rank chooses the address it publishes between the
//! fences (`addr`).

mod addr;
mod wrap;

use crate::{BootstrapError, JobEnv, KeyValue};

/// Rank 0's wrap of the job secret for rank N: `wanmpi-wrap-N`.
const KEY_WRAP: &str = "wanmpi-wrap";
/// Rank N's public key for its wrap: `wanmpi-pk-N`.
const KEY_PUBLIC: &str = "wanmpi-pk";
const KEY_JOB: &str = "wanmpi-job";

fn protocol(manager: &str, text: String) -> BootstrapError {
    BootstrapError::Protocol(format!("{manager}: {text}"))
}

/// The job environment and the host map (host index of every rank, in
/// rank order, comma-separated), over `kv`; `manager` names the process
/// manager in errors and in `JobEnv::bootstrap`.
pub(crate) fn job_env<K: KeyValue + ?Sized>(kv: &mut K, manager: &str) -> Result<(JobEnv, String), BootstrapError> {
    let (rank, size) = (kv.rank(), kv.size());
    let have = crate::route::interfaces().unwrap_or_default();
    kv.put(&format!("wanmpi-host-{rank}"), &addr::HostInfo::here(&own_hostname(), &have).encode())?;
    let keys = wrap::Keypair::new().map_err(|e| protocol(manager, e))?;
    kv.put(&format!("{KEY_PUBLIC}-{rank}"), &keys.public_hex())?;
    let mut secret = [0u8; 32];
    if rank == 0 {
        getrandom::getrandom(&mut secret).map_err(|e| protocol(manager, format!("no randomness for the job secret: {e}")))?;
        let mut tag = [0u8; 4];
        getrandom::getrandom(&mut tag).map_err(|e| protocol(manager, format!("no randomness for the job id: {e}")))?;
        let slurm = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty() && !v.contains(';'));
        let job = match (slurm("SLURM_JOB_ID"), slurm("SLURM_STEP_ID")) {
            (Some(j), Some(s)) => format!("slurm-{j}.{s}-{}", hex(&tag)),
            _ => format!("{manager}-{}", hex(&tag)),
        };
        kv.put(KEY_JOB, &job)?;
    }
    kv.fence()?;
    let (hosts, map) = hosts(kv)?;
    let own = map.get(rank as usize).copied().unwrap_or(0);
    let given = crate::own_addr::given(&|k: &str| std::env::var(k).ok())?;
    let addr = addr::choose(rank, given, &hosts, own, &have, |t| crate::route::source_toward(t).ok())?;
    if rank == 0 {
        for r in 1..size {
            let theirs = kv.get(&format!("{KEY_PUBLIC}-{r}"))?;
            kv.put(&format!("{KEY_WRAP}-{r}"), &wrap::wrap(&secret, &theirs).map_err(|e| protocol(manager, e))?)?;
        }
    }
    kv.fence()?;
    if rank != 0 {
        secret = keys.open(&kv.get(&format!("{KEY_WRAP}-{rank}"))?).map_err(|e| protocol(manager, e))?;
    }
    let job_id = kv.get(KEY_JOB)?;
    let env = JobEnv {
        rank,
        size,
        bootstrap: manager.into(),
        secret,
        job_id,
        transport: std::env::var(crate::ENV_TRANSPORT).unwrap_or_else(|_| "auto".into()),
        addr,
        parent_port: None,
    };
    let map: Vec<String> = map.iter().map(usize::to_string).collect();
    Ok((env, map.join(",")))
}

/// Every rank's host as published at the first fence: the distinct hosts
/// in order of first appearance, and each rank's index among them.
fn hosts<K: KeyValue + ?Sized>(kv: &mut K) -> Result<(Vec<addr::HostInfo>, Vec<usize>), BootstrapError> {
    let keys: Vec<String> = (0..kv.size()).map(|r| format!("wanmpi-host-{r}")).collect();
    let mut hosts: Vec<addr::HostInfo> = Vec::new();
    let mut map = Vec::with_capacity(kv.size() as usize);
    for text in kv.get_many(&keys)? {
        let h = addr::HostInfo::decode(&text);
        let i = match hosts.iter().position(|k| k.name == h.name) {
            Some(i) => i,
            None => {
                hosts.push(h);
                hosts.len() - 1
            }
        };
        map.push(i);
    }
    Ok((hosts, map))
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn own_hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for its length; we stop at the first NUL.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    if rc != 0 || end == 0 {
        return "localhost".into();
    }
    String::from_utf8_lossy(&buf[..end]).replace(';', "_")
}
