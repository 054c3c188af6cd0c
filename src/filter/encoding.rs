//! Content codings on the response path, without any host.
//!
//! SDKs ask for compressed answers (`Accept-Encoding: gzip, deflate`, plus `br` and `zstd` when
//! those Python packages are installed) and hosted APIs compress when asked. A reply toolfit must
//! repair (a tool name it mapped, a null OpenAI strict made the model write) cannot be repaired
//! unread, so toolfit does two things:
//!
//! - on the request, [`narrow_accept`] keeps only the codings it can read (`gzip`, `deflate`,
//!   `identity`): the link to the upstream stays compressed, but never in a coding toolfit would
//!   have to forward unread;
//! - on the response, a [`Decoder`] reads `gzip` and `deflate` as the chunks come. A reply that
//!   only needs reading (the validity counters) goes on compressed, byte for byte; one that may
//!   change goes on decoded, without `Content-Encoding`, and Envoy's compressor (after toolfit on
//!   the way out) compresses it again for clients that asked.
//!
//! Decoding is bounded: input is fed in small pieces and a chunk that decodes to more than a limit
//! stops the decoder, so a small body that inflates to gigabytes costs at most the limit.

use flate2::write::{DeflateDecoder, MultiGzDecoder, ZlibDecoder};
use std::io::Write;

/// A response's `Content-Encoding`, as far as toolfit can read it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Coding {
    Identity,
    Gzip,
    /// HTTP's `deflate`: zlib-wrapped as the RFC says, or raw deflate as some servers send it.
    Deflate,
    /// Anything else (`br`, `zstd`, several codings stacked): not read.
    Other,
}

impl Coding {
    pub fn of(content_encoding: Option<&str>) -> Coding {
        let e = content_encoding.unwrap_or("").trim().to_ascii_lowercase();
        match e.as_str() {
            "" | "identity" => Coding::Identity,
            "gzip" | "x-gzip" => Coding::Gzip,
            "deflate" => Coding::Deflate,
            _ => Coding::Other,
        }
    }

    /// Whether toolfit can decode it.
    pub fn readable(self) -> bool {
        self != Coding::Other
    }
}

/// Whether a coding (a token of `Accept-Encoding`) is one toolfit reads.
fn reads(coding: &str) -> bool {
    matches!(coding.to_ascii_lowercase().as_str(), "gzip" | "x-gzip" | "deflate" | "identity")
}

/// The `Accept-Encoding` to send upstream in place of the client's, when the client's allows a
/// coding toolfit cannot read (`None`: leave the header as it is). `*` becomes `gzip` and `deflate`
/// at its weight; when nothing readable is left the answer is `identity`.
pub fn narrow_accept(value: Option<&str>) -> Option<String> {
    let value = value?;
    let mut kept: Vec<String> = Vec::new();
    let mut changed = false;
    for item in value.split(',') {
        let item = item.trim();
        if item.is_empty() {
            continue;
        }
        let (coding, params) = match item.split_once(';') {
            Some((c, p)) => (c.trim(), Some(p.trim())),
            None => (item, None),
        };
        let with = |c: &str| params.map_or_else(|| c.to_string(), |p| format!("{c};{p}"));
        if reads(coding) {
            kept.push(item.to_string());
        } else if coding == "*" {
            changed = true;
            kept.push(with("gzip"));
            kept.push(with("deflate"));
        } else {
            changed = true;
        }
    }
    if !changed {
        return None;
    }
    Some(if kept.is_empty() { "identity".to_string() } else { kept.join(", ") })
}

/// Input is fed to the decoder this many bytes at a time: deflate expands at most about 1032:1,
/// so one piece makes at most about 4 MiB before the limit is checked.
const PIECE: usize = 4096;

enum Inner {
    Gzip(MultiGzDecoder<Vec<u8>>),
    Zlib(ZlibDecoder<Vec<u8>>),
    Raw(DeflateDecoder<Vec<u8>>),
    /// `deflate` before its first two bytes came: zlib or raw is decided by them.
    Undecided(Vec<u8>),
}

