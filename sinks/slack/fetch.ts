/**
 * slackFetch: the fetch the Slack Web API client (@slack/web-api) sends through, on the project's
 * HTTP client (undici; HTTP(S)_PROXY and NO_PROXY honoured; the client's own deadline as its
 * signal) instead of Node's global fetch. It sends what the client sends, a POST of a form or
 * of JSON text, and answers what the client reads of a Response. The sink uploads no file, so a
 * form with files (FormData) is refused before anything is sent.
 */
import type { FetchFunction } from '@slack/web-api';
import type { HttpClient, HttpResponse } from '../../src/kit.ts';

type FetchResponse = Awaited<ReturnType<FetchFunction>>;

/** The most of an answer read: a posted message's answer is a few KiB. */
const MAX_ANSWER_BYTES = 1024 * 1024;

export function slackFetch(client: HttpClient): FetchFunction {
  return async (url, init = {}) => {
    if (init.body !== undefined && typeof init.body !== 'string') throw new Error('a file upload is not something this sink sends');
    const method = init.method === 'GET' ? 'GET' : 'POST';
    const res = await client.request(url, {
      method,
      headers: init.headers ?? {},
      ...(init.body === undefined ? {} : { body: init.body }),
      ...(init.signal === undefined ? {} : { signal: init.signal }),
      maxBodyBytes: MAX_ANSWER_BYTES,
      onOverflow: 'destroy',
    });
    if (res.overflow) throw new Error(`Slack answered more than ${MAX_ANSWER_BYTES} bytes`);
    return responseOf(String(url), res);
  };
}

/** responseOf: what the Slack client reads of a fetch Response, from an answer read whole. */
function responseOf(url: string, res: HttpResponse): FetchResponse {
  const text = res.bytes.toString('utf8');
  const entries = Object.entries(res.headers).flatMap(([name, v]): [string, string][] =>
    v === undefined ? [] : [[name, Array.isArray(v) ? v.join(', ') : v]],
  );
  return {
    ok: res.status >= 200 && res.status < 300,
    status: res.status,
    statusText: '',
    url,
    headers: {
      get: (name: string) => entries.find(([n]) => n === name.toLowerCase())?.[1] ?? null,
      entries: () => entries,
    },
    arrayBuffer: async () => res.bytes.buffer.slice(res.bytes.byteOffset, res.bytes.byteOffset + res.bytes.byteLength) as ArrayBuffer,
    json: async () => JSON.parse(text) as unknown,
    text: async () => text,
  };
}
