//! Choosing and connecting the transport named by WANMPI_TRANSPORT. This is
//! the one place above the transports that names them.

use wanmpi_bootstrap::{JobEnv, KeyValue};
use wanmpi_engine::{ErrorClass, MpiError, MpiResult};
use wanmpi_transport::{Transport, TransportError};
use wanmpi_transport_composite::{AdaptiveRoute, Composite};

/// Transports this build knows, for error messages and `--help`.
pub const KNOWN: &[&str] = &["tcp", "sctp", "wamp", "adaptive"];

type Connected = Result<Box<dyn Transport>, TransportError>;

fn tcp(env: &JobEnv, kv: &mut dyn KeyValue) -> Connected {
    let mut opts = wanmpi_transport_tcp::TcpOptions::from_env()?;
    if opts.publish_addr.is_none() {
        opts.publish_addr = env.addr.clone();
    }
    Ok(Box::new(wanmpi_transport_tcp::TcpTransport::connect(kv, env.secret, opts)?))
}

fn sctp(env: &JobEnv, kv: &mut dyn KeyValue) -> Connected {
    let mut opts = wanmpi_transport_sctp::SctpOptions::from_env()?;
    if std::env::var_os("WANMPI_SCTP_PUBLISH_ADDR").is_none() {
        if let Some(a) = env.addr.as_deref().and_then(|a| a.parse().ok()) {
            opts.publish_addr = a;
        }
    }
    Ok(Box::new(wanmpi_transport_sctp::SctpTransport::connect(kv, env.secret, opts)?))
}

fn wamp(env: &JobEnv, kv: &mut dyn KeyValue) -> Connected {
    let mut opts = wanmpi_transport_wamp::WampOptions::from_env()?;
    if std::env::var_os("WANMPI_WAMP_PUBLISH_ADDR").is_none() {
        if let Some(a) = env.addr.as_deref().and_then(|a| a.parse().ok()) {
            opts.publish_addr = a;
        }
    }
    Ok(Box::new(wanmpi_transport_wamp::WampTransport::connect(kv, env.secret, opts)?))
}

/// The WAMP paper's adaptive transport: tcp and wamp to every peer, each
/// frame over the one the measured path favours
/// (wanmpi_transport_composite::adaptive).
fn adaptive(env: &JobEnv, kv: &mut dyn KeyValue) -> Connected {
    let parts = vec![tcp(env, kv)?, wamp(env, kv)?];
    Ok(Box::new(Composite::new("adaptive", parts, Box::new(AdaptiveRoute { tcp: 0, wamp: 1 }))?))
}

pub fn connect(env: &JobEnv, kv: &mut dyn KeyValue) -> MpiResult<Box<dyn Transport>> {
    let setup = |e: TransportError| MpiError::new(ErrorClass::Other, format!("{} transport setup failed: {e}", env.transport));
    let connect = match env.transport.as_str() {
        "tcp" => tcp,
        "sctp" => sctp,
        "wamp" => wamp,
        "adaptive" => adaptive,
        other => {
            return Err(MpiError::new(
                ErrorClass::Arg,
                format!("unknown transport {other:?} (WANMPI_TRANSPORT / mpirun --transport); known: {}", KNOWN.join(", ")),
            ))
        }
    };
    connect(env, kv).map_err(setup)
}
