//! What toolfit reads from HTTP headers, for the request and the response path alike.

/// A header value's bytes as the filter reads them. HTTP allows any byte but NUL, CR and LF in a value
/// (obs-text, 0x80-0xFF, among them) and Envoy passes such values on: one that is not UTF-8 reads as
/// its lossy text, so a content type or coding with a stray byte matches nothing toolfit acts on, and
/// no client can make a host's string conversion fail (proxy-wasm's `get_map_value` unwraps it and
/// traps the VM, which takes toolfit off every later request of that worker).
pub fn text(raw: Vec<u8>) -> String {
    String::from_utf8(raw).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// `application/json`, `application/vnd.x+json`, with or without parameters.
pub fn is_json(content_type: &str) -> bool {
    let mime = content_type.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    mime == "application/json" || (mime.starts_with("application/") && mime.ends_with("+json"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_that_is_not_utf8_reads_lossily() {
        assert_eq!(text(b"gzip, br".to_vec()), "gzip, br");
        assert_eq!(text(b"application/json\xff".to_vec()), "application/json\u{fffd}");
        assert!(!is_json(&text(b"application/json\xff".to_vec())), "a stray byte in the type matches nothing");
        assert!(is_json(&text(b"application/json; x=\xfe".to_vec())), "one in a parameter leaves the type");
    }
}
