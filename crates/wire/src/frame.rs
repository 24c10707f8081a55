use thiserror::Error;

/// First byte of every frame: catches a peer speaking another format or version.
pub const MAGIC: u8 = 0xA7;

/// Byte ranges of the common header.
pub mod field {
    pub type Range = core::ops::Range<usize>;
    pub const MAGIC: usize = 0;
    pub const KIND: usize = 1;
    pub const FLAGS: usize = 2; // u16
    pub const COMMON_LEN: usize = 4;
}

/// Frame kinds. The discriminant is the byte on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    /// Envelope plus the whole message (or, with `PUSH`, its first piece).
    Eager = 1,
    /// Rendezvous request-to-send: envelope, no data.
    Rts = 2,
    /// Clear-to-send: the receiver matched an RTS and will take `accept_len` bytes.
    Cts = 3,
    /// A piece of a long message at an offset, keyed by the sender's message id.
    Data = 4,
    /// The receiver matched a synchronous eager send.
    SyncAck = 5,
    /// The receiver has a receive posted for (context, tag) with room for
    /// `capacity` bytes: the sender may push a long message without an RTS.
    RecvCredit = 6,
    /// The sender is finalizing: it sends nothing more, and its connection
    /// closing from now on is expected, not a failure.
    Bye = 7,
    /// The receiver lets the sender have `bytes` more of its WAN window:
    /// room for long messages that arrive before their receive is posted.
    /// Sent once to open the window, then as matched messages free it.
    Grant = 8,
    /// Request-to-send of a long message between two processes of one host:
    /// envelope plus the address of the sender's bytes, which the receiver
    /// reads itself once matched (cross-memory attach, one copy).
    RtsLocal = 9,
    /// The receiver read the message an `RtsLocal` offered: the sender's
    /// buffer is free and its send complete.
    ReadDone = 10,
}

impl Kind {
    fn from_u8(b: u8) -> Option<Kind> {
        Some(match b {
            1 => Kind::Eager,
            2 => Kind::Rts,
            3 => Kind::Cts,
            4 => Kind::Data,
            5 => Kind::SyncAck,
            6 => Kind::RecvCredit,
            7 => Kind::Bye,
            8 => Kind::Grant,
            9 => Kind::RtsLocal,
            10 => Kind::ReadDone,
            _ => return None,
        })
    }

    /// Flags a frame of this kind may carry.
    const fn allowed_flags(self) -> u16 {
        match self {
            Kind::Eager => flags::SYNC | flags::PUSH | flags::WINDOW,
            Kind::Rts | Kind::RtsLocal => flags::SYNC,
            _ => 0,
        }
    }

    /// Length of the fixed header of this kind, common part included.
    pub const fn header_len(self) -> usize {
        field::COMMON_LEN
            + match self {
                Kind::Eager | Kind::Rts => ENVELOPE_LEN,
                Kind::Cts => 16,
                Kind::Data => 16,
                Kind::SyncAck => 8,
                Kind::RecvCredit => 16,
                Kind::Bye => 0,
                Kind::Grant => 8,
                Kind::RtsLocal => ENVELOPE_LEN + 8,
                Kind::ReadDone => 8,
            }
    }
}

/// Flags (u16 in the common header).
pub mod flags {
    /// The sender waits for the receiver to match (MPI_Ssend).
    pub const SYNC: u16 = 1 << 0;
    /// Eager frame of a long message pushed against a receive credit: more
    /// `Data` frames with the same message id follow.
    pub const PUSH: u16 = 1 << 1;
    /// A long eager message sent against the receiver's WAN window (`Grant`)
    /// rather than a posted receive: the receiver may buffer it and gives
    /// its length back once it is matched.
    pub const WINDOW: u16 = 1 << 2;
    /// All flags a valid frame may carry.
    pub const KNOWN: u16 = SYNC | PUSH | WINDOW;
}

/// Envelope fields shared by `Eager` and `Rts` (after the common header).
/// ctx u32 | tag i32 | seq u64 | msg_id u64 | total_len u64
pub const ENVELOPE_LEN: usize = 32;

/// The MPI envelope as it travels. The source is the transport peer, so it is
/// not repeated here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Envelope {
    /// Communicator context id (point-to-point and collective contexts differ).
    pub ctx: u32,
    pub tag: i32,
    /// Sequence number per (source, destination, context): the non-overtaking rule.
    pub seq: u64,
    /// Sender-chosen id naming this message in later frames (CTS, Data, SyncAck).
    pub msg_id: u64,
    /// Total length of the message body in bytes.
    pub total_len: u64,
}

