/** The stdout sink on a real stream: a readable line or a CloudEvent per line, and a failed write retried. */
import { PassThrough, Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { formatEventLine } from '../../src/kit.ts';
import { bridgeEvents, silentLogger } from '../../test/helpers.ts';
import { configSchema, stdoutSink } from './index.ts';

async function sendTo(stdout: NodeJS.WritableStream, format?: string) {
  const sink = await stdoutSink.create(configSchema.parse({ type: 'stdout', name: 'out', ...(format ? { format } : {}) }), {
    logger: silentLogger,
    stdout,
  });
  return (events: ReturnType<typeof bridgeEvents>) => sink.send(events, { signal: new AbortController().signal });
}

function collect(): { stream: PassThrough; text: () => string } {
  const stream = new PassThrough();
  const chunks: Buffer[] = [];
  stream.on('data', (c: Buffer) => chunks.push(c));
  return { stream, text: () => Buffer.concat(chunks).toString('utf8') };
}

describe('stdout sink', () => {
  it('writes one readable line per event by default', async () => {
    const out = collect();
    const events = bridgeEvents(2);
    expect(await (await sendTo(out.stream))(events)).toEqual([{ status: 'delivered' }, { status: 'delivered' }]);
    expect(out.text()).toBe(events.map((e) => `${formatEventLine(e)}\n`).join(''));
    expect(out.text()).not.toContain('"specversion"');
  });

  it('writes one CloudEvent in the JSON event format per line with format: json', async () => {
    const out = collect();
    const events = bridgeEvents(3);
    await (
      await sendTo(out.stream, 'json')
    )(events);
    const parsed = out
      .text()
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as { id: string; specversion: string });
    expect(parsed.map((e) => e.id)).toEqual(events.map((e) => e.id));
    expect(parsed.every((e) => e.specversion === '1.0')).toBe(true);
  });

  it('retries a write the stream refuses (a closed pipe), naming its code', async () => {
    const broken = new Writable({
      write(_chunk, _encoding, done) {
        done(Object.assign(new Error('broken pipe'), { code: 'EPIPE' }));
      },
    });
    broken.on('error', () => undefined);
    expect(await (await sendTo(broken))(bridgeEvents(1))).toEqual([{ status: 'retry', reason: 'stdout write failed: EPIPE' }]);
  });
});
