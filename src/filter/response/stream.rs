//! Streamed responses (SSE events, NDJSON lines): cut into events as they come, the events that carry
//! part of a call held only while that call may need repair, then released in order.

use super::reply::{decode_limit, quoted, Fixed, Reply, Seen};
use super::tally::Tally;
use crate::api;
use crate::api::format::{CallKey, CallPath, Frag, StreamCalls};
use crate::filter::encoding::{Coding, Decoder};

/// The kind of streamed body.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Events {
    /// `text/event-stream`: events end with a blank line.
    #[default]
    Sse,
    /// `application/x-ndjson` (Ollama): one JSON document per line.
    Lines,
    /// `application/vnd.amazon.eventstream` (Bedrock's ConverseStream): binary messages whose payloads
    /// are JSON ([`super::frames`]).
    Frames,
}

struct Open {
    key: CallKey,
    name: String,
    args: String,
}

struct Held {
    /// The event's text: an SSE event's or a line's bytes; a message's payload, or what its envelope
    /// member held.
    text: String,
    /// The message the event came in, if it came in one.
    message: Option<Message>,
    /// Where its JSON starts in `text`.
    json_at: usize,
    frags: Vec<Frag>,
}

/// An event-stream message an event came in: how to write it again around a changed text.
struct Message {
    /// Its bytes as they came (what goes out while its text is unchanged).
    bytes: Vec<u8>,
    headers: Vec<u8>,
    /// The payload around the envelope member's string, where the text is what that string held
    /// ([`crate::api::format::Descriptor::envelope`]).
    outer: Option<(String, String)>,
}

/// [`Message`] while its event is read.
#[derive(Clone, Copy)]
struct MessageRef<'a> {
    bytes: &'a [u8],
    headers: &'a [u8],
    outer: Option<(&'a str, &'a str)>,
}

impl MessageRef<'_> {
    fn owned(&self) -> Message {
        Message { bytes: self.bytes.to_vec(), headers: self.headers.to_vec(), outer: self.outer.map(|(a, b)| (a.to_owned(), b.to_owned())) }
    }

    /// The message written again around `text`: new lengths and checksums.
    fn with(&self, text: &str) -> Vec<u8> {
        let payload = match self.outer {
            Some((a, b)) => format!("{a}\"{}\"{b}", super::frames::base64(text.as_bytes())),
            None => text.to_owned(),
        };
        super::frames::write(self.headers, payload.as_bytes())
    }
}

impl Message {
    fn as_ref(&self) -> MessageRef<'_> {
        MessageRef { bytes: &self.bytes, headers: &self.headers, outer: self.outer.as_ref().map(|(a, b)| (a.as_str(), b.as_str())) }
    }
}

impl Held {
    /// The event as it came.
    fn spill(&self, out: &mut Vec<u8>) {
        match &self.message {
            Some(m) => out.extend_from_slice(&m.bytes),
            None => out.extend_from_slice(self.text.as_bytes()),
        }
    }
}

/// One streamed response being read.
pub struct Stream {
    reply: Reply,
    events: Events,
    /// The events as they complete, and the bytes of one that has not.
    framer: Framer,
    held: Vec<Held>,
    open: Vec<Open>,
    done: Vec<(CallKey, Fixed)>,
    /// Set after a limit was hit: the rest goes on as it comes.
    given_up: bool,
    /// The upstream's coding, read as it comes (`None`: identity, or given up on).
    decoder: Option<Decoder>,
    pub tally: Tally,
}

/// A streamed body cut into its events as the chunks come, for both legs' streams: the events wholly
/// inside a chunk are read where they are; only an event the chunk's end cuts is copied, until the
/// chunk that completes it.
#[derive(Default)]
pub(crate) struct Framer {
    events: Events,
    /// Bytes of an event not yet complete.
    pending: Vec<u8>,
}

impl Framer {
    pub(crate) fn new(events: Events) -> Framer {
        Framer { events, pending: Vec::new() }
    }

