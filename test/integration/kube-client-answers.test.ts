/**
 * What the Kubernetes client (src/kube/client.ts) does with every kind of answer a real API server
 * gives: each refusal (401, 403, 404, 409, 410, 422, 429 as a Status and as API Priority and
 * Fairness's plain text, 5xx) rejects at once with a KubeApiError carrying the status and the body
 * as sent, the request made once (the caller classifies: the sink retries 409, 429 and 5xx through
 * the dispatcher, the Lease store reports the store unavailable); a 401 asks again only when a
 * fresh credential can be had; an answer that never comes ends at the client's deadline; a 2xx
 * that is not JSON, or not a list, is refused. Against testkit/kube-apiserver.ts, a stand-in for
 * the API server written from the API reference (no API server runs on this machine), which
 * refuses as the API server does (testkit/kube-faults.ts).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { KubeApiError, KubeConnection, KubeUnreadableError } from '../../src/kube/client.ts';
import { hang, type KubeFault, later, raw, refusal, throttled } from '../../testkit/kube-faults.ts';
import { KUBE_TOKEN } from '../../testkit/kube-objects.ts';
import { CA_DATA, EXEC_V1, useStandIn, writeKubeconfig, writePlugin } from '../../testkit/kubeconfig.ts';

const { api, dir } = useStandIn('se-bridge-test-kube-answers-');
const NODE = '/api/v1/nodes/n0';
const opened: KubeConnection[] = [];
afterEach(() => {
  for (const k of opened.splice(0)) k.close();
});

/** connect: a connection to the stand-in whose user is `user` (a token by default). */
function connect(name: string, user: Record<string, unknown> = { token: KUBE_TOKEN }, options = {}): KubeConnection {
  const file = writeKubeconfig(dir, name, { server: api.url, cluster: { 'certificate-authority-data': CA_DATA }, user });
  const kube = KubeConnection.open(file, options)!;
  opened.push(kube);
  return kube;
}
const failure = (p: Promise<unknown>) =>
  p.then(
    () => null,
    (e: unknown) => e as Error,
  );
/** asked: how many requests reached the stand-in while `work` ran, and what `work` ended with. */
async function asked<T>(work: () => Promise<T>): Promise<{ requests: number; outcome: T }> {
  const before = api.requests.length;
  const outcome = await work();
  return { requests: api.requests.length - before, outcome };
}

describe('refusals', () => {
  it('each refusal of the API server rejects at once with KUBE_CLIENT_STATUS, its status and the Status as sent, asked once', async () => {
    const kube = connect('refusals');
    for (const code of [400, 403, 404, 405, 409, 410, 422, 429, 500, 503, 504]) {
      api.faults.next(NODE, refusal(code));
      const { requests, outcome: err } = await asked(() => failure(kube.request({ method: 'GET', path: NODE })));
      expect(err, String(code)).toBeInstanceOf(KubeApiError);
      expect(err).toMatchObject({ code: 'KUBE_CLIENT_STATUS', status: code, message: `GET ${NODE}: HTTP ${code}` });
      expect(JSON.parse((err as KubeApiError).body)).toEqual(expect.objectContaining({ kind: 'Status', status: 'Failure', code }));
      expect(requests, String(code)).toBe(1);
    }
    // nothing left waiting: the next read is the Node
    expect(await kube.request({ method: 'GET', path: NODE })).toMatchObject({ metadata: { name: 'n0' } });
  });

  it('429 from API Priority and Fairness (text/plain, Retry-After) is not waited out by the client: the caller has it at once', async () => {
    const kube = connect('throttled');
    api.faults.next(NODE, throttled(30));
    const { requests, outcome: err } = await asked(() => failure(kube.request({ method: 'GET', path: NODE })));
    expect(err).toBeInstanceOf(KubeApiError);
    expect(err).toMatchObject({ status: 429, body: 'Too many requests, please try again later.\n' });
    expect(requests).toBe(1);
  });

  it('409 on a conditional update and 422 on an invalid object, from the stand-in itself: refused, nothing changed', async () => {
    const kube = connect('conflict');
    const path = '/apis/coordination.k8s.io/v1/namespaces/se-bridge/leases';
    const lease = await kube.request<{ metadata: { resourceVersion: string } }>({
      method: 'POST',
      path,
      body: { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: 'slot-0' }, spec: {} },
    });
    const stale = { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: 'slot-0', resourceVersion: '1' }, spec: {} };
    const conflict = await failure(kube.request({ method: 'PUT', path: `${path}/slot-0`, body: stale }));
    expect(conflict).toMatchObject({ status: 409 });
    expect(JSON.parse((conflict as KubeApiError).body)).toMatchObject({ reason: 'Conflict', details: { name: 'slot-0', kind: 'leases' } });
    const invalid = await failure(kube.request({ method: 'POST', path, body: { metadata: { name: 'Not_A_Name' }, spec: {} } }));
    expect(invalid).toMatchObject({ status: 422 });
    expect(JSON.parse((invalid as KubeApiError).body)).toMatchObject({ reason: 'Invalid' });
    expect([...api.leases.leases.values()].map((l) => [l.metadata.name, l.metadata.resourceVersion])).toEqual([
      ['slot-0', lease.metadata.resourceVersion],
    ]);
  });
});

