//! What the core asks to change, gathered for the answer to the message it concerns.

use envoy_types::pb::envoy::config::core::v3::{HeaderValue, HeaderValueOption};
use envoy_types::pb::envoy::service::ext_proc::v3::{body_mutation, BodyMutation, CommonResponse, HeaderMutation};
use toolfit::filter::host::{RequestHost, ResponseHost};

/// Header and body changes the filter asked for, answered with the message they concern.
#[derive(Default)]
pub(super) struct Mutations {
    pub(super) set: Vec<(String, String)>,
    pub(super) remove: Vec<String>,
    pub(super) body: Option<Vec<u8>>,
    /// The offset `body` replaces the request body from (until the session puts the bytes before it
    /// back in front).
    pub(super) body_at: usize,
    pub(super) reject: Option<(u16, Vec<u8>)>,
}

impl Mutations {
    pub(super) fn header_mutation(&self) -> Option<HeaderMutation> {
        if self.set.is_empty() && self.remove.is_empty() {
            return None;
        }
        let set_headers = self
            .set
            .iter()
            .map(|(k, v)| HeaderValueOption {
                header: Some(HeaderValue { key: k.clone(), raw_value: v.clone().into_bytes(), ..HeaderValue::default() }),
                // OVERWRITE_IF_EXISTS_OR_ADD
                append_action: 2,
                ..HeaderValueOption::default()
            })
            .collect();
        Some(HeaderMutation { set_headers, remove_headers: self.remove.clone() })
    }

    pub(super) fn common(&self) -> CommonResponse {
        let body_mutation = self.body.as_ref().map(|b| BodyMutation {
            mutation: Some(if b.is_empty() { body_mutation::Mutation::ClearBody(true) } else { body_mutation::Mutation::Body(b.clone()) }),
        });
        CommonResponse { header_mutation: self.header_mutation(), body_mutation, ..CommonResponse::default() }
    }
}

impl RequestHost for Mutations {
    fn set_header(&mut self, name: &str, value: &str) -> bool {
        self.remove.retain(|r| !r.eq_ignore_ascii_case(name));
        self.set.retain(|(k, _)| !k.eq_ignore_ascii_case(name));
        self.set.push((name.to_ascii_lowercase(), value.to_string()));
        true
    }
    fn remove_header(&mut self, name: &str) -> bool {
        self.set.retain(|(k, _)| !k.eq_ignore_ascii_case(name));
        self.remove.push(name.to_ascii_lowercase());
        true
    }
    fn set_body(&mut self, at: usize, _size: usize, bytes: &[u8]) -> bool {
        self.body_at = at;
        self.body = Some(bytes.to_vec());
        true
    }
    fn reject(&mut self, status: u16, body: &[u8]) -> bool {
        self.reject = Some((status, body.to_vec()));
        true
    }
}

/// One response message's bytes (a body piece, or none for headers and trailers) and what the
/// response path did with them.
#[derive(Default)]
pub(super) struct Chunk {
    pub(super) bytes: Vec<u8>,
    pub(super) out: Option<Vec<u8>>,
    pub(super) headers: Mutations,
}

impl Chunk {
    pub(super) fn common(&self) -> CommonResponse {
        let mut c = self.headers.common();
        if let Some(out) = &self.out {
            c.body_mutation = Some(BodyMutation {
                mutation: Some(if out.is_empty() { body_mutation::Mutation::ClearBody(true) } else { body_mutation::Mutation::Body(out.clone()) }),
            });
        }
        c
    }
}

impl ResponseHost for Chunk {
    fn chunk(&mut self, size: usize) -> Option<Vec<u8>> {
        let cur = self.out.as_ref().unwrap_or(&self.bytes);
        cur.get(..size.min(cur.len())).map(<[u8]>::to_vec)
    }
    fn set_chunk(&mut self, size: usize, bytes: &[u8]) -> bool {
        let cur = self.out.as_ref().unwrap_or(&self.bytes);
        let rest = cur.get(size.min(cur.len())..).unwrap_or_default();
        self.out = Some([bytes, rest].concat());
        true
    }
    fn set_header(&mut self, name: &str, value: &str) -> bool {
        RequestHost::set_header(&mut self.headers, name, value)
    }
    fn remove_header(&mut self, name: &str) -> bool {
        RequestHost::remove_header(&mut self.headers, name)
    }
}