/// Tag value carried by a `RecvCredit` for a receive posted with MPI_ANY_TAG.
pub const ANY_TAG: i32 = -1;

/// A parsed frame. `payload` borrows from the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Frame<'a> {
    Eager {
        env: Envelope,
        flags: u16,
        payload: &'a [u8],
    },
    Rts {
        env: Envelope,
        flags: u16,
    },
    Cts {
        msg_id: u64,
        accept_len: u64,
    },
    Data {
        msg_id: u64,
        offset: u64,
        payload: &'a [u8],
    },
    SyncAck {
        msg_id: u64,
    },
    RecvCredit {
        ctx: u32,
        tag: i32,
        capacity: u64,
    },
    Bye,
    Grant {
        bytes: u64,
    },
    /// `addr`: where the message's bytes start in the sender's address space.
    RtsLocal {
        env: Envelope,
        flags: u16,
        addr: u64,
    },
    ReadDone {
        msg_id: u64,
    },
}

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum WireError {
    #[error("frame of {0} bytes is shorter than its header")]
    Truncated(usize),
    #[error("bad magic byte {0:#04x}")]
    BadMagic(u8),
    #[error("unknown frame kind {0}")]
    UnknownKind(u8),
    #[error("unknown flags {0:#06x}")]
    UnknownFlags(u16),
    #[error("{kind:?} frame carries flags {flags:#06x} it cannot have")]
    FlagsNotAllowed { kind: Kind, flags: u16 },
    #[error("{kind:?} frame carries {len} payload bytes where none are allowed")]
    UnexpectedPayload { kind: Kind, len: usize },
    #[error("eager payload of {payload} bytes exceeds message length {total}")]
    PayloadTooLong { payload: usize, total: u64 },
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}
fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}
fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

fn envelope_at(b: &[u8]) -> Envelope {
    let o = field::COMMON_LEN;
    Envelope { ctx: u32_at(b, o), tag: u32_at(b, o + 4) as i32, seq: u64_at(b, o + 8), msg_id: u64_at(b, o + 16), total_len: u64_at(b, o + 24) }
}

impl<'a> Frame<'a> {
    /// Checks and parses one frame. Never panics on any input.
    pub fn parse(b: &'a [u8]) -> Result<Frame<'a>, WireError> {
        if b.len() < field::COMMON_LEN {
            return Err(WireError::Truncated(b.len()));
        }
        if b[field::MAGIC] != MAGIC {
            return Err(WireError::BadMagic(b[field::MAGIC]));
        }
        let kind = Kind::from_u8(b[field::KIND]).ok_or(WireError::UnknownKind(b[field::KIND]))?;
        let flags = u16_at(b, field::FLAGS);
        if flags & !flags::KNOWN != 0 {
            return Err(WireError::UnknownFlags(flags));
        }
        if flags & !kind.allowed_flags() != 0 {
            return Err(WireError::FlagsNotAllowed { kind, flags });
        }
        let hl = kind.header_len();
        if b.len() < hl {
            return Err(WireError::Truncated(b.len()));
        }
        let payload = &b[hl..];
        let o = field::COMMON_LEN;
        let no_payload = |f: Frame<'a>| {
            if payload.is_empty() {
                Ok(f)
            } else {
                Err(WireError::UnexpectedPayload { kind, len: payload.len() })
            }
        };
        match kind {
            Kind::Eager => {
                let env = envelope_at(b);
                if payload.len() as u64 > env.total_len {
                    return Err(WireError::PayloadTooLong { payload: payload.len(), total: env.total_len });
                }
                Ok(Frame::Eager { env, flags, payload })
            }
            Kind::Rts => no_payload(Frame::Rts { env: envelope_at(b), flags }),
            Kind::Cts => no_payload(Frame::Cts { msg_id: u64_at(b, o), accept_len: u64_at(b, o + 8) }),
            Kind::Data => Ok(Frame::Data { msg_id: u64_at(b, o), offset: u64_at(b, o + 8), payload }),
            Kind::SyncAck => no_payload(Frame::SyncAck { msg_id: u64_at(b, o) }),
            Kind::RecvCredit => no_payload(Frame::RecvCredit { ctx: u32_at(b, o), tag: u32_at(b, o + 4) as i32, capacity: u64_at(b, o + 8) }),
            Kind::Bye => no_payload(Frame::Bye),
            Kind::Grant => no_payload(Frame::Grant { bytes: u64_at(b, o) }),
            Kind::RtsLocal => no_payload(Frame::RtsLocal { env: envelope_at(b), flags, addr: u64_at(b, o + ENVELOPE_LEN) }),
            Kind::ReadDone => no_payload(Frame::ReadDone { msg_id: u64_at(b, o) }),
        }
    }