describe('401', () => {
  it('a token from the kubeconfig: refused once, not asked again (no fresher one can be had)', async () => {
    const kube = connect('revoked', { token: 'revoked-token' });
    const { requests, outcome: err } = await asked(() => failure(kube.request({ method: 'GET', path: NODE })));
    expect(err).toMatchObject({ status: 401 });
    expect(requests).toBe(1);
  });

  it('a token file: read again after a 401 and the call made once more; still refused, the 401 is the answer', async () => {
    const file = join(dir, 'token');
    writeFileSync(file, 'old-token\n');
    const kube = connect('token-file', { tokenFile: 'token' });
    api.tokens.add('old-token');
    expect(await kube.request({ method: 'GET', path: NODE })).toMatchObject({ metadata: { name: 'n0' } });
    expect(api.requests.at(-1)!.authorization).toBe('Bearer old-token');
    // a new token in the file, the old one still taken: the file is read again only after a minute
    writeFileSync(file, 'new-token\n');
    await kube.request({ method: 'GET', path: NODE });
    expect(api.requests.at(-1)!.authorization).toBe('Bearer old-token');
    // rotated: the old token refused, the file read again at once (not only after a minute)
    api.tokens.delete('old-token');
    writeFileSync(file, 'new-token\n');
    api.tokens.add('new-token');
    const rotated = await asked(() => kube.request({ method: 'GET', path: NODE }));
    expect(rotated.requests).toBe(2);
    expect(api.requests.at(-1)!.authorization).toBe('Bearer new-token');
    // revoked and not replaced: two requests, then the 401
    api.tokens.delete('new-token');
    const { requests, outcome: err } = await asked(() => failure(kube.request({ method: 'GET', path: NODE })));
    expect(err).toMatchObject({ status: 401 });
    expect(requests).toBe(2);
  });

  it('a 401 that comes back late, for a credential already replaced, does not throw the new one away: the plugin is not run again', async () => {
    const issued = join(dir, 'late-issued');
    writeFileSync(issued, 'late-1');
    api.tokens.add('late-1');
    const command = writePlugin(dir, 'late', `answer({ token: readFileSync(${JSON.stringify(issued)}, 'utf8') });`);
    const kube = connect('late', { exec: { apiVersion: EXEC_V1, command, interactiveMode: 'Never' } });
    expect(await kube.request({ method: 'GET', path: NODE })).toMatchObject({ metadata: { name: 'n0' } });
    // the slow call goes with late-1 and is held; the quick one is refused, and a new credential fetched for it
    let release = (_: KubeFault) => {};
    api.faults.next(NODE, later(new Promise<KubeFault>((r) => (release = r))));
    const before = api.requests.length;
    const slow = kube.request({ method: 'GET', path: NODE });
    for (let i = 0; i < 200 && api.requests.length === before; i++) await new Promise((r) => setTimeout(r, 10));
    writeFileSync(issued, 'late-2');
    api.tokens.add('late-2');
    api.faults.next(NODE, refusal(401));
    expect(await kube.request({ method: 'GET', path: NODE })).toMatchObject({ metadata: { name: 'n0' } });
    expect(readFileSync(join(dir, 'late.runs'), 'utf8').trim().split('\n')).toHaveLength(2);
    // the slow call's 401 arrives now: it asks again with late-2, the credential in hand
    writeFileSync(issued, 'late-3');
    api.tokens.add('late-3');
    release(refusal(401));
    expect(await slow).toMatchObject({ metadata: { name: 'n0' } });
    expect(api.requests.at(-1)!.authorization).toBe('Bearer late-2');
    expect(readFileSync(join(dir, 'late.runs'), 'utf8').trim().split('\n')).toHaveLength(2);
  });

  it('a token file that cannot be read: KUBE_CLIENT_CONFIG naming it, and no request', async () => {
    const kube = connect('no-token-file', { tokenFile: 'missing-token' });
    const { requests, outcome: err } = await asked(() => failure(kube.request({ method: 'GET', path: NODE })));
    expect(err).toMatchObject({ code: 'KUBE_CLIENT_CONFIG', message: `cannot read the token file ${join(dir, 'missing-token')}: ENOENT` });
    expect(requests).toBe(0);
  });
});

