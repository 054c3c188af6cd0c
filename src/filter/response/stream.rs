//! Streamed responses (SSE events, NDJSON lines): cut into events as they come, the events that carry
//! part of a call held only while that call may need repair, then released in order.

use super::calls::{plain_paths, CallPath, RESPONSES_DONE};
use super::reply::{decode_limit, quoted, Fixed, Reply};
use super::tally::Tally;
use crate::api::raw;
use crate::api::{self, Format};
use crate::filter::encoding::{Coding, Decoder};
use serde_json::value::RawValue;

/// The kind of streamed body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Events {
    /// `text/event-stream`: events end with a blank line.
    Sse,
    /// `application/x-ndjson` (Ollama): one JSON document per line.
    Lines,
}

/// A call assembled over a stream, by (choice or block, index).
type CallKey = (u64, u64);

/// What one stream event says about the calls being assembled.
#[derive(Debug, Clone)]
enum Frag {
    /// Part of a call's name (a JSON string at this byte range of the event's JSON).
    NamePart(CallKey, usize, usize),
    /// Part of a call's argument text.
    ArgsPart(CallKey, usize, usize),
    /// The call's whole name or arguments, said again (Responses' `.done` events).
    NameWhole(CallKey, usize, usize),
    ArgsWhole(CallKey, usize, usize),
    /// The call is complete.
    Close(CallKey),
    /// Every call so far is complete.
    CloseAll,
}

struct Open {
    key: CallKey,
    name: String,
    args: String,
}

struct Held {
    /// The event's bytes.
    text: String,
    /// Where its JSON starts in `text`.
    json_at: usize,
    frags: Vec<Frag>,
}

/// One streamed response being read.
pub struct Stream {
    reply: Reply,
    events: Events,
    /// Bytes of an event not yet complete.
    pending: Vec<u8>,
    held: Vec<Held>,
    open: Vec<Open>,
    done: Vec<(CallKey, Fixed)>,
    /// Set after a limit was hit: the rest goes on as it comes.
    given_up: bool,
    /// The upstream's coding, read as it comes (`None`: identity, or given up on).
    decoder: Option<Decoder>,
    pub tally: Tally,
}

/// Where one event ends in `b` (just past its blank line), if it is complete.
fn event_end(b: &[u8], events: Events) -> Option<usize> {
    match events {
        Events::Lines => b.iter().position(|c| *c == b'\n').map(|i| i + 1),
        Events::Sse => {
            let lf = b.windows(2).position(|w| w == b"\n\n").map(|i| i + 2);
            let crlf = b.windows(4).position(|w| w == b"\r\n\r\n").map(|i| i + 4);
            match (lf, crlf) {
                (Some(a), Some(c)) => Some(a.min(c)),
                (a, c) => a.or(c),
            }
        }
    }
}

/// The JSON of an event and where it starts: the one `data:` line of an SSE event, or an NDJSON line.
fn event_json(text: &str, events: Events) -> Option<(usize, &str)> {
    if events == Events::Lines {
        let t = text.trim_end();
        return (!t.trim().is_empty()).then_some((0, t));
    }
    let mut found = None;
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        let body = line.trim_end_matches(['\n', '\r']);
        if let Some(d) = body.strip_prefix("data:") {
            if found.is_some() {
                return None; // several data lines make one document: not taken apart
            }
            let d0 = d.strip_prefix(' ').unwrap_or(d);
            found = Some((at + (body.len() - d0.len()), d0));
        }
        at += line.len();
    }
    found
}

fn span(event: &str, v: &RawValue) -> Option<(usize, usize)> {
    let at = raw::offset(event, v.get())?;
    Some((at, at + v.get().len()))
}

fn index(o: &raw::RawObject, key: &str, default: u64) -> u64 {
    o.get(key).and_then(|v| v.get().parse().ok()).unwrap_or(default)
}

