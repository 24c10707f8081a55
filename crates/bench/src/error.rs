use thiserror::Error;

#[derive(Debug, Error)]
pub enum BenchError {
    #[error("{0}")]
    Usage(String),
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{file}, line {line}: {problem}")]
    Csv { file: String, line: usize, problem: String },
    #[error("emulator: {0}")]
    Emulator(#[from] wanmpi_emulator::EmuError),
    #[error("plot {file}: {problem}")]
    Plot { file: String, problem: String },
    #[error("compiling {source_file} with {compiler}: {problem}")]
    Compile { source_file: String, compiler: String, problem: String },
}

impl BenchError {
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        BenchError::Io { context: context.into(), source }
    }
}
