/// What a transport offers, declared as data so that the engine's protocol
/// choice is a pure function of it (UCX style).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caps {
    /// Short name, as chosen with `--transport` (e.g. "tcp", "sctp").
    pub name: &'static str,
    /// Ordered channels per peer (1 for TCP, the stream count for SCTP).
    pub channels: u16,
    /// Largest frame `try_send` accepts, header included.
    pub max_frame: usize,
    /// Eager limit the transport suggests (the engine's option overrides it).
    pub eager_limit_hint: usize,
    /// Frames are never lost (true for every transport the engine runs on).
    pub reliable: bool,
}

impl Caps {
    /// Checks a frame against these limits before a transport takes it:
    /// returns its length, or the error `try_send` should give.
    #[inline]
    pub fn check_frame(&self, channel: u16, parts: &[&[u8]]) -> Result<usize, crate::TransportError> {
        let len: usize = parts.iter().map(|p| p.len()).sum();
        if len > self.max_frame {
            return Err(crate::TransportError::FrameTooLarge { len, max: self.max_frame });
        }
        if channel >= self.channels {
            return Err(crate::TransportError::NoSuchChannel { channel, channels: self.channels });
        }
        Ok(len)
    }
}