describe('an answer that never comes', () => {
  it("the client's deadline ends the call, saying so; the caller's sooner signal ends it first", async () => {
    const kube = connect('hang', { token: KUBE_TOKEN }, { deadlineMs: 300 });
    api.faults.next(NODE, hang);
    const { requests, outcome: err } = await asked(() => failure(kube.request({ method: 'GET', path: NODE })));
    expect(err!.message).toBe(`GET ${NODE}: no answer within 0.3 s`);
    // the network's error is its cause, which the callers read (the sink's "cannot reach the Kubernetes API server (ABORT_ERR)")
    expect(err!.cause).toMatchObject({ code: 'ABORT_ERR' });
    expect(requests).toBe(1);
    // a caller that gives up sooner: its own abort, never called the client's deadline
    const patient = connect('hang-caller', { token: KUBE_TOKEN }, { deadlineMs: 60_000 });
    api.faults.next(NODE, hang);
    const quit = new AbortController();
    const call = failure(patient.request({ method: 'GET', path: NODE, signal: quit.signal }));
    const before = api.requests.length;
    for (let i = 0; i < 200 && api.requests.length === before; i++) await new Promise((r) => setTimeout(r, 10));
    quit.abort(new Error('the caller gave up'));
    expect((await call)!.message).toBe(`GET ${NODE}: ABORT_ERR`);
    // the connection is still good for the next call
    expect(await patient.request({ method: 'GET', path: NODE })).toMatchObject({ metadata: { name: 'n0' } });
  });
});

describe('2xx answers', () => {
  it('an empty body is undefined; a body that is not JSON is KUBE_CLIENT_UNREADABLE; JSON is given as parsed', async () => {
    const kube = connect('bodies');
    api.faults.next(
      NODE,
      raw(200, 'application/json', ''),
      raw(200, 'text/html', '<html>sign in</html>'),
      raw(201, 'application/json', '[1]'),
      raw(299, 'application/json', '{}'),
    );
    expect(await kube.request({ method: 'GET', path: NODE })).toBeUndefined();
    const html = await failure(kube.request({ method: 'GET', path: NODE }));
    expect(html).toBeInstanceOf(KubeUnreadableError);
    expect(html).toMatchObject({ code: 'KUBE_CLIENT_UNREADABLE', message: `GET ${NODE}: the answer is not JSON` });
    expect(await kube.request({ method: 'GET', path: NODE })).toEqual([1]);
    expect(await kube.request({ method: 'GET', path: NODE })).toEqual({});
  });

  it('a status outside 2xx that is not a Status (a proxy in front): KubeApiError with the text as sent', async () => {
    const kube = connect('proxy-page');
    api.faults.next(NODE, raw(502, 'text/html', '<html>Bad Gateway</html>'), raw(302, 'text/html', ''), raw(99, 'application/json', '{}'));
    for (const [status, body] of [
      [502, '<html>Bad Gateway</html>'],
      [302, ''],
    ] as const)
      expect(await failure(kube.request({ method: 'GET', path: NODE }))).toMatchObject({ status, body });
    // a status under 100 (a broken server's) is no answer at all: the HTTP client fails the call, and nothing is read as one
    const broken = await failure(kube.request({ method: 'GET', path: NODE }));
    expect(broken).not.toBeInstanceOf(KubeApiError);
    expect(broken).toMatchObject({ message: expect.stringMatching(/^GET \/api\/v1\/nodes\/n0: /) });
  });

  it('what is sent: JSON with its content type (application/json unless named), the query without unset keys', async () => {
    const kube = connect('sent');
    const path = '/apis/coordination.k8s.io/v1/namespaces/sent/leases';
    await kube.request({ method: 'POST', path, body: { metadata: { name: 'a' }, spec: {} } });
    await kube.request({ method: 'GET', path, query: { labelSelector: 'x=y', fieldSelector: undefined } });
    await kube.request({
      method: 'PATCH',
      path: NODE,
      body: { spec: { unschedulable: true } },
      contentType: 'application/merge-patch+json',
    });
    await kube.request({ method: 'GET', path: NODE });
    const sent = api.requests.slice(-4).map((r) => [r.method, r.path, r.contentType, r.body, r.authorization]);
    expect(sent).toEqual([
      ['POST', path, 'application/json', { metadata: { name: 'a' }, spec: {} }, `Bearer ${KUBE_TOKEN}`],
      ['GET', `${path}?labelSelector=x%3Dy`, undefined, null, `Bearer ${KUBE_TOKEN}`],
      ['PATCH', NODE, 'application/merge-patch+json', { spec: { unschedulable: true } }, `Bearer ${KUBE_TOKEN}`],
      ['GET', NODE, undefined, null, `Bearer ${KUBE_TOKEN}`],
    ]);
  });
});

