//! AWS event-stream messages (`application/vnd.amazon.eventstream`, Bedrock's ConverseStream): each a
//! prelude (the message's length and its headers' length, big-endian u32s, and the prelude's CRC-32),
//! headers, a payload, and the whole message's CRC-32. An event's payload is JSON. A message is read
//! only when both checksums hold, and written again with new lengths and checksums when its payload
//! changes; unchanged, it is its own bytes.

/// The smallest message: a prelude and the closing checksum.
const MIN: usize = 16;
/// The largest message toolfit reads (Bedrock's own limit is 16 MiB): a length past it is not a frame.
const MAX: usize = 16 << 20;

/// CRC-32 (IEEE 802.3, the event-stream's), bit by bit: frames are small and a table would cost the
/// module 1 KB.
pub fn crc32(bytes: &[u8]) -> u32 {
    let mut c = !0u32;
    for b in bytes {
        c ^= u32::from(*b);
        for _ in 0..8 {
            c = if c & 1 == 1 { (c >> 1) ^ 0xEDB8_8320 } else { c >> 1 };
        }
    }
    !c
}

fn be(b: &[u8], at: usize) -> Option<usize> {
    let x: [u8; 4] = b.get(at..at + 4)?.try_into().ok()?;
    usize::try_from(u32::from_be_bytes(x)).ok()
}

/// Where the message that starts `b` ends, if it is all there. A length no message has (or past
/// [`MAX`]) ends "here and now", at `b`'s end: the bytes are then passed as they came.
pub fn end(b: &[u8]) -> Option<usize> {
    let total = be(b, 0)?;
    if !(MIN..=MAX).contains(&total) {
        return Some(b.len());
    }
    (b.len() >= total).then_some(total)
}

/// A message's headers and payload, if `msg` is one whole message with both checksums right.
pub fn read(msg: &[u8]) -> Option<(&[u8], &[u8])> {
    let (total, headers) = (be(msg, 0)?, be(msg, 4)?);
    if total != msg.len() || total < MIN || headers > total - MIN {
        return None;
    }
    if be(msg, 8)? != usize::try_from(crc32(msg.get(..8)?)).ok()? || be(msg, total - 4)? != usize::try_from(crc32(msg.get(..total - 4)?)).ok()? {
        return None;
    }
    Some((msg.get(12..12 + headers)?, msg.get(12 + headers..total - 4)?))
}

/// The string member `key` of a payload's JSON object, base64-decoded, and the payload around the
/// string: (before it, what it held, after it). `None` when there is no such member or it does not
/// decode (Bedrock InvokeModel's `{"bytes": "<an Anthropic event, base64>"}`).
pub fn unwrap<'a>(payload: &'a str, key: &str) -> Option<(&'a str, String, &'a str)> {
    let o = crate::api::raw::object(payload)?;
    let v = o.get(key)?.get();
    let at = crate::api::raw::offset(payload, v)?;
    let text = serde_json::from_str::<String>(v).ok()?;
    let inner = String::from_utf8(unbase64(&text)?).ok()?;
    Some((payload.get(..at)?, inner, payload.get(at + v.len()..)?))
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard base64 with padding.
pub fn base64(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for c in bytes.chunks(3) {
        let n = c.iter().enumerate().fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..4 {
            let six = usize::try_from((n >> (18 - 6 * i)) & 63).unwrap_or(0);
            out.push(if i <= c.len() { char::from(B64.get(six).copied().unwrap_or(b'=')) } else { '=' });
        }
    }
    out
}

/// Standard base64, padded or not (`None`: any other character).
pub fn unbase64(text: &str) -> Option<Vec<u8>> {
    let t = text.trim_end_matches('=');
    let mut out = Vec::with_capacity(t.len() * 3 / 4);
    let (mut n, mut bits) = (0u32, 0);
    for c in t.bytes() {
        let v = u32::try_from(B64.iter().position(|x| *x == c)?).ok()?;
        n = n << 6 | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push(u8::try_from((n >> bits) & 0xFF).ok()?);
        }
    }
    Some(out)
}

/// A message of these headers and payload, lengths and checksums computed.
pub fn write(headers: &[u8], payload: &[u8]) -> Vec<u8> {
    let total = MIN + headers.len() + payload.len();
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(&u32::try_from(total).unwrap_or(u32::MAX).to_be_bytes());
    out.extend_from_slice(&u32::try_from(headers.len()).unwrap_or(u32::MAX).to_be_bytes());
    let prelude = crc32(&out);
    out.extend_from_slice(&prelude.to_be_bytes());
    out.extend_from_slice(headers);
    out.extend_from_slice(payload);
    let all = crc32(&out);
    out.extend_from_slice(&all.to_be_bytes());
    out
}

#[cfg(test)]
pub mod tests {
    use super::*;

    /// One string header (`name`, type 7, value), as the event-stream writes it.
    pub fn header(name: &str, value: &str) -> Vec<u8> {
        let mut h = vec![u8::try_from(name.len()).unwrap_or(0)];
        h.extend_from_slice(name.as_bytes());
        h.push(7);
        h.extend_from_slice(&u16::try_from(value.len()).unwrap_or(0).to_be_bytes());
        h.extend_from_slice(value.as_bytes());
        h
    }

    /// An event message as Bedrock sends one.
    pub fn event(kind: &str, payload: &str) -> Vec<u8> {
        let mut h = header(":event-type", kind);
        h.extend(header(":content-type", "application/json"));
        h.extend(header(":message-type", "event"));
        write(&h, payload.as_bytes())
    }

    #[test]
    fn base64_both_ways() {
        for (plain, coded) in [("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foob", "Zm9vYg=="), ("fooba", "Zm9vYmE="), ("foobar", "Zm9vYmFy")] {
            assert_eq!(base64(plain.as_bytes()), coded);
            assert_eq!(unbase64(coded).as_deref(), Some(plain.as_bytes()));
        }
        assert_eq!(unbase64("Zm9v!"), None, "not base64");
        let (a, inner, b) = unwrap(r#"{"bytes":"eyJhIjoxfQ==","p":"x"}"#, "bytes").unwrap_or_default();
        assert_eq!((a, inner.as_str(), b), (r#"{"bytes":"#, r#"{"a":1}"#, r#","p":"x"}"#));
        assert!(unwrap(r#"{"other":"eyJhIjoxfQ=="}"#, "bytes").is_none());
    }

    #[test]
    fn checksums_lengths_and_the_round_trip() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926, "the standard check value");
        let m = event("contentBlockStart", r#"{"contentBlockIndex":0,"start":{"toolUse":{"name":"a_b","toolUseId":"t"}}}"#);
        let (h, p) = read(&m).unwrap_or_default();
        assert_eq!(write(h, p), m, "read and written again: the same bytes");
        assert_eq!(end(&m), Some(m.len()));
        assert_eq!(end(m.get(..m.len() - 1).unwrap_or_default()), None, "not all there");
        // the controls: a flipped payload byte, a flipped prelude, a length no message has
        let mut bad = m.clone();
        if let Some(b) = bad.get_mut(40) {
            *b ^= 1;
        }
        assert!(read(&bad).is_none());
        let mut pre = m.clone();
        if let Some(b) = pre.get_mut(9) {
            *b ^= 1;
        }
        assert!(read(&pre).is_none());
        assert_eq!(end(&[0, 0, 0, 3, 9, 9]), Some(6));
    }
}
