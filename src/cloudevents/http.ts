/**
 * The CloudEvents HTTP binding: binary mode puts every attribute in a `ce-<name>` header,
 * percent-encoded as the binding requires; structured mode sends the event as JSON.
 *
 * @see https://github.com/cloudevents/spec/blob/v1.0.2/cloudevents/bindings/http-protocol-binding.md
 */
import { attributes, dataOf, STRUCTURED_CONTENT_TYPE, type Binding } from './binding.ts';

export interface HttpMessage {
  readonly headers: Record<string, string>;
  readonly body: string;
}

/**
 * percentEncode encodes a header value as the HTTP binding requires: space, `"`, `%` and
 * everything outside printable ASCII (U+0021..U+007E), as UTF-8 bytes.
 */
export function percentEncode(value: string): string {
  let out = '';
  for (const ch of value) {
    const cp = ch.codePointAt(0)!;
    if (cp > 0x20 && cp < 0x7f && ch !== '"' && ch !== '%') out += ch;
    else for (const b of Buffer.from(ch, 'utf8')) out += `%${b.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

export const HTTP: Binding<HttpMessage> = {
  binary(event) {
    const data = dataOf(event);
    const headers: Record<string, string> = { 'content-type': data.contentType };
    for (const [name, value] of attributes(event)) headers[`ce-${name}`] = percentEncode(String(value));
    return { headers, body: data.body };
  },
  structured(event) {
    return { headers: { 'content-type': STRUCTURED_CONTENT_TYPE }, body: JSON.stringify(event) };
  },
};
