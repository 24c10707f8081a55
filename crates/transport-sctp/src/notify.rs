//! SCTP notifications (RFC 6458 section 6.1) read from the bytes usrsctp
//! delivers with MSG_NOTIFICATION.

use usrsctp_sys as sys;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Notification {
    AssocChange { state: u16, error: u16, assoc: u32 },
    Shutdown { assoc: u32 },
    SendFailed { assoc: u32, error: u32 },
    PartialDeliveryAborted { assoc: u32, stream: u16 },
    Other(u16),
}

fn read<T: Copy>(b: &[u8]) -> Option<T> {
    if b.len() < std::mem::size_of::<T>() {
        return None;
    }
    // SAFETY: length checked; T is plain old data; unaligned read.
    Some(unsafe { b.as_ptr().cast::<T>().read_unaligned() })
}

pub(crate) fn parse(b: &[u8]) -> Option<Notification> {
    let head: sys::sctp_tlv = read(b)?;
    Some(match head.sn_type {
        sys::SCTP_ASSOC_CHANGE => {
            let c: sys::sctp_assoc_change = read(b)?;
            Notification::AssocChange { state: c.sac_state, error: c.sac_error, assoc: c.sac_assoc_id }
        }
        sys::SCTP_SHUTDOWN_EVENT => Notification::Shutdown { assoc: read::<sys::sctp_shutdown_event>(b)?.sse_assoc_id },
        sys::SCTP_SEND_FAILED_EVENT => {
            let f: sys::sctp_send_failed_event = read(b)?;
            Notification::SendFailed { assoc: f.ssfe_assoc_id, error: f.ssfe_error }
        }
        sys::SCTP_PARTIAL_DELIVERY_EVENT => {
            let p: sys::sctp_pdapi_event = read(b)?;
            Notification::PartialDeliveryAborted { assoc: p.pdapi_assoc_id, stream: p.pdapi_stream as u16 }
        }
        other => Notification::Other(other),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_assoc_change_and_rejects_short_input() {
        let c = sys::sctp_assoc_change {
            sac_type: sys::SCTP_ASSOC_CHANGE,
            sac_length: 20,
            sac_state: sys::SCTP_COMM_LOST,
            sac_assoc_id: 42,
            ..Default::default()
        };
        // SAFETY: viewing a POD struct as bytes.
        let bytes = unsafe { std::slice::from_raw_parts((&c as *const sys::sctp_assoc_change).cast::<u8>(), 20) };
        assert_eq!(parse(bytes), Some(Notification::AssocChange { state: sys::SCTP_COMM_LOST, error: 0, assoc: 42 }));
        assert_eq!(parse(&bytes[..10]), None);
        assert_eq!(parse(&[0x55, 0, 0, 0, 8, 0, 0, 0]), Some(Notification::Other(0x55)));
    }
}
