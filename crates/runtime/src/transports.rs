//! Choosing and connecting the transport named by WANMPI_TRANSPORT. This is
//! the one place above the transports that names them.

use wanmpi_bootstrap::{JobEnv, KeyValue};
use wanmpi_engine::{ErrorClass, MpiError, MpiResult};
use wanmpi_transport::Transport;

/// Transports this build knows, for error messages and `--help`.
pub const KNOWN: &[&str] = &["tcp", "sctp", "wamp"];

pub fn connect(env: &JobEnv, kv: &mut dyn KeyValue) -> MpiResult<Box<dyn Transport>> {
    let setup = |e: wanmpi_transport::TransportError| MpiError::new(ErrorClass::Other, format!("{} transport setup failed: {e}", env.transport));
    match env.transport.as_str() {
        "tcp" => {
            let mut opts = wanmpi_transport_tcp::TcpOptions::from_env().map_err(setup)?;
            if opts.publish_addr.is_none() {
                opts.publish_addr = env.addr.clone();
            }
            Ok(Box::new(wanmpi_transport_tcp::TcpTransport::connect(kv, env.secret, opts).map_err(setup)?))
        }
        "sctp" => {
            let mut opts = wanmpi_transport_sctp::SctpOptions::from_env().map_err(|e| setup(e.into()))?;
            if std::env::var_os("WANMPI_SCTP_PUBLISH_ADDR").is_none() {
                if let Some(a) = env.addr.as_deref().and_then(|a| a.parse().ok()) {
                    opts.publish_addr = a;
                }
            }
            Ok(Box::new(wanmpi_transport_sctp::SctpTransport::connect(kv, env.secret, opts).map_err(|e| setup(e.into()))?))
        }
        "wamp" => {
            let mut opts = wanmpi_transport_wamp::WampOptions::from_env().map_err(setup)?;
            if std::env::var_os("WANMPI_WAMP_PUBLISH_ADDR").is_none() {
                if let Some(a) = env.addr.as_deref().and_then(|a| a.parse().ok()) {
                    opts.publish_addr = a;
                }
            }
            Ok(Box::new(wanmpi_transport_wamp::WampTransport::connect(kv, env.secret, opts).map_err(setup)?))
        }
        other => Err(MpiError::new(
            ErrorClass::Arg,
            format!("unknown transport {other:?} (WANMPI_TRANSPORT / mpirun --transport); known: {}", KNOWN.join(", ")),
        )),
    }
}