describe('lists', () => {
  const NODES = '/api/v1/nodes';
  type Named = { metadata: { name: string } };
  /** names: a fold keeping the names, counting its starts. */
  const names = () => {
    const fold = {
      starts: 0,
      start: (): string[] => (fold.starts++, []),
      page: (kept: string[], items: readonly Named[]) => [...kept, ...items.map((n) => n.metadata.name)],
    };
    return fold;
  };
  const listed = () => api.requests.filter((r) => r.path.startsWith(`${NODES}?`)).map((r) => new URL(r.path, 'https://x').searchParams);
  const more = () => {
    for (const n of ['n1', 'n2', 'n3', 'n4']) if (!api.nodes.has(n)) api.addNode(n);
  };

  it('the caller says the page size and the selectors; a selector left unset is not sent; done stops the list', async () => {
    more();
    const kube = connect('list-limit');
    const before = listed().length;
    const fold = names();
    expect(await kube.list({ path: NODES, limit: 2, query: { labelSelector: 'a!=b', fieldSelector: undefined } }, fold)).toEqual([
      'n0',
      'n1',
      'n2',
      'n3',
      'n4',
    ]);
    const asked = listed().slice(before);
    expect(asked.map((q) => [q.get('limit'), q.get('labelSelector'), q.has('fieldSelector'), q.has('continue')])).toEqual([
      ['2', 'a!=b', false, false],
      ['2', 'a!=b', false, true],
      ['2', 'a!=b', false, true],
    ]);
    // a done that says "not yet" reads on; one that says so stops at once
    const notYet = await kube.list({ path: NODES, limit: 2 }, { ...names(), done: (kept) => kept.includes('n4') });
    expect(notYet).toEqual(['n0', 'n1', 'n2', 'n3', 'n4']);
    const firstPage = await kube.list({ path: NODES, limit: 2 }, { ...names(), done: () => true });
    expect(firstPage).toEqual(['n0', 'n1']);
  });

  it('410 on the first page is not a stale continue token: it fails at once; another refusal on a later page is never started again', async () => {
    more();
    const kube = connect('list-refused');
    api.faults.next(NODES, refusal(410));
    const first = await asked(() => failure(kube.list({ path: NODES, limit: 2 }, names())));
    expect(first.outcome).toMatchObject({ status: 410 });
    expect(first.requests).toBe(1);
    // a 500 on the second page: thrown, the list not started again
    const fold = names();
    const failing = {
      ...fold,
      page: (kept: string[], items: readonly Named[]) => (api.faults.next(NODES, refusal(500)), fold.page(kept, items)),
    };
    const later = await asked(() => failure(kube.list({ path: NODES, limit: 2 }, failing)));
    expect(later.outcome).toMatchObject({ status: 500 });
    expect(later.requests).toBe(2);
    expect(fold.starts).toBe(1);
    // an expired token on the second page: the caller starts again, once, and has every item once
    const again = names();
    api.chunks.expireContinues = 1;
    expect(await kube.list({ path: NODES, limit: 2 }, again)).toEqual(['n0', 'n1', 'n2', 'n3', 'n4']);
    expect(again.starts).toBe(2);
  });

  it('an envelope with no items or no metadata is an empty page; an answer that is not a list is KUBE_CLIENT_UNREADABLE', async () => {
    const kube = connect('list-shapes');
    api.faults.next(
      NODES,
      raw(200, 'application/json', '{"kind":"NodeList","metadata":null,"items":null}'),
      raw(200, 'application/json', '{"kind":"NodeList","metadata":{"continue":""},"items":[{"metadata":{"name":"x"}}]}'),
    );
    expect(await asked(() => kube.list({ path: NODES }, names()))).toEqual({ requests: 1, outcome: [] });
    expect(await asked(() => kube.list({ path: NODES }, names()))).toEqual({ requests: 1, outcome: ['x'] });
    for (const body of ['{"kind":"Status"}', '{"items":{}}', '""']) {
      api.faults.next(NODES, raw(200, 'application/json', body));
      const err = await failure(kube.list({ path: NODES }, names()));
      expect(err, body).toBeInstanceOf(KubeUnreadableError);
      expect(err!.message).toBe(`GET ${NODES}: the answer is not a list`);
    }
  });
});

describe('the connection', () => {
  it('closed, it opens again for the next call; a signal aborted before the call ends it with its reason', async () => {
    const kube = connect('reopen');
    expect(await kube.request({ method: 'GET', path: NODE })).toMatchObject({ metadata: { name: 'n0' } });
    kube.close();
    expect(await kube.request({ method: 'GET', path: NODE })).toMatchObject({ metadata: { name: 'n0' } });
    const gone = connect('aborted');
    const quit = new AbortController();
    quit.abort(new Error('shutting down'));
    const { requests, outcome: err } = await asked(() => failure(gone.request({ method: 'GET', path: NODE, signal: quit.signal })));
    expect(err!.message).toBe('shutting down');
    expect(requests).toBe(0);
  });
});