    /// Hands each event `chunk` completes to `each`, in order (the first with the bytes that were
    /// pending before it); what is left pends.
    pub(crate) fn split(&mut self, chunk: &[u8], mut each: impl FnMut(&[u8])) {
        let mut rest = chunk;
        if !self.pending.is_empty() {
            // what is pending was searched to its end already; the blank line may begin in its last
            // bytes, which the search looks back on
            let seen = self.pending.len();
            self.pending.extend_from_slice(chunk);
            match event_end(&self.pending, seen, self.events) {
                Some(n) => {
                    let event = std::mem::take(&mut self.pending);
                    each(event.get(..n).unwrap_or_default());
                    rest = chunk.get(n.saturating_sub(seen)..).unwrap_or_default();
                }
                None => rest = &[],
            }
        }
        while let Some(n) = event_end(rest, 0, self.events) {
            let (event, tail) = rest.split_at(n);
            each(event);
            rest = tail;
        }
        self.pending.extend_from_slice(rest);
    }

    /// How many bytes pend.
    pub(crate) fn pending(&self) -> usize {
        self.pending.len()
    }

    /// The pending bytes, taken.
    pub(crate) fn take(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.pending)
    }
}

/// Where one event ends in `b` (just past its blank line), if it is complete. `from`: where to start
/// looking (bytes before it were looked at already and held no end; the blank line's first bytes may
/// lie before it, so the checks look back). Every event ends at a `\n`, so only those are visited,
/// found by `position` (a vectorised byte search), and each is looked at once however the events
/// arrive in pieces.
pub(crate) fn event_end(b: &[u8], from: usize, events: Events) -> Option<usize> {
    if events == Events::Frames {
        return super::frames::end(b);
    }
    let mut at = from;
    loop {
        let i = at + b.get(at..)?.iter().position(|c| *c == b'\n')?;
        let ends = match events {
            Events::Lines | Events::Frames => true,
            // `\n\n` or `\r\n\r\n`, whichever ends first
            Events::Sse => i.checked_sub(1).and_then(|j| b.get(j)) == Some(&b'\n') || i.checked_sub(3).and_then(|j| b.get(j..i)) == Some(b"\r\n\r"),
        };
        if ends {
            return Some(i + 1);
        }
        at = i + 1;
    }
}

