/**
 * The CloudEvents AMQP binding, shared by the eventhubs and servicebus sinks.
 * binary: the event's data as the body bytes with content-type application/json, every other
 * attribute an application property `cloudEvents_<name>`; structured: the whole event as an
 * `application/cloudevents+json` body. Bodies are bytes, so the SDKs do not encode them again.
 *
 * @see https://github.com/cloudevents/spec/blob/v1.0.2/cloudevents/bindings/amqp-protocol-binding.md
 */
import type { BridgeEvent } from '../../contract.ts';

export interface AmqpPayload {
  body: Buffer;
  contentType: string;
  properties: Record<string, string | number | boolean>;
}

export const PROPERTY_PREFIX = 'cloudEvents_';

export function toAmqpPayload(event: BridgeEvent, mode: 'binary' | 'structured'): AmqpPayload {
  if (mode === 'structured') {
    return { body: Buffer.from(JSON.stringify(event)), contentType: 'application/cloudevents+json; charset=utf-8', properties: {} };
  }
  const properties: Record<string, string | number | boolean> = {};
  for (const [name, value] of Object.entries(event.toJSON())) {
    if (name === 'data' || name === 'data_base64' || name === 'datacontenttype' || value === undefined || value === null) continue;
    properties[`${PROPERTY_PREFIX}${name}`] = typeof value === 'number' || typeof value === 'boolean' ? value : String(value);
  }
  return { body: Buffer.from(JSON.stringify(event.data ?? null)), contentType: event.datacontenttype ?? 'application/json', properties };
}

/** entityPathOf reads EntityPath from an Azure connection string, if it has one. */
export function entityPathOf(connectionString: string): string | undefined {
  const m = /(?:^|;)\s*EntityPath=([^;]+)/i.exec(connectionString);
  return m?.[1]?.trim();
}

/** isConnectionString tells whether a string looks like an Azure messaging connection string. */
export function isConnectionString(value: string): boolean {
  return /(?:^|;)\s*Endpoint=sb:\/\//i.test(value) && /SharedAccessKey(Name)?=|SharedAccessSignature=/i.test(value);
}
