//! What happens to a response, from its headers to its end, for any host: plain values and a small
//! [`ResponseHost`] in, [`Next`] out. A host shim (proxy-wasm's, an external processor's) reads the
//! status and headers, hands over each body chunk through the trait, and does what comes back; every
//! decision (what to hold, when a response counts as unrepaired, the 502 and its headers under
//! `on_invalid_tool_call: reject`) is made here.
//!
//! The host's rules this relies on: a chunk's bytes may be replaced before they go on (and replaced
//! by nothing, which is how toolfit holds a body: it keeps the bytes itself, so a large response never
//! meets the host's own buffer limit); response headers may change until the first body bytes go on,
//! and a paused response keeps them waiting.

use super::reply::{decode_limit, Reply};
use super::stream::{Events, Stream};
use super::tally::Tally;
use crate::filter::config::OnInvalid;
use crate::filter::encoding::{Coding, Decoder};
use crate::filter::headers::is_json;
use crate::filter::host::{Next, ResponseHost};
use crate::filter::log::{Line, LogLimiter};
use crate::filter::stats::{Metrics, Series, Stat};

/// How to read a response, from its headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Begin {
    /// Leave it alone: not a success, no body, or not a format that carries calls.
    Skip,
    /// In a coding toolfit cannot read (`br`, `zstd`, stacked codings; the request asked only for
    /// readable ones, so an upstream sent it unasked): forwarded as it is (`responses_unrepaired`
    /// when a repair was due).
    Encoded,
    /// A JSON body. `hold`: toolfit keeps it until the end (it may change); else it is only read.
    /// `wait`: the headers wait for it too (`on_invalid_tool_call: reject` may answer 502).
    /// `coding`: how the upstream compressed it (decoded as it comes).
    Json { hold: bool, wait: bool, coding: Coding },
    /// SSE or NDJSON, read (and repaired, if `reply.repairs()`) event by event.
    Stream(Events, Coding),
}

impl Begin {
    /// Whether the body may change length, so `Content-Length` must go.
    pub fn changes(self, reply: &Reply) -> bool {
        match self {
            Begin::Json { hold, .. } => hold,
            Begin::Stream(..) => reply.repairs(),
            Begin::Skip | Begin::Encoded => false,
        }
    }

    /// Whether the body goes on decoded, so `Content-Encoding` must go too. A body that is only read
    /// goes on compressed, byte for byte; one that may change goes on as identity (Envoy's
    /// compressor, placed after toolfit on the response path, compresses it again for the client).
    pub fn decodes(self, reply: &Reply) -> bool {
        let coding = match self {
            Begin::Json { coding, .. } | Begin::Stream(_, coding) => coding,
            Begin::Skip | Begin::Encoded => return false,
        };
        coding != Coding::Identity && self.changes(reply)
    }
}

/// How to read the response to `reply`'s request, from its status and headers.
pub fn begin(reply: &Reply, status: u16, end_of_stream: bool, content_type: Option<&str>, content_encoding: Option<&str>) -> Begin {
    if end_of_stream || !(200..300).contains(&status) {
        return Begin::Skip;
    }
    let ct = content_type.unwrap_or("").to_ascii_lowercase();
    let kind = if ct.starts_with("text/event-stream") {
        Begin::Stream(Events::Sse, Coding::Identity)
    } else if ct.contains("ndjson") {
        Begin::Stream(Events::Lines, Coding::Identity)
    } else if ct.starts_with("application/vnd.amazon.eventstream") {
        Begin::Stream(Events::Frames, Coding::Identity)
    } else if is_json(&ct) {
        let reject = reply.on_invalid == OnInvalid::Reject;
        Begin::Json { hold: reply.repairs() || reject, wait: reject, coding: Coding::Identity }
    } else {
        return Begin::Skip;
    };
    let coding = Coding::of(content_encoding);
    match kind {
        _ if !coding.readable() => Begin::Encoded,
        Begin::Json { hold, wait, .. } => Begin::Json { hold, wait, coding },
        Begin::Stream(f, _) => Begin::Stream(f, coding),
        other => other,
    }
}

/// Where a response's counters and log lines go: the host's metrics, the plugin's rate limit.
pub struct Sink<'a> {
    pub metrics: &'a mut dyn Metrics,
    pub logs: &'a mut LogLimiter,
    /// Now, in seconds (for the rate limit).
    pub now_s: u64,
    pub lines_per_second: u32,
    /// Writes an admitted warning.
    pub warn: &'a mut dyn FnMut(&str),
}

