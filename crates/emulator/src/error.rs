//! The one error type of the emulator crate.

use std::path::PathBuf;
use thiserror::Error;

/// Everything that can go wrong while parsing, bringing up, driving or
/// tearing down an emulation.
#[derive(Debug, Error)]
pub enum EmuError {
    /// The caller lacks root / CAP_NET_ADMIN; nothing was created.
    #[error("needs root / CAP_NET_ADMIN: {0}")]
    NotPermitted(String),
    /// A profile, topology file or command-line value could not be parsed.
    #[error("parse error: {0}")]
    Parse(String),
    /// An OS call failed.
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
    /// An external command (`ip ...`) ran but reported failure.
    #[error("command `{cmd}` failed ({status}): {stderr}")]
    Command { cmd: String, status: String, stderr: String },
    /// The forwarder process did not start or stopped answering.
    #[error("forwarder: {0}")]
    Forwarder(String),
    /// A state directory is missing, malformed or belongs to something else.
    #[error("state {path}: {msg}")]
    State { path: PathBuf, msg: String },
    /// A host index or name that the emulation does not have.
    #[error("no such host: {0}")]
    NoSuchHost(String),
}

impl EmuError {
    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        EmuError::Io { context: context.into(), source }
    }

    pub fn state(path: impl Into<PathBuf>, msg: impl Into<String>) -> Self {
        EmuError::State { path: path.into(), msg: msg.into() }
    }
}

pub type Result<T> = std::result::Result<T, EmuError>;
