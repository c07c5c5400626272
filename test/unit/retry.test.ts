import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { ImdsError } from '../../src/imds/errors.ts';
import { GONE_LIMIT_MS, GoneWatch, retryImds } from '../../src/imds/retry.ts';
import { readBounded } from '../../src/lib/http-body.ts';
import { parseHostPort } from '../../src/lib/validators.ts';

describe('the one IMDS retry policy', () => {
  const fast = { intervalMs: 1, maxPauseMs: 2 };

  it('retries what may pass, and returns the first success', async () => {
    const codes = ['IMDS_SERVER_ERROR', 'IMDS_RATE_LIMITED', 'IMDS_TIMEOUT', 'IMDS_NETWORK', 'IMDS_GONE'] as const;
    let n = 0;
    const out = await retryImds(async () => {
      const code = codes[n++];
      if (code !== undefined) throw new ImdsError(code, code);
      return 'document';
    }, fast);
    expect(out).toBe('document');
    expect(n).toBe(codes.length + 1);
  });

  it('gives up at once on what will not pass (400, 404), and on errors that are not IMDS errors', async () => {
    for (const err of [new ImdsError('IMDS_BAD_REQUEST', 'x'), new ImdsError('IMDS_NOT_FOUND', 'x'), new TypeError('ours')]) {
      let n = 0;
      await expect(
        retryImds(async () => {
          n += 1;
          throw err;
        }, fast),
      ).rejects.toBe(err);
      expect(n).toBe(1);
    }
  });

  it('stops after maxAttempts, with the last error', async () => {
    let n = 0;
    await expect(
      retryImds(
        async () => {
          n += 1;
          throw new ImdsError('IMDS_SERVER_ERROR', `attempt ${n}`);
        },
        { ...fast, maxAttempts: 4 },
      ),
    ).rejects.toThrow('attempt 4');
    expect(n).toBe(4);
  });

  it('stops at the deadline, but keeps trying 410 for the documented 70 s', async () => {
    let n = 0;
    await expect(
      retryImds(
        async () => {
          n += 1;
          throw new ImdsError('IMDS_SERVER_ERROR', 'down');
        },
        { intervalMs: 20, maxPauseMs: 20, deadlineMs: 50 },
      ),
    ).rejects.toThrow('down');
    expect(n).toBeGreaterThan(1);
    expect(n).toBeLessThan(20);
    expect(GONE_LIMIT_MS).toBe(70_000);
  });

  it('GoneWatch says once when 410s have lasted past 70 s, and starts over after anything else', () => {
    const gone = new ImdsError('IMDS_GONE', 'gone');
    const w = new GoneWatch();
    expect(w.failed(gone, 0)).toBe(false);
    expect(w.failed(gone, 70_000)).toBe(false);
    expect(w.failed(gone, 70_001)).toBe(true);
    expect(w.sinceMs(80_000)).toBe(80_000);
    expect(w.failed(gone, 90_000)).toBe(false);
    expect(w.failed(new ImdsError('IMDS_SERVER_ERROR', '500'), 91_000)).toBe(false);
    expect(w.failed(gone, 100_000)).toBe(false);
    expect(w.failed(gone, 170_001)).toBe(true);
    w.succeeded();
    expect(w.sinceMs(200_000)).toBe(0);
  });
});

describe('the shared helpers', () => {
  it('readBounded keeps at most maxBytes and says when there was more', async () => {
    const body = () => Readable.from([Buffer.from('abc'), Buffer.from('defg'), Buffer.from('hij')]);
    expect(await readBounded(body(), 100, 'drain')).toEqual({ bytes: Buffer.from('abcdefghij'), overflow: false });
    for (const mode of ['destroy', 'resume', 'drain'] as const) {
      const r = await readBounded(body(), 5, mode);
      expect(r.overflow).toBe(true);
      expect(r.bytes.toString()).toBe('abcde');
    }
  });

  it('parseHostPort reads names, IPv4 and bracketed IPv6, and refuses the rest', () => {
    expect(parseHostPort('127.0.0.1:8787')).toEqual({ host: '127.0.0.1', port: 8787 });
    expect(parseHostPort('[::1]:0')).toEqual({ host: '::1', port: 0 });
    expect(parseHostPort('localhost:65535')).toEqual({ host: 'localhost', port: 65535 });
    for (const bad of ['127.0.0.1', ':8787', '127.0.0.1:65536', '::1:80', 'host:port', 'a b:1', '']) expect(parseHostPort(bad)).toBeNull();
  });
});