impl Sink<'_> {
    /// Counts what a response's repair did (the route's and each tool's counters) and says it in a
    /// rate-limited line.
    pub fn count(&mut self, reply: &Reply, tally: &Tally) {
        self.metrics.prepare(&reply.route, reply.profile);
        if let Some(Line { text, .. }) = tally.count(&reply.route, reply.profile, self.metrics) {
            if let Some(text) = self.logs.admit(&reply.route, self.now_s, self.lines_per_second, text) {
                (self.warn)(&text);
            }
        }
    }

    fn unrepaired(&mut self, reply: &Reply) {
        self.count(reply, &Tally { unrepaired: 1, ..Tally::default() });
    }

    /// A host call failed: counted as toolfit's own error on the request's route.
    pub fn internal_error(&mut self, reply: &Reply) {
        self.metrics.add(&Series::of(&reply.route, reply.profile, Stat::InternalErrors.name()), 1);
    }
}

/// One response being read.
// one per response in flight, moved only between callbacks: boxing `Json` would allocate on every
// response for nothing
#[allow(clippy::large_enum_variant)]
pub enum Flow {
    /// Not at all: it streams on untouched.
    Off,
    /// A JSON body. `hold`: toolfit keeps it (in `copy`, out of the host's buffer) until the end, as it
    /// may change; else chunks go on at once and `copy` keeps them for the check at the end.
    /// `decoder`: the upstream compressed it; `copy` holds it decoded.
    Json { reply: Reply, hold: bool, copy: Vec<u8>, decoder: Option<Decoder> },
    /// A compressed body whose headers already said identity, held past `max_body_bytes`: the rest
    /// goes on decoded, unread.
    Decoding(Decoder),
    /// SSE or NDJSON: each chunk goes on as soon as the events in it may.
    Stream(Box<Stream>),
}

impl Flow {
    /// The response's headers arrived (status and the two headers toolfit reads): how its body will be
    /// read, with the headers it must lose changed on `host` already.
    pub fn start(
        reply: Reply,
        status: u16,
        end_of_stream: bool,
        content_type: Option<&str>,
        content_encoding: Option<&str>,
        host: &mut dyn ResponseHost,
        sink: &mut Sink,
    ) -> (Flow, Next) {
        let how = begin(&reply, status, end_of_stream, content_type, content_encoding);
        if how == Begin::Encoded && reply.repairs() {
            sink.unrepaired(&reply);
        }
        // a body that may change length loses its Content-Length (the client reads it chunked)
        if how.changes(&reply) && !host.remove_header("content-length") {
            sink.internal_error(&reply);
            return (Flow::Off, Next::Continue);
        }
        // one that goes on decoded loses its Content-Encoding; if that fails it goes on as it came
        if how.decodes(&reply) && !host.remove_header("content-encoding") {
            sink.internal_error(&reply);
            sink.unrepaired(&reply);
            return (Flow::Off, Next::Continue);
        }
        match how {
            Begin::Skip | Begin::Encoded => (Flow::Off, Next::Continue),
            Begin::Stream(events, coding) => (Flow::Stream(Box::new(Stream::new(reply, events, coding))), Next::Continue),
            Begin::Json { hold, wait, coding } => {
                let decoder = Decoder::new(coding, decode_limit(&reply));
                // reject answers with another status: the headers wait for the body (framing: exact,
                // checked at configuration)
                (Flow::Json { reply, hold, copy: Vec::new(), decoder }, if wait { Next::Pause } else { Next::Continue })
            }
        }
    }

    /// Bytes of the body toolfit keeps so far (what the next chunk's work grows with: a held JSON body
    /// is repaired whole at its end).
    pub fn kept(&self) -> usize {
        match self {
            Flow::Json { copy, .. } => copy.len(),
            Flow::Stream(stream) => stream.kept(),
            Flow::Off | Flow::Decoding(_) => 0,
        }
    }

    /// From now on hold no more than `bytes` (the memory of the requests in flight is short): past
    /// them what is held goes on unrepaired, as past `max_body_bytes`. Whether this lowered the bound.
    pub fn cap(&mut self, bytes: usize) -> bool {
        let reply = match self {
            Flow::Json { reply, .. } => reply,
            Flow::Stream(stream) => stream.reply_mut(),
            Flow::Off | Flow::Decoding(_) => return false,
        };
        let lower = bytes < reply.max_bytes;
        reply.max_bytes = reply.max_bytes.min(bytes);
        lower
    }

