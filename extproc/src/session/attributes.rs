//! What Envoy's messages say about the request: its route, the route's settings, its headers.

use envoy_types::pb::envoy::config::core::v3::HeaderMap;
use envoy_types::pb::envoy::service::ext_proc::v3::ProcessingRequest;
use std::time::{SystemTime, UNIX_EPOCH};
use toolfit::filter::headers;
use toolfit::filter::host::{MetaValue, RouteMeta};

/// The ext_proc filter's name: the key of the attributes it sends.
pub(super) const FILTER: &str = "envoy.filters.http.ext_proc";

/// `xds.route_name`, which Envoy sends when the filter's `request_attributes` lists it.
pub(super) fn route_name(msg: &ProcessingRequest) -> Option<String> {
    use envoy_types::pb::google::protobuf::value::Kind;
    let v = msg.attributes.get(FILTER)?.fields.get("xds.route_name")?;
    match &v.kind {
        Some(Kind::StringValue(s)) if !s.is_empty() => Some(s.clone()),
        _ => None,
    }
}

/// Where the route's settings sit among the attributes Envoy sends: one CEL attribute per setting,
/// `xds.route_metadata.filter_metadata.toolfit.<key>` (Envoy sends the whole `xds.route_metadata` only
/// as protobuf text, not as a Struct; a leaf comes as its own value, and a missing one not at all).
pub(super) const ROUTE_META: &str = "xds.route_metadata.filter_metadata.toolfit.";

/// The matched route's `metadata.filter_metadata.toolfit` (`profile`, `strict`, `disabled`), as the
/// Wasm filter reads it: from the attributes above, else from the stream's metadata context under
/// `toolfit` (for gateways that set per-route settings as dynamic metadata and forward that
/// namespace). Booleans may come as strings, as route metadata written by hand often has them.
pub(super) fn route_meta(msg: &ProcessingRequest) -> RouteMeta {
    use envoy_types::pb::google::protobuf::value::Kind;
    let attrs = msg.attributes.get(FILTER);
    let dynamic = msg.metadata_context.as_ref().and_then(|m| m.filter_metadata.get("toolfit"));
    RouteMeta::read(|k| {
        let from_route = attrs.and_then(|a| a.fields.get(&format!("{ROUTE_META}{k}")));
        match from_route.or_else(|| dynamic.and_then(|d| d.fields.get(k))).and_then(|v| v.kind.clone())? {
            Kind::BoolValue(b) => Some(MetaValue::Bool(b)),
            Kind::StringValue(s) => Some(MetaValue::Bytes(s.into_bytes())),
            _ => None,
        }
    })
}

/// A header's value (Envoy sends `raw_value` unless told otherwise).
pub(super) fn header(map: Option<&HeaderMap>, name: &str) -> Option<String> {
    let h = map?.headers.iter().find(|h| h.key.eq_ignore_ascii_case(name))?;
    if h.raw_value.is_empty() {
        Some(h.value.clone())
    } else {
        Some(headers::text(h.raw_value.clone()))
    }
}

pub(super) fn now_us() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
}
