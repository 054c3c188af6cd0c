//! The `ProcessingResponse`s the session answers with.

use super::mutations::Mutations;
use envoy_types::pb::envoy::extensions::filters::http::ext_proc::v3::{processing_mode, ProcessingMode};
use envoy_types::pb::envoy::r#type::v3::HttpStatus;
use envoy_types::pb::envoy::service::ext_proc::v3::{
    body_mutation, processing_response, BodyMutation, BodyResponse, CommonResponse, HeadersResponse, ImmediateResponse, ProcessingResponse,
    StreamedBodyResponse, TrailersResponse,
};
use toolfit::filter::host::RequestHost;
use toolfit::filter::host::REJECT_HEADERS;

/// Where a stream ends: with its body's last piece, or in trailers after it.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Ends {
    WithBody,
    InTrailers,
}

/// Which half of the exchange an answer is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Leg {
    Request,
    Response,
}

pub(super) fn headers_answer(leg: Leg, common: Option<CommonResponse>) -> ProcessingResponse {
    let h = HeadersResponse { response: common };
    let response = match leg {
        Leg::Request => processing_response::Response::RequestHeaders(h),
        Leg::Response => processing_response::Response::ResponseHeaders(h),
    };
    ProcessingResponse { response: Some(response), ..ProcessingResponse::default() }
}

pub(super) fn body_answer(leg: Leg, common: Option<CommonResponse>) -> ProcessingResponse {
    let b = BodyResponse { response: common };
    let response = match leg {
        Leg::Request => processing_response::Response::RequestBody(b),
        Leg::Response => processing_response::Response::ResponseBody(b),
    };
    ProcessingResponse { response: Some(response), ..ProcessingResponse::default() }
}

/// The answer to the last piece of a `FULL_DUPLEX_STREAMED` request body: the whole body, in one piece.
pub(super) fn streamed_answer(body: Vec<u8>, end_of_stream: bool) -> ProcessingResponse {
    streamed_body(Leg::Request, body, end_of_stream)
}

/// Bytes of a `FULL_DUPLEX_STREAMED` body of the request or the response.
pub(super) fn streamed_body(leg: Leg, body: Vec<u8>, end_of_stream: bool) -> ProcessingResponse {
    let m = BodyMutation {
        mutation: Some(body_mutation::Mutation::StreamedResponse(StreamedBodyResponse { body, end_of_stream, ..StreamedBodyResponse::default() })),
    };
    body_answer(leg, Some(CommonResponse { body_mutation: Some(m), ..CommonResponse::default() }))
}

pub(super) fn trailers_answer(leg: Leg) -> ProcessingResponse {
    let t = TrailersResponse::default();
    let response = match leg {
        Leg::Request => processing_response::Response::RequestTrailers(t),
        Leg::Response => processing_response::Response::ResponseTrailers(t),
    };
    ProcessingResponse { response: Some(response), ..ProcessingResponse::default() }
}

/// The request is not toolfit's: its headers go on unchanged, and Envoy sends nothing more of this
/// stream (no body, no response).
pub(super) fn skip_rest() -> ProcessingResponse {
    answer_then(headers_answer(Leg::Request, None), processing_mode::HeaderSendMode::Skip, processing_mode::BodySendMode::None)
}

/// The response's headers, with what toolfit changes in them, and no more of the stream: its body and
/// trailers go to the client without a round trip here (most requests: no reply to repair).
pub(super) fn skip_response(common: Option<CommonResponse>) -> ProcessingResponse {
    answer_then(headers_answer(Leg::Response, common), processing_mode::HeaderSendMode::Default, processing_mode::BodySendMode::None)
}

/// The response's headers, answered, waiting with their changes for the body, which Envoy buffers and
/// sends whole (`BUFFERED_PARTIAL`: a body past Envoy's buffer limit is sent up to it and the rest goes
/// on, rather than failing the response as `BUFFERED` would).
pub(super) fn buffer_response(common: CommonResponse) -> ProcessingResponse {
    answer_then(headers_answer(Leg::Response, Some(common)), processing_mode::HeaderSendMode::Default, processing_mode::BodySendMode::BufferedPartial)
}

/// `answer` with a mode override for the rest of the stream: no request body or trailers (they are
/// past or not wanted), the response's headers and body as given, no response trailers.
pub(super) fn answer_then(
    mut answer: ProcessingResponse,
    response_headers: processing_mode::HeaderSendMode,
    response_body: processing_mode::BodySendMode,
) -> ProcessingResponse {
    answer.mode_override = Some(ProcessingMode {
        request_header_mode: processing_mode::HeaderSendMode::Default as i32,
        response_header_mode: response_headers as i32,
        request_body_mode: processing_mode::BodySendMode::None as i32,
        response_body_mode: response_body as i32,
        request_trailer_mode: processing_mode::HeaderSendMode::Skip as i32,
        response_trailer_mode: processing_mode::HeaderSendMode::Skip as i32,
    });
    answer
}

/// Strict mode's answer: the request goes no further.
pub(super) fn reject(status: u16, body: Vec<u8>) -> ProcessingResponse {
    let mut m = Mutations::default();
    for (name, value) in REJECT_HEADERS {
        let _ = RequestHost::set_header(&mut m, name, value);
    }
    let r = ImmediateResponse { status: Some(HttpStatus { code: i32::from(status) }), headers: m.header_mutation(), body, ..ImmediateResponse::default() };
    ProcessingResponse { response: Some(processing_response::Response::ImmediateResponse(r)), ..ProcessingResponse::default() }
}