    /// A body chunk of `size` bytes; `end`: the body ends with it.
    pub fn body(&mut self, host: &mut dyn ResponseHost, sink: &mut Sink, size: usize, end: bool) -> Next {
        match self {
            Flow::Off => Next::Continue,
            Flow::Stream(stream) => {
                let chunk = host.chunk(size).unwrap_or_default();
                let out = stream.feed(&chunk, end);
                if out != chunk && !host.set_chunk(size, &out) {
                    stream.tally.unrepaired += 1;
                }
                if end {
                    self.done(sink);
                }
                Next::Continue
            }
            Flow::Json { .. } => {
                let Flow::Json { reply, hold, copy, decoder } = std::mem::replace(self, Flow::Off) else { return Next::Continue };
                self.json_body(host, sink, JsonChunk { reply, hold, copy, decoder, size, end })
            }
            Flow::Decoding(decoder) => {
                let chunk = host.chunk(size).unwrap_or_default();
                // a chunk that does not decode goes on as it came (the body is corrupt either way)
                if let Ok(out) = decoder.feed(&chunk, end) {
                    let _ = host.set_chunk(size, &out);
                } else {
                    *self = Flow::Off;
                }
                Next::Continue
            }
        }
    }

    /// The body ended in trailers: what toolfit still holds goes out now, as the end of the body.
    pub fn trailers(&mut self, host: &mut dyn ResponseHost, sink: &mut Sink) -> Next {
        let (held, reply) = match self {
            Flow::Stream(stream) => (stream.end(), stream.reply().clone()),
            Flow::Json { hold: true, .. } => {
                let Flow::Json { reply, copy, decoder, .. } = std::mem::replace(self, Flow::Off) else { return Next::Continue };
                match decoder.map_or(Ok(Vec::new()), |mut d| d.end()) {
                    Ok(rest) => {
                        let body = [copy, rest].concat();
                        answer(host, sink, &reply, &body, 0);
                    }
                    Err(_) => {
                        sink.unrepaired(&reply);
                        if !host.set_chunk(0, &copy) {
                            sink.internal_error(&reply);
                        }
                    }
                }
                return Next::Continue;
            }
            Flow::Decoding(decoder) => {
                let rest = decoder.end().unwrap_or_default();
                if !rest.is_empty() {
                    let _ = host.set_chunk(0, &rest);
                }
                self.done(sink);
                return Next::Continue;
            }
            _ => {
                self.done(sink);
                return Next::Continue;
            }
        };
        if !held.is_empty() && !host.set_chunk(0, &held) {
            sink.internal_error(&reply);
        }
        self.done(sink);
        Next::Continue
    }

    /// The host will not show the rest of the body (an external processor's buffer limit was reached
    /// while the headers waited): nothing was taken from the host yet, so nothing goes back; the
    /// response is counted unrepaired (its check and repair could not happen) and read no further.
    pub fn unseen(&mut self, sink: &mut Sink) {
        if let Some(reply) = self.reply() {
            sink.unrepaired(reply);
        }
        *self = Flow::Off;
    }

    /// The request's reply while the response is read (none once it is off or only decoded).
    pub fn reply(&self) -> Option<&Reply> {
        match self {
            Flow::Json { reply, .. } => Some(reply),
            Flow::Stream(stream) => Some(stream.reply()),
            Flow::Off | Flow::Decoding(_) => None,
        }
    }

    /// Counts what the response's repair did (once), when its body has ended or stopped; a response
    /// cut short still counts the calls it carried.
    pub fn done(&mut self, sink: &mut Sink) {
        match std::mem::replace(self, Flow::Off) {
            Flow::Off | Flow::Decoding(_) => {}
            Flow::Stream(mut stream) => {
                if stream.holding() {
                    stream.tally.unrepaired += 1;
                }
                sink.count(stream.reply(), &stream.tally);
            }
            Flow::Json { reply, copy, .. } => {
                let mut tally = Tally::default();
                let _ = reply.repair_json(&copy, &mut tally);
                sink.count(&reply, &tally);
            }
        }
    }