/// The JSON of an event and where it starts: the one `data:` line of an SSE event, or an NDJSON line.
pub(crate) fn event_json(text: &str, events: Events) -> Option<(usize, &str)> {
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

impl Stream {
    pub fn new(reply: Reply, events: Events, coding: Coding) -> Stream {
        let decoder = Decoder::new(coding, decode_limit(&reply));
        Stream {
            reply,
            events,
            framer: Framer::new(events),
            held: Vec::new(),
            open: Vec::new(),
            done: Vec::new(),
            given_up: false,
            decoder,
            tally: Tally::default(),
        }
    }

    pub fn reply(&self) -> &Reply {
        &self.reply
    }

    pub fn reply_mut(&mut self) -> &mut Reply {
        &mut self.reply
    }

    /// Bytes kept for later: held events and an incomplete one.
    pub fn kept(&self) -> usize {
        self.held_bytes()
    }

    /// Whether events are held (or an event is incomplete) that the body's end has not let out.
    pub fn holding(&self) -> bool {
        !self.held.is_empty() || (self.framer.pending() > 0 && self.reply.repairs())
    }

    /// Where the calls are if the event is the format's closing summary, which says every call
    /// again, whole (Responses' `response.completed` and its kin).
    fn summary(&self, json: &str) -> Option<&'static [CallPath]> {
        match self.reply.format.descriptor().map(|d| d.stream) {
            Some(StreamCalls::Parts { summary: Some(s), .. }) if (s.is)(json) => Some(s.calls),
            _ => None,
        }
    }

    /// Whether events of this format carry whole calls (each is repaired on its own).
    fn whole_calls(&self) -> bool {
        matches!(self.reply.format.descriptor().map(|d| d.stream), Some(StreamCalls::Whole))
    }

    /// The call fragments in one event's JSON, for the formats that stream calls in parts.
    fn frags(&self, json: &str) -> Vec<Frag> {
        match self.reply.format.descriptor().map(|d| d.stream) {
            Some(StreamCalls::Parts { frags, .. }) => frags(json),
            _ => Vec::new(),
        }
    }

    fn held_bytes(&self) -> usize {
        self.framer.pending() + self.held.iter().map(|h| h.text.len()).sum::<usize>()
    }

    /// The body ended: everything held goes out.
    pub fn end(&mut self) -> Vec<u8> {
        self.feed(&[], true) // end: nothing more comes
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
            h.spill(out);
        }
        out.append(&mut self.framer.take());
    }

    fn feed_plain(&mut self, chunk: &[u8], end: bool) -> Vec<u8> {
        let mut out = Vec::with_capacity(chunk.len());
        if self.given_up {
            out.extend_from_slice(chunk);
            return out;
        }
        let mut framer = std::mem::take(&mut self.framer);
        framer.split(chunk, |event| self.event(event, &mut out));
        if end && framer.pending() > 0 {
            // the body's end completes the last event
            self.event(&framer.take(), &mut out);
        }
        self.framer = framer;
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

    fn event(&mut self, event: &[u8], out: &mut Vec<u8>) {
        let Some((decoded, frame)) = self.text_of(event) else {
            self.pass(event, None, out);
            return;
        };
        let text: &str = &decoded;
        let Some((json_at, json)) = (if frame.is_some() { Some((0, text)) } else { event_json(text, self.events) }) else {
            self.pass(event, frame.map(|m| (m, text)), out);
            return;
        };
        let summary = self.summary(json);
        if self.whole_calls() || summary.is_some() {
            // whole calls in one event: repaired (and, but for a closing summary, counted) here
            let seen = if self.whole_calls() { Seen::First } else { Seen::Again };
            // (a summary comes only in formats that stream calls in parts, never with whole calls)
            let paths: &[CallPath] = summary.unwrap_or(self.reply.calls());
            if seen == Seen::Again {
                self.close(None);
            }
            let fixed = self.reply.repair_doc(json, paths, seen, &mut self.tally);
            match (fixed, frame) {
                (Some(new), Some(m)) => {
                    let msg = m.with(&new);
                    self.pass(&msg, Some((MessageRef { bytes: &msg, ..m }, &new)), out);
                }
                (Some(new), None) => {
                    let text = format!("{}{new}{}", text.get(..json_at).unwrap_or(""), text.get(json_at + json.len()..).unwrap_or(""));
                    self.pass(text.as_bytes(), None, out);
                }
                (None, f) => self.pass(event, f.map(|m| (m, text)), out),
            }
            self.release(out);
            return;
        }
        let fr = self.frags(json);
        self.gather(json, &fr);
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
            self.held.push(Held { text: text.to_owned(), message: frame.map(|m| m.owned()), json_at, frags: fr });
        } else {
            self.pass(event, frame.map(|m| (m, text)), out);
        }
        for c in closes {
            self.close(c);
        }
        if self.open.is_empty() {
            self.release(out);
        }
    }

    /// An event's text, and the message it came in: a message's payload, or what its envelope member
    /// holds; else the event itself. `None`: it cannot be read (it goes on as it is).
    fn text_of<'e>(&self, event: &'e [u8]) -> Option<(std::borrow::Cow<'e, str>, Option<MessageRef<'e>>)> {
        use std::borrow::Cow;
        if self.events != Events::Frames {
            return Some((Cow::Borrowed(simdutf8::basic::from_utf8(event).ok()?), None));
        }
        let (headers, payload) = super::frames::read(event).and_then(|(h, p)| Some((h, simdutf8::basic::from_utf8(p).ok()?)))?;
        match self.reply.format.descriptor().and_then(|d| d.envelope) {
            Some(member) => {
                let (a, inner, b) = super::frames::unwrap(payload, member)?;
                Some((Cow::Owned(inner), Some(MessageRef { bytes: event, headers, outer: Some((a, b)) })))
            }
            None => Some((Cow::Borrowed(payload), Some(MessageRef { bytes: event, headers, outer: None }))),
        }
    }

    /// The name and argument parts an event's fragments carry, added to their open calls.
    fn gather(&mut self, json: &str, fr: &[Frag]) {
        for f in fr {
            let (key, part, name) = match f {
                Frag::NamePart(k, a, b) => (*k, json.get(*a..*b), true),
                Frag::ArgsPart(k, a, b) => (*k, json.get(*a..*b), false),
                _ => continue,
            };
            // a part with no escape is its own text between the quotes
            let part = match part {
                Some(p) if !p.contains('\\') => std::borrow::Cow::Borrowed(p.get(1..p.len().saturating_sub(1)).unwrap_or("")),
                p => std::borrow::Cow::Owned(p.and_then(|p| serde_json::from_str::<String>(p).ok()).unwrap_or_default()),
            };
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
    }

    /// An event that goes on as it is: after whatever is held, to keep the order. `frame`: the message
    /// it came in and its text, what it is held as.
    fn pass(&mut self, bytes: &[u8], frame: Option<(MessageRef, &str)>, out: &mut Vec<u8>) {
        if self.held.is_empty() {
            out.extend_from_slice(bytes);
        } else if let Some((m, text)) = frame {
            self.held.push(Held { text: text.to_owned(), message: Some(m.owned()), json_at: 0, frags: Vec::new() });
        } else if let (Ok(text), false) = (std::str::from_utf8(bytes), self.events == Events::Frames) {
            self.held.push(Held { text: text.to_owned(), message: None, json_at: 0, frags: Vec::new() });
        } else {
            // not UTF-8 (or not a message) after all: nothing held can be repaired in order with it
            self.tally.unrepaired += 1;
            for h in std::mem::take(&mut self.held) {
                h.spill(out);
            }
            out.extend_from_slice(bytes);
        }
    }

    /// Completes a call (`None`: every open call): repaired and counted now.
    fn close(&mut self, key: Option<CallKey>) {
        let (closing, open): (Vec<Open>, Vec<Open>) = std::mem::take(&mut self.open).into_iter().partition(|o| key.is_none_or(|k| k == o.key));
        self.open = open;
        for o in closing {
            let fixed = self.reply.fix(&o.name, &o.args, Seen::First, &mut self.tally);
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
            let mut edits: Vec<api::Edit> = Vec::new();
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
                let Some(new) = (if name { fixed.name_text() } else { fixed.args.as_deref().map(quoted) }) else { continue };
                let seen = if name { &mut seen_name } else { &mut seen_args };
                let first = whole || !seen.contains(&key);
                if !whole {
                    seen.push(key);
                }
                edits.push(api::Edit::new(h.json_at + a, h.json_at + b, if first { new } else { "\"\"".into() }));
            }
            if edits.is_empty() {
                h.spill(out);
                continue;
            }
            let text = api::splice(&h.text, edits);
            match &h.message {
                // a message written again around its repaired text
                Some(m) => out.extend_from_slice(&m.as_ref().with(&text)),
                None => out.extend_from_slice(text.as_bytes()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_ends_at_its_blank_line() {
        let sse = |b: &[u8], from| event_end(b, from, Events::Sse);
        assert_eq!(sse(b"data: a\ndata: b\n\nnext", 0), Some(17), "two lines, one event");
        assert_eq!(sse(b"data: a\r\n\r\nnext", 0), Some(11), "CRLF");
        assert_eq!(sse(b"data: a\r\ndata: b\r\n\r\n", 0), Some(20));
        assert_eq!(sse(b"data: a\n", 0), None, "not complete");
        assert_eq!(sse(b"data: a\r\n", 0), None);
        assert_eq!(sse(b"data: a\n\n", 8), Some(9), "the blank line's first byte looked at before");
        assert_eq!(event_end(b"{}\n{}", 0, Events::Lines), Some(3));
    }
}