/// The call fragments in one event's JSON, for the formats that stream calls in parts.
fn frags(format: Format, json: &str) -> Vec<Frag> {
    let mut out = Vec::new();
    let Some(top) = raw::object(json) else { return out };
    let kind = top.str("type").unwrap_or_default();
    let mut push_part = |key: CallKey, v: Option<&RawValue>, name: bool, whole: bool| {
        if let Some((a, b)) = v.and_then(|v| span(json, v)) {
            out.push(match (name, whole) {
                (true, false) => Frag::NamePart(key, a, b),
                (false, false) => Frag::ArgsPart(key, a, b),
                (true, true) => Frag::NameWhole(key, a, b),
                (false, true) => Frag::ArgsWhole(key, a, b),
            });
        }
    };
    match format {
        Format::OpenAiChat => {
            let choices = top.get("choices").and_then(|c| raw::array(c.get())).map(|a| a.0).unwrap_or_default();
            let mut finished = false;
            for (n, c) in choices.iter().enumerate() {
                let Some(c) = raw::object(c.get()) else { continue };
                let ci = index(&c, "index", n as u64);
                if let Some(d) = c.get("delta").and_then(|d| raw::object(d.get())) {
                    for (m, tc) in d.get("tool_calls").and_then(|t| raw::array(t.get())).map(|a| a.0).unwrap_or_default().iter().enumerate() {
                        let Some(tc) = raw::object(tc.get()) else { continue };
                        let key = (ci, index(&tc, "index", m as u64));
                        if let Some(f) = tc.get("function").and_then(|f| raw::object(f.get())) {
                            push_part(key, f.get("name"), true, false);
                            push_part(key, f.get("arguments"), false, false);
                        }
                    }
                }
                finished |= c.get("finish_reason").is_some_and(|f| f.get() != "null");
            }
            if finished {
                out.push(Frag::CloseAll);
            }
        }
        Format::Anthropic => {
            let key = (0, index(&top, "index", 0));
            match kind.as_str() {
                "content_block_start" => {
                    if let Some(b) = top.get("content_block").and_then(|b| raw::object(b.get())).filter(|b| b.str("type").as_deref() == Some("tool_use")) {
                        push_part(key, b.get("name"), true, false);
                    }
                }
                "content_block_delta" => {
                    if let Some(d) = top.get("delta").and_then(|d| raw::object(d.get())).filter(|d| d.str("type").as_deref() == Some("input_json_delta")) {
                        push_part(key, d.get("partial_json"), false, false);
                    }
                }
                "content_block_stop" => out.push(Frag::Close(key)),
                "message_delta" | "message_stop" => out.push(Frag::CloseAll),
                _ => {}
            }
        }
        Format::OpenAiResponses => {
            let key = (0, index(&top, "output_index", 0));
            let item = top.get("item").and_then(|i| raw::object(i.get())).filter(|i| i.str("type").as_deref() == Some("function_call"));
            match kind.as_str() {
                "response.output_item.added" => {
                    if let Some(i) = item {
                        push_part(key, i.get("name"), true, false);
                        push_part(key, i.get("arguments"), false, false);
                    }
                }
                "response.function_call_arguments.delta" => push_part(key, top.get("delta"), false, false),
                "response.function_call_arguments.done" => {
                    push_part(key, top.get("name"), true, true);
                    push_part(key, top.get("arguments"), false, true);
                }
                "response.output_item.done" => {
                    if let Some(i) = item {
                        push_part(key, i.get("name"), true, true);
                        push_part(key, i.get("arguments"), false, true);
                        out.push(Frag::Close(key));
                    }
                }
                "response.completed" | "response.incomplete" | "response.failed" => out.push(Frag::CloseAll),
                _ => {}
            }
        }
        Format::Cohere => {
            let key = (0, index(&top, "index", 0));
            let tc = top
                .get("delta")
                .and_then(|d| raw::object(d.get()))
                .and_then(|d| d.get("message"))
                .and_then(|m| raw::object(m.get()))
                .and_then(|m| m.get("tool_calls"))
                .and_then(|t| raw::object(t.get()));
            let f = tc.as_ref().and_then(|t| t.get("function")).and_then(|f| raw::object(f.get()));
            match (kind.as_str(), f) {
                ("tool-call-start", Some(f)) => {
                    push_part(key, f.get("name"), true, false);
                    push_part(key, f.get("arguments"), false, false);
                }
                ("tool-call-delta", Some(f)) => push_part(key, f.get("arguments"), false, false),
                ("tool-call-end", _) => out.push(Frag::Close(key)),
                ("message-end", _) => out.push(Frag::CloseAll),
                _ => {}
            }
        }
        _ => {}
    }
    out
}

impl Stream {
    pub fn new(reply: Reply, events: Events, coding: Coding) -> Stream {
        let decoder = Decoder::new(coding, decode_limit(&reply));
        Stream { reply, events, pending: Vec::new(), held: Vec::new(), open: Vec::new(), done: Vec::new(), given_up: false, decoder, tally: Tally::default() }
    }

    pub fn reply(&self) -> &Reply {
        &self.reply
    }

