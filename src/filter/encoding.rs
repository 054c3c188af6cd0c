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

use miniz_oxide::inflate::stream::{inflate, InflateState};
use miniz_oxide::{DataFormat, MZError, MZFlush, MZStatus};

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

/// Decoded bytes are made this many at a time, and the limit checked after each: a body that
/// inflates to gigabytes costs at most the limit and one step.
const STEP: usize = 32 << 10;

/// The longest gzip member header read (its optional name, comment and extra field included).
const MAX_HEADER: usize = 64 << 10;

/// Where the decoder is in the body.
enum Stage {
    /// `deflate` before its first two bytes came: zlib or raw is decided by them.
    Undecided,
    /// gzip: a member's header (RFC 1952).
    Header,
    /// Inflating a deflate stream.
    Body,
    /// gzip: the member's CRC-32 and size.
    Trailer,
    /// A zlib or raw stream has ended: nothing may follow.
    Done,
}

/// Decodes one response body as its chunks come: miniz_oxide's inflate with gzip's framing read
/// here (several members, each checked against its CRC-32 and size, as `MultiGzDecoder` did; the
/// framing is a few dozen lines, flate2 and its 16 KB CRC table were a sixth of the wasm's data).
pub struct Decoder {
    gzip: bool,
    state: Box<InflateState>,
    stage: Stage,
    /// Compressed bytes not yet used (a header or trailer cut by a chunk's end, mostly).
    input: Vec<u8>,
    /// The current gzip member's CRC-32 and size so far.
    crc: u32,
    size: u32,
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

/// The length of the gzip member header at the start of `b`: `Ok(None)` while it is incomplete.
fn gzip_header(b: &[u8]) -> Result<Option<usize>, DecodeError> {
    const FHCRC: u8 = 2;
    const FEXTRA: u8 = 4;
    const FNAME: u8 = 8;
    const FCOMMENT: u8 = 16;
    let magic = [0x1f, 0x8b, 8];
    if b.iter().zip(magic).any(|(x, m)| *x != m) {
        return Err(DecodeError::Corrupt);
    }
    let Some(&flags) = b.get(3) else { return Ok(None) };
    if flags & 0xe0 != 0 {
        return Err(DecodeError::Corrupt); // reserved flags
    }
    let mut at = 10;
    if flags & FEXTRA != 0 {
        let Some(&[lo, hi]) = b.get(at..at + 2) else { return Ok(None) };
        at += 2 + usize::from(u16::from_le_bytes([lo, hi]));
    }
    for flag in [FNAME, FCOMMENT] {
        if flags & flag != 0 {
            // a zero-terminated string
            let Some(zero) = b.get(at..).and_then(|r| r.iter().position(|c| *c == 0)) else { return Ok(None) };
            at += zero + 1;
        }
    }
    if flags & FHCRC != 0 {
        at += 2;
    }
    Ok((b.len() >= at).then_some(at))
}

/// CRC-32 (IEEE, as gzip's trailer has it), a byte at a time from a table made at compile time.
fn crc32(crc: u32, bytes: &[u8]) -> u32 {
    // evaluated by the compiler: an index out of range fails the build, never a request
    #[allow(clippy::indexing_slicing)]
    const TABLE: [u32; 256] = {
        let mut t = [0u32; 256];
        let mut i = 0;
        while i < 256 {
            let mut c = i as u32;
            let mut k = 0;
            while k < 8 {
                c = if c & 1 != 0 { 0xedb8_8320 ^ (c >> 1) } else { c >> 1 };
                k += 1;
            }
            t[i] = c;
            i += 1;
        }
        t
    };
    !bytes.iter().fold(!crc, |c, b| TABLE.get(usize::from((c as u8) ^ b)).copied().unwrap_or(0) ^ (c >> 8))
}

impl Decoder {
    /// A decoder for a readable coding (`None` for identity and unreadable ones), giving up when
    /// one chunk decodes to more than `limit` bytes.
    pub fn new(coding: Coding, limit: usize) -> Option<Decoder> {
        let (gzip, stage) = match coding {
            Coding::Gzip => (true, Stage::Header),
            Coding::Deflate => (false, Stage::Undecided),
            Coding::Identity | Coding::Other => return None,
        };
        let state = InflateState::new_boxed(DataFormat::Raw);
        Some(Decoder { gzip, state, stage, input: Vec::new(), crc: 0, size: 0, made: 0, limit, failed: false })
    }

