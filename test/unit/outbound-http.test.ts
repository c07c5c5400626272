/**
 * Every outbound request of the bridge and the relay goes through the project's HTTP client
 * (src/lib/http-client.ts), which is undici's: read from the code of src/ and sinks/, every file,
 * by testkit/outbound-http.ts. What is seen on the wire is test/integration/undici-wire.test.ts's.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { outboundHttpOutsideClient } from '../../testkit/outbound-http.ts';
import { ROOT } from '../helpers.ts';

/**
 * The files that may: the client itself, its undici half (loaded at its first request), and the
 * stand-in for node:http2 that undici's own HTTP/2 client connects through (src/lib/http2-lazy.ts,
 * loaded in its place).
 */
const THE_CLIENT = ['src/lib/undici-dispatcher.ts', 'src/lib/http-client.ts', 'src/lib/http2-lazy.ts'];

function sources(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { recursive: true, encoding: 'utf8' })
    .filter((f) => /\.ts$/.test(f) && !/\.test\.ts$/.test(f))
    .map((f) => join(dir, f));
}

describe('outbound HTTP goes through the client on undici', () => {
  it('no module of src/ or sinks/ but the client makes a request, opens a connection or imports undici', () => {
    const files = [...sources('src'), ...sources('sinks')].map((f) => relative(ROOT, join(ROOT, f)));
    expect(files.length).toBeGreaterThan(200);
    const found = files
      .filter((f) => !THE_CLIENT.includes(f))
      .flatMap((f) => outboundHttpOutsideClient(f, readFileSync(join(ROOT, f), 'utf8')));
    expect(found).toEqual([]);
    // the client is what it says: undici's dispatchers, and nothing of Node's own client
    const client = outboundHttpOutsideClient(THE_CLIENT[0]!, readFileSync(join(ROOT, THE_CLIENT[0]!), 'utf8'));
    expect(client.filter((f) => !/imports undici\//.test(f))).toEqual([]);
    expect(client.filter((f) => /imports undici\/lib\/dispatcher\/(agent|env-http-proxy-agent|proxy-agent)\.js/.test(f))).toHaveLength(3);
  });

  it('each other way of making a request is found, in code and not in comments or strings', () => {
    const cases: [string, RegExp][] = [
      ["const r = await fetch('http://x');", /calls fetch\(\)/],
      ["new WebSocket('ws://x');", /makes a WebSocket/],
      ["import { request } from 'node:http';", /imports request from node:http/],
      ["import { get as g } from 'https';", /imports g from https/],
      ["import * as net from 'node:net'; net.connect(80);", /uses net\.connect/],
      ["import tls from 'node:tls'; tls.connect({ port: 1 });", /uses tls\.connect/],
      ["const h = process.getBuiltinModule('node:https'); h.request('https://x');", /uses h\.request/],
      ["process.getBuiltinModule('node:http').get('http://x');", /uses process\.getBuiltinModule\('node:http'\)\.get/],
      ["const { request } = process.getBuiltinModule('node:http');", /takes request from/],
      ["import { http } from '../lib/node-http.ts'; http.request({ socketPath: '/s' });", /uses http\.request/],
      ["import { http } from '../lib/node-http.ts'; new http.Agent({ keepAlive: true });", /uses http\.Agent/],
      ["import { Agent } from 'undici';", /imports undici/],
      ["import Pool from 'undici/lib/dispatcher/pool.js';", /imports undici\/lib\/dispatcher\/pool\.js/],
    ];
    for (const [code, said] of cases) expect(outboundHttpOutsideClient('x.ts', code), code).toEqual([expect.stringMatching(said)]);
    const innocent = [
      "// fetch('http://x') in a comment, and http.request in a string: 'http.request(url)'",
      "import type { Agent } from 'node:http'; import type { Dispatcher } from 'undici';",
      "import { http } from '../lib/node-http.ts'; http.createServer(() => undefined);",
      "import { createServer } from 'node:net'; createServer();",
      'this.#fetch(); client.request(url, {});',
    ];
    for (const code of innocent) expect(outboundHttpOutsideClient('x.ts', code), code).toEqual([]);
  });
});