/// Decodes one response body as its chunks come.
pub struct Decoder {
    inner: Inner,
    /// Decoded bytes of the current `feed`.
    made: usize,
    /// The most one `feed` may make.
    limit: usize,
    failed: bool,
}

/// Why a body could not be decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// Not valid data of its coding.
    Corrupt,
    /// It decodes to more than the limit.
    TooLarge,
}

impl Decoder {
    /// A decoder for a readable coding (`None` for identity and unreadable ones), giving up when
    /// one chunk decodes to more than `limit` bytes.
    pub fn new(coding: Coding, limit: usize) -> Option<Decoder> {
        let inner = match coding {
            Coding::Gzip => Inner::Gzip(MultiGzDecoder::new(Vec::new())),
            Coding::Deflate => Inner::Undecided(Vec::new()),
            Coding::Identity | Coding::Other => return None,
        };
        Some(Decoder { inner, made: 0, limit, failed: false })
    }

    /// Decodes the next chunk; `end`: the body is complete (a truncated body is an error then).
    pub fn feed(&mut self, chunk: &[u8], end: bool) -> Result<Vec<u8>, DecodeError> {
        if self.failed {
            return Err(DecodeError::Corrupt);
        }
        self.made = 0;
        let r = self.feed_inner(chunk, end);
        if r.is_err() {
            self.failed = true;
        }
        r
    }

    fn feed_inner(&mut self, chunk: &[u8], end: bool) -> Result<Vec<u8>, DecodeError> {
        let mut out = Vec::new();
        if let Inner::Undecided(head) = &mut self.inner {
            head.extend_from_slice(chunk);
            if head.len() < 2 && !end {
                return Ok(out);
            }
            let head = std::mem::take(head);
            // RFC 1950: CM = 8 in the low nibble, and the first two bytes a multiple of 31
            let zlib = match head.as_slice() {
                [a, b, ..] => a & 0x0f == 8 && (u16::from(*a) * 256 + u16::from(*b)) % 31 == 0,
                _ => false,
            };
            self.inner = if zlib { Inner::Zlib(ZlibDecoder::new(Vec::new())) } else { Inner::Raw(DeflateDecoder::new(Vec::new())) };
            return self.pieces(&head, end, &mut out).map(|()| out);
        }
        self.pieces(chunk, end, &mut out).map(|()| out)
    }

    fn pieces(&mut self, chunk: &[u8], end: bool, out: &mut Vec<u8>) -> Result<(), DecodeError> {
        for piece in chunk.chunks(PIECE) {
            let made = match &mut self.inner {
                Inner::Gzip(d) => d.write_all(piece).map(|()| std::mem::take(d.get_mut())),
                Inner::Zlib(d) => d.write_all(piece).map(|()| std::mem::take(d.get_mut())),
                Inner::Raw(d) => d.write_all(piece).map(|()| std::mem::take(d.get_mut())),
                Inner::Undecided(_) => Ok(Vec::new()),
            }
            .map_err(|_| DecodeError::Corrupt)?;
            self.take(made, out)?;
        }
        if end {
            let made = match &mut self.inner {
                Inner::Gzip(d) => d.try_finish().map(|()| std::mem::take(d.get_mut())),
                Inner::Zlib(d) => d.try_finish().map(|()| std::mem::take(d.get_mut())),
                Inner::Raw(d) => d.try_finish().map(|()| std::mem::take(d.get_mut())),
                Inner::Undecided(_) => Ok(Vec::new()),
            }
            .map_err(|_| DecodeError::Corrupt)?;
            self.take(made, out)?;
        }
        Ok(())
    }

    fn take(&mut self, made: Vec<u8>, out: &mut Vec<u8>) -> Result<(), DecodeError> {
        self.made = self.made.saturating_add(made.len());
        if self.made > self.limit {
            return Err(DecodeError::TooLarge);
        }
        out.extend_from_slice(&made);
        Ok(())
    }
}

