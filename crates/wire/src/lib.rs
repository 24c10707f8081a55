//! wanmpi's engine frame formats: a checked view of raw bytes plus a plain
//! `Frame` repr, in the smoltcp style. No I/O, no allocation on parse.
//!
//! Every frame the engine sends starts with its own header (kind, flags and the
//! kind's fixed fields). Because a clear-to-send or an acknowledgement is a frame
//! of its own kind, it can never be mistaken for part of a message body: this is
//! the first SCTP paper's "option C" fix of the long-message race, by construction.
//!
//! Framing (where one frame ends) is the transport's job: TCP prefixes a length,
//! SCTP and datagram transports keep message boundaries. A parsed frame's payload
//! is whatever follows the fixed header.
//!
//! All integers are little-endian.

mod frame;
mod plain;
pub use frame::*;
pub use plain::{plain_eager, plain_eager_header, EAGER_HEADER_LEN};

#[cfg(test)]
mod tests;
