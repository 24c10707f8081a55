//! Choosing where the key/value service listens, and starting it.

use crate::error::LaunchError;
use crate::hosts;
use crate::spec::{BootstrapChoice, JobSpec};
use std::os::unix::fs::DirBuilderExt;
use std::path::PathBuf;
use wanmpi_bootstrap::server::Sink;
use wanmpi_bootstrap::{BootstrapAddr, PortRange, Server, ServerConfig};

/// The running service and the private directory of its socket, removed
/// together when the job ends.
pub struct Service {
    server: Server,
    dir: Option<PathBuf>,
}

impl Service {
    pub fn address(&self) -> &str {
        self.server.address()
    }
    pub fn notes(&self) -> wanmpi_bootstrap::Notes {
        self.server.notes()
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        self.server.shutdown();
        if let Some(d) = self.dir.take() {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}

/// Starts the service for a job of `size` ranks; a TCP service on a port
/// of its own choosing takes it in `port_range`.
pub fn start(
    spec: &JobSpec,
    job_id: &str,
    local: &[bool],
    (size, port_range): (u32, Option<PortRange>),
    secret: [u8; 32],
    sink: Sink,
) -> Result<Service, LaunchError> {
    let all_local = local.iter().all(|l| *l);
    // `{host}` agents (ip netns exec) run on this machine and share its files.
    let shared_fs = all_local || spec.launch_agent.contains("{host}");
    let mut dir = None;
    let bind = match &spec.bootstrap {
        BootstrapChoice::Unix => unix_in_private_dir(job_id, &mut dir)?,
        BootstrapChoice::Auto if shared_fs => unix_in_private_dir(job_id, &mut dir)?,
        BootstrapChoice::Tcp | BootstrapChoice::Auto if all_local => BootstrapAddr::Tcp("127.0.0.1".into(), 0),
        BootstrapChoice::Tcp | BootstrapChoice::Auto => BootstrapAddr::Tcp("0.0.0.0".into(), 0),
        BootstrapChoice::Address(a) => BootstrapAddr::parse(a)?,
    };
    let mut config = ServerConfig::new(size, secret);
    if let Some(t) = spec.bootstrap_timeout {
        config.fence_timeout = t;
    }
    config.advertise_host = Some(hosts::own_hostname()).filter(|h| !h.is_empty());
    config.port_range = port_range;
    let server = match Server::start(&bind, config, sink) {
        Ok(s) => s,
        Err(e) => {
            if let Some(d) = dir {
                let _ = std::fs::remove_dir_all(d);
            }
            return Err(e.into());
        }
    };
    Ok(Service { server, dir })
}

/// A socket in a new directory only we can enter.
fn unix_in_private_dir(job_id: &str, dir: &mut Option<PathBuf>) -> Result<BootstrapAddr, LaunchError> {
    let d = std::env::temp_dir().join(format!("wanmpi-{job_id}"));
    std::fs::DirBuilder::new().mode(0o700).create(&d)?;
    let sock = d.join("kv.sock");
    *dir = Some(d);
    Ok(BootstrapAddr::Unix(sock))
}