    /// Whether events are held (or an event is incomplete) that the body's end has not let out.
    pub fn holding(&self) -> bool {
        !self.held.is_empty() || (!self.pending.is_empty() && self.reply.repairs())
    }

    /// Whether the event is the Responses API's closing summary (`response.completed` and its kin),
    /// which says every call again, whole. Read only on that format, by its `type`.
    fn summary(&self, json: &str) -> bool {
        self.reply.format == Format::OpenAiResponses
            && json.contains("\"response.")
            && raw::object(json)
                .and_then(|o| o.str("type"))
                .is_some_and(|t| matches!(t.as_str(), "response.completed" | "response.incomplete" | "response.failed"))
    }

    /// Whether events of this format carry whole calls (each is repaired on its own).
    fn whole_calls(&self) -> bool {
        matches!(self.reply.format, Format::Gemini | Format::Ollama)
    }

    fn held_bytes(&self) -> usize {
        self.pending.len() + self.held.iter().map(|h| h.text.len()).sum::<usize>()
    }

    /// Takes the next bytes of the body; returns the bytes to send on now (maybe none). At the end
    /// of the body everything held goes out. A compressed stream is read decoded; it goes on as it
    /// came when nothing in it may change, else decoded (`Begin::decodes`).
    pub fn feed(&mut self, chunk: &[u8], end: bool) -> Vec<u8> {
        let Some(decoder) = &mut self.decoder else { return self.feed_plain(chunk, end) };
        match decoder.feed(chunk, end) {
            Ok(plain) => {
                let out = self.feed_plain(&plain, end);
                if self.reply.repairs() {
                    out
                } else {
                    chunk.to_vec()
                }
            }
            Err(_) => {
                // not readable after all (corrupt, or a bomb): what is held goes on, then the rest as
                // it comes; the client meets the same fault it would have met without toolfit
                self.decoder = None;
                let mut out = Vec::new();
                if self.reply.repairs() {
                    self.give_up(&mut out);
                } else {
                    self.given_up = true;
                }
                out.extend_from_slice(chunk);
                out
            }
        }
    }

    /// Sends on whatever is held and reads no further: the rest of the body goes on as it comes.
    fn give_up(&mut self, out: &mut Vec<u8>) {
        self.tally.unrepaired += 1;
        self.given_up = true;
        for h in std::mem::take(&mut self.held) {
            out.extend_from_slice(h.text.as_bytes());
        }
        out.append(&mut self.pending);
    }

    fn feed_plain(&mut self, chunk: &[u8], end: bool) -> Vec<u8> {
        let mut out = Vec::with_capacity(chunk.len());
        if self.given_up {
            out.extend_from_slice(chunk);
            return out;
        }
        self.pending.extend_from_slice(chunk);
        while let Some(n) = event_end(&self.pending, self.events) {
            let event: Vec<u8> = self.pending.drain(..n).collect();
            self.event(event, &mut out);
        }
        if end && !self.pending.is_empty() {
            let event = std::mem::take(&mut self.pending);
            self.event(event, &mut out);
        }
        if end {
            self.close(None);
            self.release(&mut out);
        }
        if self.held_bytes() > self.reply.max_bytes {
            // a call longer than anything worth holding: send it on as it came
            self.give_up(&mut out);
        }
        out
    }

    fn event(&mut self, event: Vec<u8>, out: &mut Vec<u8>) {
        let text = match String::from_utf8(event) {
            Ok(t) => t,
            Err(e) => {
                self.pass(e.into_bytes(), out);
                return;
            }
        };
        let Some((json_at, json)) = event_json(&text, self.events) else {
            self.pass(text.into_bytes(), out);
            return;
        };
        if self.whole_calls() || self.summary(json) {
            // whole calls in one event: repaired (and, but for Responses' closing summary, counted) here
            let count = self.whole_calls();
            let paths: &[CallPath] = if count { plain_paths(self.reply.format) } else { RESPONSES_DONE };
            if !count {
                self.close(None);
            }
            let fixed = self.reply.repair_doc(json, paths, count, &mut self.tally);
            let text = match fixed {
                Some(new) => format!("{}{new}{}", text.get(..json_at).unwrap_or(""), text.get(json_at + json.len()..).unwrap_or("")),
                None => text,
            };
            self.pass(text.into_bytes(), out);
            self.release(out);
            return;
        }
        let fr = frags(self.reply.format, json);
        for f in &fr {
            let (key, part, name) = match f {
                Frag::NamePart(k, a, b) => (*k, json.get(*a..*b), true),
                Frag::ArgsPart(k, a, b) => (*k, json.get(*a..*b), false),
                _ => continue,
            };
            let part = part.and_then(|p| serde_json::from_str::<String>(p).ok()).unwrap_or_default();
            let open = match self.open.iter_mut().position(|o| o.key == key) {
                Some(i) => self.open.get_mut(i),
                None => {
                    self.open.push(Open { key, name: String::new(), args: String::new() });
                    self.open.last_mut()
                }
            };
            if let Some(o) = open {
                if name {
                    o.name.push_str(&part);
                } else {
                    o.args.push_str(&part);
                }
            }
        }
        let hold = self.reply.repairs() && (!self.held.is_empty() || !self.open.is_empty());
        let closes: Vec<Option<CallKey>> = fr
            .iter()
            .filter_map(|f| match f {
                Frag::Close(k) => Some(Some(*k)),
                Frag::CloseAll => Some(None),
                _ => None,
            })
            .collect();
        if hold {
            self.held.push(Held { text, json_at, frags: fr });
        } else {
            self.pass(text.into_bytes(), out);
        }
        for c in closes {
            self.close(c);
        }
        if self.open.is_empty() {
            self.release(out);
        }
    }

