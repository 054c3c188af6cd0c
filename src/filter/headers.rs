//! What toolfit reads from HTTP headers, for the request and the response path alike.

/// `application/json`, `application/vnd.x+json`, with or without parameters.
pub fn is_json(content_type: &str) -> bool {
    let mime = content_type.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    mime == "application/json" || (mime.starts_with("application/") && mime.ends_with("+json"))
}
