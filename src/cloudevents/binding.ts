/**
 * One shape for every CloudEvents protocol binding, as the CloudEvents SDKs have it: a
 * binding encodes an event in binary mode (the data as the body, every other attribute as
 * protocol metadata) or in structured mode (the whole event as an
 * `application/cloudevents+json` body).
 *
 * @see https://github.com/cloudevents/spec/blob/v1.0.2/cloudevents/spec.md#message
 */
import type { BridgeEvent } from '../pipeline/cloudevent.ts';

export type BindingMode = 'binary' | 'structured';

export interface Binding<M> {
  binary(event: BridgeEvent): M;
  structured(event: BridgeEvent): M;
}

export const STRUCTURED_CONTENT_TYPE = 'application/cloudevents+json; charset=utf-8';

/** attributes lists the context attributes a binary-mode message carries as metadata: all but the data and its content type. */
export function attributes(event: BridgeEvent): [name: string, value: string | number | boolean][] {
  const out: [string, string | number | boolean][] = [];
  for (const [name, value] of Object.entries(event)) {
    if (name === 'data' || name === 'data_base64' || name === 'datacontenttype' || value === undefined || value === null) continue;
    out.push([name, typeof value === 'number' || typeof value === 'boolean' ? value : String(value)]);
  }
  return out;
}

/** dataOf is a binary-mode body: the event's data as JSON, and its content type. */
export function dataOf(event: BridgeEvent): { body: string; contentType: string } {
  return { body: JSON.stringify(event.data ?? null), contentType: event.datacontenttype ?? 'application/json' };
}
