use thiserror::Error;

#[derive(Debug, Error)]
pub enum LaunchError {
    #[error("{0}")]
    Usage(String),
    #[error("hostfile {file}, line {line}: {problem}")]
    Hostfile { file: String, line: usize, problem: String },
    #[error("cannot read {0}: {1}")]
    Read(String, std::io::Error),
    #[error("cannot start rank {rank} ({program}) on {host}: {error}")]
    Spawn { rank: u32, host: String, program: String, error: std::io::Error },
    #[error("bootstrap service: {0}")]
    Bootstrap(#[from] wanmpi_bootstrap::BootstrapError),
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("emulation: {0}")]
    Emulation(String),
    #[error("no randomness for the job secret: {0}")]
    Random(String),
}
