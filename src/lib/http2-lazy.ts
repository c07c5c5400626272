/**
 * http2-lazy stands in for node:http2 inside undici's HTTP/2 client (see undici-hooks.ts). That
 * client reads a few of node:http2's constants when it loads, and connects only for a server that
 * negotiates HTTP/2, which the bridge never asks for. node:http2 loads node:tls and costs about
 * 7 MiB of resident memory; with this stand-in it is loaded only on first use, if ever.
 * The values are the protocol's (RFC 9113) and nghttp2's; a test checks them against node:http2.
 */
export const constants = {
  HTTP2_HEADER_AUTHORITY: ':authority',
  HTTP2_HEADER_METHOD: ':method',
  HTTP2_HEADER_PATH: ':path',
  HTTP2_HEADER_SCHEME: ':scheme',
  HTTP2_HEADER_CONTENT_LENGTH: 'content-length',
  HTTP2_HEADER_EXPECT: 'expect',
  HTTP2_HEADER_STATUS: ':status',
  HTTP2_HEADER_PROTOCOL: ':protocol',
  NGHTTP2_NO_ERROR: 0,
  NGHTTP2_PROTOCOL_ERROR: 1,
  NGHTTP2_REFUSED_STREAM: 7,
  NGHTTP2_CANCEL: 8,
} as const;

/** connect is node:http2's, loaded now. */
export function connect(...args: Parameters<typeof import('node:http2').connect>): ReturnType<typeof import('node:http2').connect> {
  return process.getBuiltinModule('node:http2').connect(...args);
}