    /// A chunk of a JSON response; `self` is put back while more is to come. A compressed body is
    /// read decoded: `copy` holds decoded bytes.
    fn json_body(&mut self, host: &mut dyn ResponseHost, sink: &mut Sink, c: JsonChunk) -> Next {
        let JsonChunk { reply, hold, mut copy, mut decoder, size, end } = c;
        let Some(chunk) = host.chunk(size) else {
            // unreadable: this chunk goes on as it is, and what was taken before it in front of it
            if hold && !copy.is_empty() && !host.set_chunk(0, &copy) {
                sink.internal_error(&reply);
            }
            sink.unrepaired(&reply);
            return Next::Continue;
        };
        let text = match &mut decoder {
            Some(d) => d.feed(&chunk, end),
            None => Ok(chunk),
        };
        if !hold {
            // only read: every chunk goes on at once (compressed as it came), a decoded copy is kept
            // for the check (not past max_bytes, nor once it does not decode)
            if let Ok(text) = text.as_deref() {
                if copy.len() + text.len() <= reply.max_bytes {
                    copy.extend_from_slice(text);
                    *self = Flow::Json { reply, hold, copy, decoder };
                    if end {
                        self.done(sink);
                    }
                }
            }
            return Next::Continue;
        }
        // held: toolfit keeps the bytes itself (each chunk taken out of the host's buffer), so a large
        // response never meets the host's buffer limit (a 500 or a reset); past max_bytes what was
        // taken goes back out, unrepaired (and the rest decoded, since the headers already said
        // identity)
        let text = match text {
            Ok(t) => t,
            Err(_) => {
                // not decodable: what was taken goes back, then the chunk as it came (corrupt either way)
                let raw = host.chunk(size).unwrap_or_default();
                copy.extend_from_slice(&raw);
                if !host.set_chunk(size, &copy) {
                    sink.internal_error(&reply);
                }
                sink.unrepaired(&reply);
                return Next::Continue;
            }
        };
        copy.extend_from_slice(&text);
        if copy.len() > reply.max_bytes {
            if !host.set_chunk(size, &copy) {
                sink.internal_error(&reply);
            }
            sink.unrepaired(&reply);
            if let (Some(d), false) = (decoder, end) {
                *self = Flow::Decoding(d);
            }
            return Next::Continue;
        }
        if end {
            answer(host, sink, &reply, &copy, size);
            return Next::Continue;
        }
        if !host.set_chunk(size, &[]) {
            // the chunk stays where it is, so what was taken before it cannot come back in order
            sink.internal_error(&reply);
            return Next::Continue;
        }
        // with reject the headers wait: the (empty) body waits with them
        let wait = reply.on_invalid == OnInvalid::Reject;
        *self = Flow::Json { reply, hold, copy, decoder };
        if wait {
            Next::Pause
        } else {
            Next::Continue
        }
    }
}

/// One chunk of a JSON body with the state it is read in.
struct JsonChunk {
    reply: Reply,
    hold: bool,
    copy: Vec<u8>,
    decoder: Option<Decoder>,
    size: usize,
    end: bool,
}

/// A held JSON response, complete (`body`: all of it, which toolfit took out of the host's buffer;
/// the buffer holds the last `size` bytes): repaired, or replaced by an error when a call is invalid
/// and the route rejects those, or put back as it came.
fn answer(host: &mut dyn ResponseHost, sink: &mut Sink, reply: &Reply, body: &[u8], size: usize) {
    let mut tally = Tally::default();
    let repaired = reply.repair_json(body, &mut tally);
    let mut out: &[u8] = repaired.as_deref().unwrap_or(body);
    let err = match (reply.on_invalid, tally.first_invalid()) {
        (OnInvalid::Reject, Some(call)) => Some(reply.rejection(call)),
        _ => None,
    };
    if let Some(err) = &err {
        let headers = [(":status", "502"), ("x-toolfit", "invalid-tool-call"), ("content-type", "application/json")];
        if headers.iter().all(|(k, v)| host.set_header(k, v)) {
            tally.rejected = 1;
            out = err;
        } else {
            tally.unrepaired += 1;
        }
    }
    if reply.on_invalid == OnInvalid::Reject {
        // the held headers go with the exact length of what is sent
        let _ = host.set_header("content-length", &out.len().to_string());
    }
    if !host.set_chunk(size, out) {
        tally.rejected = 0;
        sink.internal_error(reply);
    }
    sink.count(reply, &tally);
}
