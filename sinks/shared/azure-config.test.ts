/** The configuration the eventhubs and servicebus sinks share (src/azure/messaging.ts): a connection string, or a namespace with a credential. */
import { describe, expect, it } from 'vitest';
import { SinkConfig } from '../../src/config/schema.ts';

describe('Azure sink configuration', () => {
  it.each<[string, Record<string, unknown>, string]>([
    [
      'neither connection string nor namespace',
      { type: 'eventhubs', eventHubName: 'h' },
      'connectionString: set either connectionString or fullyQualifiedNamespace (with credential)',
    ],
    [
      'no hub name anywhere',
      { type: 'eventhubs', connectionString: 'Endpoint=sb://x.servicebus.windows.net/;SharedAccessKeyName=k;SharedAccessKey=v' },
      'eventHubName: is required when the connection string has no EntityPath',
    ],
    [
      'credential with a connection string',
      {
        type: 'servicebus',
        entity: 'q',
        connectionString: 'Endpoint=sb://x/;SharedAccessKeyName=k;SharedAccessKey=v',
        credential: { kind: 'default' },
      },
      'credential: goes with fullyQualifiedNamespace, not with connectionString',
    ],
    [
      'not a connection string',
      { type: 'servicebus', entity: 'q', connectionString: 'hello' },
      'connectionString: must be a Service Bus connection string',
    ],
  ])('%s', (_n, raw, message) => {
    const r = SinkConfig.safeParse({ name: 'x', ...raw });
    expect(r.success).toBe(false);
    const text = r.error!.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('\n');
    expect(text).toContain(message);
  });

  it('accepts a namespace with a managed identity (user-assigned) or the default credential', () => {
    expect(
      SinkConfig.safeParse({
        name: 'x',
        type: 'eventhubs',
        fullyQualifiedNamespace: 'myns.servicebus.windows.net',
        eventHubName: 'h',
        credential: { kind: 'managedIdentity', clientId: '5d1c4a9e-0b7f-4e2a-9c3d-1f2e3a4b5c6d' },
      }).success,
    ).toBe(true);
    expect(
      SinkConfig.safeParse({
        name: 'x',
        type: 'servicebus',
        fullyQualifiedNamespace: 'myns.servicebus.windows.net',
        entity: 'q',
        credential: { kind: 'default' },
      }).success,
    ).toBe(true);
  });
});
