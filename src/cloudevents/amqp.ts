/**
 * The CloudEvents AMQP binding, shared by the eventhubs and servicebus sinks.
 * binary: the event's data as the body bytes with content-type application/json, every other
 * attribute an application property `cloudEvents_<name>`; structured: the whole event as an
 * `application/cloudevents+json` body. Bodies are bytes, so the SDKs do not encode them again.
 *
 * @see https://github.com/cloudevents/spec/blob/v1.0.2/cloudevents/bindings/amqp-protocol-binding.md
 */
import type { BridgeEvent } from '../pipeline/cloudevent.ts';
import { attributes, dataOf, STRUCTURED_CONTENT_TYPE, type Binding, type BindingMode } from './binding.ts';

export interface AmqpPayload {
  body: Buffer;
  contentType: string;
  properties: Record<string, string | number | boolean>;
}

const PROPERTY_PREFIX = 'cloudEvents_';

export const AMQP: Binding<AmqpPayload> = {
  binary(event) {
    const data = dataOf(event);
    const properties = Object.fromEntries(attributes(event).map(([name, value]) => [`${PROPERTY_PREFIX}${name}`, value]));
    return { body: Buffer.from(data.body), contentType: data.contentType, properties };
  },
  structured(event) {
    return { body: Buffer.from(JSON.stringify(event)), contentType: STRUCTURED_CONTENT_TYPE, properties: {} };
  },
};

export function toAmqpPayload(event: BridgeEvent, mode: BindingMode): AmqpPayload {
  return AMQP[mode](event);
}
