//! What one rank put between two fences, as one PMIx string: each key and
//! value as `LENGTH:BYTES` (lengths in bytes, decimal), so neither needs
//! escaping. And the order in which a reader looks through the ranks'
//! records for a key.

/// One record from the pairs put since the last fence.
pub fn encode(pairs: &[(String, String)]) -> String {
    let mut out = String::new();
    for (k, v) in pairs {
        for s in [k, v] {
            out.push_str(&s.len().to_string());
            out.push(':');
            out.push_str(s);
        }
    }
    out
}

/// The pairs of a record; an error says what is wrong with it.
pub fn decode(text: &str) -> Result<Vec<(String, String)>, String> {
    let mut rest = text;
    let mut fields = Vec::new();
    while !rest.is_empty() {
        let colon = rest.find(':').ok_or("a field without its length")?;
        let len: usize = rest[..colon].parse().map_err(|_| format!("length {:?} is not a number", &rest[..colon]))?;
        let body = &rest[colon + 1..];
        let field = body.get(..len).ok_or_else(|| format!("a field of {len} bytes in {} left", body.len()))?;
        fields.push(field.to_string());
        rest = &body[len..];
    }
    if fields.len() % 2 != 0 {
        return Err("a key without its value".into());
    }
    let mut it = fields.into_iter();
    let mut pairs = Vec::new();
    while let (Some(k), Some(v)) = (it.next(), it.next()) {
        pairs.push((k, v));
    }
    Ok(pairs)
}

/// Ranks to read for `key`: the one a trailing number names (most keys are
/// a rank's own: `wanmpi-host-3`), then 0 (which puts the job's keys), then
/// the others in order.
pub fn search_order(key: &str, size: u32) -> Vec<u32> {
    let digits = key.len() - key.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    let hint = key[key.len() - digits..].parse::<u32>().ok().filter(|&r| r < size);
    let mut order: Vec<u32> = hint.into_iter().collect();
    order.extend((0..size).filter(|&r| Some(r) != hint));
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_bytes_survive_a_record() {
        let pairs = vec![("a:b".to_string(), "12:x;y=z\n".to_string()), ("".into(), "".into()), ("wanmpi-pk-3".into(), "é".into())];
        assert_eq!(decode(&encode(&pairs)).unwrap(), pairs);
        assert_eq!(decode("").unwrap(), vec![]);
    }

    #[test]
    fn a_damaged_record_is_an_error() {
        for bad in ["3:ab", "x:a", "1:a", "1:a1:", "5"] {
            assert!(decode(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_named_rank_is_read_first_then_rank_zero() {
        assert_eq!(search_order("wanmpi-host-2", 4), vec![2, 0, 1, 3]);
        assert_eq!(search_order("wanmpi-job", 3), vec![0, 1, 2]);
        assert_eq!(search_order("ep.9", 3), vec![0, 1, 2], "no such rank");
    }
}