    /// The body ended: what is still held, decoded (a truncated body is an error).
    pub fn end(&mut self) -> Result<Vec<u8>, DecodeError> {
        self.feed(&[], true) // end: nothing more comes
    }

    /// Decodes the next chunk; `end`: the body is complete (a truncated body is an error then).
    pub fn feed(&mut self, chunk: &[u8], end: bool) -> Result<Vec<u8>, DecodeError> {
        if self.failed {
            return Err(DecodeError::Corrupt);
        }
        self.made = 0;
        let mut out = Vec::new();
        self.input.extend_from_slice(chunk);
        let r = self.run(&mut out).and_then(|used| {
            self.input.drain(..used);
            if !end {
                return Ok(());
            }
            // at its end a body must have ended where its coding can: after a whole gzip member, or
            // after the deflate stream's last block
            match self.stage {
                Stage::Header | Stage::Done if self.input.is_empty() => Ok(()),
                _ => Err(DecodeError::Corrupt),
            }
        });
        if r.is_err() {
            self.failed = true;
        }
        r.map(|()| out)
    }

    /// Reads `self.input` as far as it goes; returns how many of its bytes were used.
    fn run(&mut self, out: &mut Vec<u8>) -> Result<usize, DecodeError> {
        let mut at = 0;
        let mut step = vec![0u8; STEP];
        loop {
            let rest = self.input.get(at..).unwrap_or_default();
            match self.stage {
                Stage::Undecided => {
                    let Some(&[a, b]) = rest.get(..2) else { return Ok(at) };
                    // RFC 1950: CM = 8 in the low nibble, and the first two bytes a multiple of 31
                    let zlib = a & 0x0f == 8 && (u16::from(a) * 256 + u16::from(b)) % 31 == 0;
                    self.state.reset(if zlib { DataFormat::Zlib } else { DataFormat::Raw });
                    self.stage = Stage::Body;
                }
                // (no input yet: `gzip_header` answers "not complete")
                Stage::Header => match gzip_header(rest)? {
                    Some(n) => {
                        at += n;
                        self.state.reset(DataFormat::Raw);
                        (self.crc, self.size) = (0, 0);
                        self.stage = Stage::Body;
                    }
                    None if rest.len() > MAX_HEADER => return Err(DecodeError::Corrupt),
                    None => return Ok(at),
                },
                Stage::Body => {
                    let r = inflate(&mut self.state, rest, &mut step, MZFlush::None);
                    at += r.bytes_consumed;
                    let made = step.get(..r.bytes_written).unwrap_or_default();
                    if self.gzip {
                        self.crc = crc32(self.crc, made);
                        self.size = self.size.wrapping_add(made.len() as u32);
                    }
                    self.made = self.made.saturating_add(made.len());
                    if self.made > self.limit {
                        return Err(DecodeError::TooLarge);
                    }
                    out.extend_from_slice(made);
                    match r.status {
                        Ok(MZStatus::StreamEnd) => self.stage = if self.gzip { Stage::Trailer } else { Stage::Done },
                        // no progress: more input is needed
                        Ok(_) | Err(MZError::Buf) if r.bytes_consumed == 0 && r.bytes_written == 0 => return Ok(at),
                        Ok(_) | Err(MZError::Buf) => {}
                        Err(_) => return Err(DecodeError::Corrupt),
                    }
                }
                Stage::Trailer => {
                    let Some(t) = rest.get(..8) else { return Ok(at) };
                    let word = |i: usize| t.get(i..i + 4).and_then(|w| w.try_into().ok()).map(u32::from_le_bytes);
                    if word(0) != Some(self.crc) || word(4) != Some(self.size) {
                        return Err(DecodeError::Corrupt);
                    }
                    at += 8;
                    // another member may follow (RFC 1952 2.2)
                    self.stage = Stage::Header;
                }
                Stage::Done if rest.is_empty() => return Ok(at),
                Stage::Done => return Err(DecodeError::Corrupt),
            }
        }
    }
}

/// A whole body, decoded (`limit`: the most decoded bytes accepted).
pub fn decode_all(coding: Coding, body: &[u8], limit: usize) -> Result<Vec<u8>, DecodeError> {
    match Decoder::new(coding, limit) {
        Some(mut d) => d.feed(body, true), // the body is complete
        None if body.len() > limit => Err(DecodeError::TooLarge),
        None => Ok(body.to_vec()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::write::{DeflateEncoder, GzEncoder, ZlibEncoder};
    use flate2::Compression;
    use std::io::Write;

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

    #[test]
    fn gzip_headers_with_every_optional_field_decode_at_every_cut() {
        let text = b"{\"id\":\"x\",\"choices\":[]}".repeat(30);
        let mut e = flate2::GzBuilder::new().filename("reply.json").comment("a comment").extra(vec![7; 40]).write(Vec::new(), Compression::best());
        e.write_all(&text).unwrap();
        let z = e.finish().unwrap();
        for cut in 0..=z.len() {
            let mut d = Decoder::new(Coding::Gzip, 1 << 20).unwrap();
            let mut out = d.feed(&z[..cut], false).unwrap();
            out.extend(d.feed(&z[cut..], true).unwrap());
            assert_eq!(out, text, "cut at {cut}");
        }
    }

    #[test]
    fn a_wrong_checksum_or_bytes_after_the_stream_are_corrupt() {
        let text = b"{\"a\":1}";
        let mut z = gz(text);
        let n = z.len();
        z[n - 8] ^= 1; // the CRC-32
        assert_eq!(decode_all(Coding::Gzip, &z, 1 << 20), Err(DecodeError::Corrupt));
        let mut z = gz(text);
        z[n - 1] ^= 1; // the size
        assert_eq!(decode_all(Coding::Gzip, &z, 1 << 20), Err(DecodeError::Corrupt));
        let mut zl = ZlibEncoder::new(Vec::new(), Compression::default());
        zl.write_all(text).unwrap();
        let mut zl = zl.finish().unwrap();
        assert_eq!(decode_all(Coding::Deflate, &zl, 1 << 20).as_deref(), Ok(&text[..]));
        let m = zl.len();
        zl[m - 1] ^= 1; // zlib's Adler-32
        assert_eq!(decode_all(Coding::Deflate, &zl, 1 << 20), Err(DecodeError::Corrupt));
        zl[m - 1] ^= 1;
        zl.extend_from_slice(b"junk");
        assert_eq!(decode_all(Coding::Deflate, &zl, 1 << 20), Err(DecodeError::Corrupt));
        assert_eq!(decode_all(Coding::Gzip, &[], 1 << 20), Ok(Vec::new()), "an empty body is empty");
    }

    #[test]
    fn crc32_is_ieee() {
        assert_eq!(crc32(0, b"123456789"), 0xcbf4_3926);
        assert_eq!(crc32(crc32(0, b"12345"), b"6789"), 0xcbf4_3926, "it continues across pieces");
    }

    #[test]
    fn gzip_headers_with_every_flag_and_their_bounds() {
        let body = b"{\"a\":1}";
        let plain = gz(body);
        // FHCRC: two bytes of header CRC after the header (not checked, skipped)
        let mut hcrc = plain.clone();
        if let Some(f) = hcrc.get_mut(3) {
            *f |= 2;
        }
        hcrc.splice(10..10, [0xab, 0xcd]);
        assert_eq!(decode_all(Coding::Gzip, &hcrc, 1 << 20).ok().as_deref(), Some(&body[..]));
        // a name that never ends: waited for up to MAX_HEADER bytes, then corrupt
        let mut named = plain.get(..10).unwrap_or_default().to_vec();
        if let Some(f) = named.get_mut(3) {
            *f |= 8;
        }
        named.extend(std::iter::repeat_n(b'n', MAX_HEADER - 10));
        let mut d = Decoder::new(Coding::Gzip, 1 << 20).unwrap();
        assert_eq!(d.feed(&named, false), Ok(Vec::new()), "exactly MAX_HEADER bytes: still waiting");
        assert_eq!(d.feed(b"n", false), Err(DecodeError::Corrupt), "one past: corrupt");
        // a second member's header cut short at the body's end
        let mut cut = plain.clone();
        cut.push(0x1f);
        assert_eq!(decode_all(Coding::Gzip, &cut, 1 << 20), Err(DecodeError::Corrupt));
    }

    #[test]
    fn deflate_is_told_from_zlib_by_both_rules_and_ends_where_it_ends() {
        // raw deflate whose first byte looks like zlib's (CM = 8) but whose first two bytes are no
        // multiple of 31: a stored block of one byte, then a final empty stored block
        let raw = [0x08, 1, 0, 0xfe, 0xff, b'x', 0x01, 0, 0, 0xff, 0xff];
        assert_ne!((u16::from(raw[0]) * 256 + u16::from(raw[1])) % 31, 0);
        assert_eq!(decode_all(Coding::Deflate, &raw, 1 << 20).ok().as_deref(), Some(&b"x"[..]));
        // bytes after the stream's last block are corrupt as soon as they come, not only at the end
        let mut e = DeflateEncoder::new(Vec::new(), Compression::default());
        e.write_all(b"abc").unwrap();
        let mut trailing = e.finish().unwrap();
        trailing.extend_from_slice(b"junk");
        let mut d = Decoder::new(Coding::Deflate, 1 << 20).unwrap();
        assert_eq!(d.feed(&trailing, false), Err(DecodeError::Corrupt));
    }

    #[test]
    fn the_decoded_size_limit_is_inclusive() {
        let body = vec![b'a'; 1000];
        let z = gz(&body);
        assert_eq!(decode_all(Coding::Gzip, &z, 1000).map(|v| v.len()), Ok(1000), "exactly the limit");
        assert_eq!(decode_all(Coding::Gzip, &z, 999), Err(DecodeError::TooLarge));
        assert_eq!(decode_all(Coding::Gzip, &z, 10), Err(DecodeError::TooLarge), "far past it");
    }

    #[test]
    fn a_body_decodes_the_same_in_any_pieces_and_past_one_step() {
        // a MiB of one byte: few input bytes fill many output steps (input not consumed while output is)
        let body = vec![b'a'; 1 << 20];
        let z = gz(&body);
        assert_eq!(decode_all(Coding::Gzip, &z, 2 << 20).map(|v| v.len()), Ok(1 << 20));
        // in pieces of 7 bytes: each piece decoded as far as it goes, nothing lost between them
        let text: Vec<u8> = (0..20_000u32).flat_map(|i| format!("{i},").into_bytes()).collect();
        let z = gz(&text);
        let mut d = Decoder::new(Coding::Gzip, 1 << 20).unwrap();
        let mut out = Vec::new();
        let pieces: Vec<&[u8]> = z.chunks(7).collect();
        for (n, piece) in pieces.iter().enumerate() {
            out.extend(d.feed(piece, n + 1 == pieces.len()).unwrap());
        }
        assert_eq!(out, text);
        // a body that is not compressed is held to the same limit
        assert_eq!(decode_all(Coding::Identity, &text, text.len()).map(|v| v.len()), Ok(text.len()));
        assert_eq!(decode_all(Coding::Identity, &text, text.len() - 1), Err(DecodeError::TooLarge));
    }
}