    /// An event that goes on as it is: after whatever is held, to keep the order.
    fn pass(&mut self, bytes: Vec<u8>, out: &mut Vec<u8>) {
        if self.held.is_empty() {
            out.extend_from_slice(&bytes);
        } else {
            let text = String::from_utf8_lossy(&bytes).into_owned();
            if text.len() == bytes.len() {
                self.held.push(Held { text, json_at: 0, frags: Vec::new() });
            } else {
                // not UTF-8 after all: nothing held can be repaired in order with it
                self.tally.unrepaired += 1;
                for h in std::mem::take(&mut self.held) {
                    out.extend_from_slice(h.text.as_bytes());
                }
                out.extend_from_slice(&bytes);
            }
        }
    }

    /// Completes a call (`None`: every open call): repaired and counted now.
    fn close(&mut self, key: Option<CallKey>) {
        let (closing, open): (Vec<Open>, Vec<Open>) = std::mem::take(&mut self.open).into_iter().partition(|o| key.is_none_or(|k| k == o.key));
        self.open = open;
        for o in closing {
            let fixed = self.reply.fix(&o.name, &o.args, true, &mut self.tally);
            self.done.push((o.key, fixed));
        }
    }

    /// Sends on the held events, with every completed call's first fragment carrying its repaired
    /// name and arguments and later fragments empty.
    fn release(&mut self, out: &mut Vec<u8>) {
        if !self.open.is_empty() {
            return;
        }
        let done = std::mem::take(&mut self.done);
        let mut seen_name: Vec<CallKey> = Vec::new();
        let mut seen_args: Vec<CallKey> = Vec::new();
        for h in std::mem::take(&mut self.held) {
            let mut edits: Vec<(usize, usize, String)> = Vec::new();
            for f in &h.frags {
                let (key, a, b, name, whole) = match f {
                    Frag::NamePart(k, a, b) => (*k, *a, *b, true, false),
                    Frag::ArgsPart(k, a, b) => (*k, *a, *b, false, false),
                    Frag::NameWhole(k, a, b) => (*k, *a, *b, true, true),
                    Frag::ArgsWhole(k, a, b) => (*k, *a, *b, false, true),
                    _ => continue,
                };
                // an empty fragment (`"arguments": ""` beside a name, Responses' added item) stays
                // empty: the repaired whole goes in the first fragment that carried something, where
                // clients that read only the deltas find it
                if !whole && h.text.get(h.json_at + a..h.json_at + b) == Some("\"\"") {
                    continue;
                }
                let Some((_, fixed)) = done.iter().find(|(k, _)| *k == key) else { continue };
                let Some(new) = (if name { fixed.name.as_ref() } else { fixed.args.as_ref() }) else { continue };
                let seen = if name { &mut seen_name } else { &mut seen_args };
                let first = whole || !seen.contains(&key);
                if !whole {
                    seen.push(key);
                }
                edits.push((h.json_at + a, h.json_at + b, if first { quoted(new) } else { "\"\"".into() }));
            }
            if edits.is_empty() {
                out.extend_from_slice(h.text.as_bytes());
            } else {
                out.extend_from_slice(api::splice(&h.text, edits.iter().map(|(a, b, s)| (*a, *b, s.as_str())).collect()).as_bytes());
            }
        }
    }
}