/// A whole body, decoded (`limit`: the most decoded bytes accepted).
pub fn decode_all(coding: Coding, body: &[u8], limit: usize) -> Result<Vec<u8>, DecodeError> {
    match Decoder::new(coding, limit) {
        Some(mut d) => d.feed(body, true),
        None if body.len() > limit => Err(DecodeError::TooLarge),
        None => Ok(body.to_vec()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::write::{DeflateEncoder, GzEncoder, ZlibEncoder};
    use flate2::Compression;

    fn gz(b: &[u8]) -> Vec<u8> {
        let mut e = GzEncoder::new(Vec::new(), Compression::default());
        e.write_all(b).unwrap();
        e.finish().unwrap()
    }

    #[test]
    fn codings_are_read_from_the_header() {
        assert_eq!(Coding::of(None), Coding::Identity);
        assert_eq!(Coding::of(Some(" GZIP ")), Coding::Gzip);
        assert_eq!(Coding::of(Some("x-gzip")), Coding::Gzip);
        assert_eq!(Coding::of(Some("deflate")), Coding::Deflate);
        assert_eq!(Coding::of(Some("br")), Coding::Other);
        assert_eq!(Coding::of(Some("gzip, br")), Coding::Other, "stacked codings are not read");
    }

    #[test]
    fn accept_encoding_keeps_only_what_toolfit_reads() {
        assert_eq!(narrow_accept(None), None);
        assert_eq!(narrow_accept(Some("gzip, deflate")), None, "nothing to change: the header stays");
        assert_eq!(narrow_accept(Some("gzip, deflate, br, zstd")).as_deref(), Some("gzip, deflate"));
        assert_eq!(narrow_accept(Some("br;q=1.0, gzip;q=0.8")).as_deref(), Some("gzip;q=0.8"));
        assert_eq!(narrow_accept(Some("br")).as_deref(), Some("identity"));
        assert_eq!(narrow_accept(Some("*;q=0.5")).as_deref(), Some("gzip;q=0.5, deflate;q=0.5"));
    }

    #[test]
    fn gzip_decodes_across_any_cut_and_several_members() {
        let text = b"data: {\"a\":1}\n\n".repeat(50);
        let mut z = gz(&text);
        z.extend(gz(b"tail"));
        for cut in [1, 2, 7, 10, 11, z.len() / 2, z.len() - 1] {
            let mut d = Decoder::new(Coding::Gzip, 1 << 20).unwrap();
            let mut out = d.feed(&z[..cut], false).unwrap();
            out.extend(d.feed(&z[cut..], true).unwrap());
            let mut want = text.clone();
            want.extend_from_slice(b"tail");
            assert_eq!(out, want, "cut at {cut}");
        }
    }

    #[test]
    fn deflate_is_read_zlib_wrapped_or_raw() {
        let text = b"{\"choices\":[]}".repeat(20);
        let mut z = ZlibEncoder::new(Vec::new(), Compression::default());
        z.write_all(&text).unwrap();
        let mut r = DeflateEncoder::new(Vec::new(), Compression::default());
        r.write_all(&text).unwrap();
        for body in [z.finish().unwrap(), r.finish().unwrap()] {
            let mut d = Decoder::new(Coding::Deflate, 1 << 20).unwrap();
            let mut out = d.feed(&body[..1], false).unwrap();
            out.extend(d.feed(&body[1..], true).unwrap());
            assert_eq!(out, text);
        }
    }

    #[test]
    fn bombs_and_garbage_stop_with_an_error() {
        let bomb = gz(&vec![b'a'; 8 << 20]);
        assert!(bomb.len() < 64 << 10);
        assert_eq!(decode_all(Coding::Gzip, &bomb, 1 << 20), Err(DecodeError::TooLarge));
        assert_eq!(decode_all(Coding::Gzip, b"not gzip at all", 1 << 20), Err(DecodeError::Corrupt));
        let z = gz(b"{\"a\":1}");
        assert_eq!(decode_all(Coding::Gzip, &z[..z.len() - 3], 1 << 20), Err(DecodeError::Corrupt), "a cut body is an error at its end");
        let mut d = Decoder::new(Coding::Gzip, 1 << 20).unwrap();
        assert!(d.feed(b"garbage!!!!!!", false).is_err());
        assert!(d.feed(&z, true).is_err(), "a failed decoder stays failed");
    }
}