    pub fn kind(&self) -> Kind {
        match self {
            Frame::Eager { .. } => Kind::Eager,
            Frame::Rts { .. } => Kind::Rts,
            Frame::Cts { .. } => Kind::Cts,
            Frame::Data { .. } => Kind::Data,
            Frame::SyncAck { .. } => Kind::SyncAck,
            Frame::RecvCredit { .. } => Kind::RecvCredit,
            Frame::Bye => Kind::Bye,
            Frame::Grant { .. } => Kind::Grant,
            Frame::RtsLocal { .. } => Kind::RtsLocal,
            Frame::ReadDone { .. } => Kind::ReadDone,
        }
    }

    fn flags(&self) -> u16 {
        match self {
            Frame::Eager { flags, .. } | Frame::Rts { flags, .. } | Frame::RtsLocal { flags, .. } => *flags,
            _ => 0,
        }
    }

    /// The payload this frame carries (empty for control frames).
    pub fn payload(&self) -> &'a [u8] {
        match self {
            Frame::Eager { payload, .. } | Frame::Data { payload, .. } => payload,
            _ => &[],
        }
    }

    /// Writes the fixed header into `out` (cleared first). The payload is sent
    /// separately (scatter/gather), so large bodies are never copied here.
    pub fn emit_header(&self, out: &mut HeaderBuf) {
        let kind = self.kind();
        out.len = kind.header_len();
        let b = &mut out.bytes;
        b[field::MAGIC] = MAGIC;
        b[field::KIND] = kind as u8;
        b[field::FLAGS..field::FLAGS + 2].copy_from_slice(&self.flags().to_le_bytes());
        let o = field::COMMON_LEN;
        let mut put = |at: usize, v: &[u8]| b[o + at..o + at + v.len()].copy_from_slice(v);
        match *self {
            Frame::Eager { env, .. } | Frame::Rts { env, .. } | Frame::RtsLocal { env, .. } => {
                put(0, &env.ctx.to_le_bytes());
                put(4, &env.tag.to_le_bytes());
                put(8, &env.seq.to_le_bytes());
                put(16, &env.msg_id.to_le_bytes());
                put(24, &env.total_len.to_le_bytes());
                if let Frame::RtsLocal { addr, .. } = *self {
                    put(ENVELOPE_LEN, &addr.to_le_bytes());
                }
            }
            Frame::Cts { msg_id, accept_len } => {
                put(0, &msg_id.to_le_bytes());
                put(8, &accept_len.to_le_bytes());
            }
            Frame::Data { msg_id, offset, .. } => {
                put(0, &msg_id.to_le_bytes());
                put(8, &offset.to_le_bytes());
            }
            Frame::SyncAck { msg_id } => put(0, &msg_id.to_le_bytes()),
            Frame::RecvCredit { ctx, tag, capacity } => {
                put(0, &ctx.to_le_bytes());
                put(4, &tag.to_le_bytes());
                put(8, &capacity.to_le_bytes());
            }
            Frame::Bye => {}
            Frame::Grant { bytes } => put(0, &bytes.to_le_bytes()),
            Frame::ReadDone { msg_id } => put(0, &msg_id.to_le_bytes()),
        }
    }

    /// Header and payload as one owned buffer (tests, small control frames).
    pub fn to_vec(&self) -> Vec<u8> {
        let mut h = HeaderBuf::new();
        self.emit_header(&mut h);
        let mut v = h.as_slice().to_vec();
        v.extend_from_slice(self.payload());
        v
    }
}

/// Largest fixed header of any kind.
pub const MAX_HEADER_LEN: usize = field::COMMON_LEN + ENVELOPE_LEN + 8;

/// A header on the stack; `as_slice` is the part to send before the payload.
#[derive(Clone, Copy)]
pub struct HeaderBuf {
    bytes: [u8; MAX_HEADER_LEN],
    len: usize,
}

impl HeaderBuf {
    pub const fn new() -> HeaderBuf {
        HeaderBuf { bytes: [0; MAX_HEADER_LEN], len: 0 }
    }
    pub fn as_slice(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

impl Default for HeaderBuf {
    fn default() -> Self {
        HeaderBuf::new()
    }
}

impl core::fmt::Debug for HeaderBuf {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "HeaderBuf({:02x?})", self.as_slice())
    }
}
