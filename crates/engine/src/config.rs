/// Engine options. Every field has a documented default and an environment
/// variable read by the runtime.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineConfig {
    /// Messages up to this many bytes go eagerly (WANMPI_EAGER_LIMIT, default
    /// 64 KiB like LAM and the papers).
    pub eager_limit: usize,
    /// A receiver announces posted receives larger than the eager limit to
    /// their source so the message can come without a rendezvous round trip
    /// (WANMPI_RECV_CREDITS, default on).
    pub recv_credits: bool,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig { eager_limit: 64 * 1024, recv_credits: true }
    }
}
