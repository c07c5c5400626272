/**
 * Webhook templates through the daemon, over the wire to a real HTTP peer: the body, URL and
 * headers a template makes, signing kept, a template that gives null skips the event, one that
 * fails on an event dead-letters that event alone, one that runs too long is stopped; on a
 * machine busy with other processes (busy loops in child processes, while it renders), a
 * template's limit counts its own CPU time: thirty renders at once all deliver, and one that loops
 * for ever is still stopped for good; and at the command line, a template that does not compile
 * (validate, exit 2, its position) and `se-bridge template test`.
 */
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { startBridge, stopAll } from '../../testkit/harness.ts';
import { HttpPeer } from '../../testkit/http-peer.ts';
import { Template } from './templates.ts';
import { webhookSink, type WebhookConfig } from './index.ts';
import { SinkConfig } from '../../src/config/schema.ts';
import type { Outcome, Sink } from '../../src/sinks/contract.ts';
import { classifyNetworkError } from '../../src/sinks/classify.ts';
import { identityFrom } from '../../src/imds/identity.ts';
import { scenarioTimeline } from '../../src/simulator/timeline.ts';
import { cli } from '../../test/e2e/process.ts';
import { ROOT, silentLogger, tempDir, waitFor } from '../../test/helpers.ts';

let peer: HttpPeer;
beforeEach(async () => {
  peer = new HttpPeer();
  await peer.listen();
});
afterEach(async () => {
  await stopAll();
  await peer.close();
});

const SECRET = `whsec_${Buffer.from('a test secret of 32 bytes, ok...').toString('base64')}`;

describe('webhook templates through the daemon', () => {
  it('sends what the template makes, to the URL and with the headers it makes, signed; null skips; a failure dead-letters one event', async () => {
    const h = await startBridge({
      sinks: (dir) => [
        { name: 'audit', type: 'file', path: join(dir, 'events.jsonl') },
        {
          name: 'chat',
          type: 'webhook',
          url: `${peer.url}/hooks/base`,
          secret: SECRET,
          template: `data.eventType = "Freeze" ? $error("no freezes here: " & data.eventId) : data.eventType = "Redeploy" ? null : { "text": $headline(), "when": $countdown(), "summary": $summary(), "approve": $approvalUrl(), "t": $transition() }`,
          urlTemplate: `"/hooks/" & $lowercase(data.eventType) & "?id=" & $encodeUrlComponent(data.eventId)`,
          headerTemplates: { 'X-Event-Id': 'data.eventId', 'X-Absent': 'null' },
          delivery: { maxAttempts: 5, initialBackoffMs: 50, maxBackoffMs: 100 },
          filter: { types: ['scheduled'] },
        },
      ],
    });
    const freeze = h.sim.addEvent({ EventType: 'Freeze', noticeMs: 600_000 });
    const redeploy = h.sim.addEvent({ EventType: 'Redeploy', noticeMs: 600_000 });
    const reboot = h.sim.addEvent({ EventType: 'Reboot', noticeMs: 600_000 });
    await waitFor(
      () => peer.requests.length === 1 && h.bridge.store.outbox.deadLetters().length === 1 && h.bridge.store.outbox.depth().size === 0,
      'one request, one dead letter, nothing left',
    );
    const [req] = peer.requests;
    expect(req!.url).toBe(`/hooks/reboot?id=${encodeURIComponent(reboot.eventId)}`);
    expect(req!.headers['content-type']).toBe('application/json');
    expect(req!.headers['x-event-id']).toBe(reboot.eventId);
    expect(req!.headers['x-absent']).toBeUndefined();
    expect(Object.keys(req!.headers).filter((k) => k.startsWith('ce-'))).toEqual([]);
    const body = JSON.parse(req!.body) as Record<string, unknown>;
    expect(body).toMatchObject({ text: 'vm0 will be rebooted', t: 'scheduled', approve: null });
    expect(body.when).toMatch(/^in (9|10)m/);
    expect(body.summary).toMatch(/SCHEDULED\s+Reboot/);
    // Standard Webhooks signing over the body the template made
    expect(() => new Webhook(SECRET).verify(req!.body, req!.headers as Record<string, string>)).not.toThrow();
    const [dead] = h.bridge.store.outbox.deadLetters();
    expect(dead!.eventId).toBe(freeze.eventId);
    expect(dead!.lastError).toMatch(
      new RegExp(`^rejected: TEMPLATE_FAILED: template: no freezes here: ${freeze.eventId} at position \\d+$`),
    );
    expect(h.kinds()).toEqual(expect.arrayContaining([`scheduled:${redeploy.eventId}`]));
    const metrics = await h.bridge.metrics.registry.metrics();
    expect(metrics).toMatch(/^sebridge_template_skipped_total\{sink="chat"\} 1$/m);
    expect(metrics).toMatch(/^sebridge_deliveries_total\{sink="chat",outcome="delivered"\} 2$/m);
  });

  it('a header value HTTP does not allow and a URL that leaves the directory of url are rejected at once, never sent', async () => {
    const h = await startBridge({
      sinks: [
        {
          name: 'hdr',
          type: 'webhook',
          url: `${peer.url}/hooks/base`,
          template: '{ "id": data.eventId }',
          headerTemplates: { 'X-Description': 'data.description' },
          delivery: { maxAttempts: 50, initialBackoffMs: 10, maxBackoffMs: 20 },
        },
        {
          name: 'path',
          type: 'webhook',
          url: `${peer.url}/hooks/base`,
          template: '{ "id": data.eventId }',
          urlTemplate: '"/hooks/" & data.eventId',
          delivery: { maxAttempts: 50, initialBackoffMs: 10, maxBackoffMs: 20 },
        },
      ],
    });
    h.sim.addEvent({ EventId: '../../admin/x?y=1#', EventType: 'Reboot', noticeMs: 600_000, Description: 'Wartung ✓ geplant' });
    await waitFor(() => h.bridge.store.outbox.deadLetters().length === 2, 'both dead-lettered');
    const dead = Object.fromEntries(h.bridge.store.outbox.deadLetters().map((d) => [d.sink, d]));
    expect(dead.hdr!.attempts).toBe(1);
    expect(dead.hdr!.lastError).toMatch(
      /^rejected: TEMPLATE_FAILED: headerTemplates\.X-Description: a header value holds U\+2713, which HTTP does not allow/,
    );
    expect(dead.path!.attempts).toBe(1);
    expect(dead.path!.lastError).toMatch(
      /^rejected: TEMPLATE_FAILED: urlTemplate: gave a URL whose path \(\/admin\/x\) is not under \/hooks\/, the directory of url/,
    );
    expect(peer.requests).toEqual([]);
    // what undici refuses to send is a rejection too, not a network error to retry
    expect(classifyNetworkError(Object.assign(new Error('invalid header'), { code: 'UND_ERR_INVALID_ARG' }))).toMatchObject({
      status: 'reject',
    });
    expect(classifyNetworkError(Object.assign(new Error('refused'), { code: 'ECONNREFUSED' }))).toMatchObject({ status: 'retry' });
  });

  it('events rendered together: one that runs away fails alone, the others are sent', async () => {
    const h = await startBridge({
      sinks: [
        {
          name: 'w',
          type: 'webhook',
          url: `${peer.url}/hooks/base`,
          template: `data.eventType = "Freeze" ? $match("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!", /^(a+)+$/) : { "id": data.eventId }`,
        },
      ],
      start: false,
    });
    // committed in one document, so the sink takes them in one send
    const ids = ['Reboot', 'Freeze', 'Redeploy', 'Reboot'].map((EventType) => h.sim.addEvent({ EventType, noticeMs: 600_000 }));
    await h.bridge.start();
    await waitFor(() => peer.requests.length === 3 && h.bridge.store.outbox.deadLetters().length === 1, 'three sent, one dead-lettered');
    const [dead] = h.bridge.store.outbox.deadLetters();
    expect(dead!.eventId).toBe(ids[1]!.eventId);
    expect(dead!.lastError).toBe('rejected: TEMPLATE_FAILED: template: the template ran for more than 100 ms of CPU time and was stopped');
    expect(peer.requests.map((r) => (JSON.parse(r.body) as { id: string }).id).sort()).toEqual(
      [ids[0]!, ids[2]!, ids[3]!].map((e) => e.eventId).sort(),
    );
  });

  it('batch mode sends one array of what the template made', async () => {
    const h = await startBridge({
      sinks: [
        {
          name: 'b',
          type: 'webhook',
          url: `${peer.url}/batch`,
          mode: 'batch',
          batchSize: 10,
          template: `{ "id": data.eventId }`,
          contentType: 'application/x-ndjson-like+json',
        },
      ],
      start: false,
    });
    const a = h.sim.addEvent({ noticeMs: 600_000 });
    const b = h.sim.addEvent({ noticeMs: 600_000 });
    await h.bridge.start();
    await waitFor(() => peer.requests.length >= 1 && h.bridge.store.outbox.depth().size === 0, 'the batch');
    const all = peer.requests.flatMap((r) => JSON.parse(r.body) as { id: string }[]);
    expect(all.map((x) => x.id).sort()).toEqual([a.eventId, b.eventId].sort());
    expect(peer.requests[0]!.headers['content-type']).toBe('application/x-ndjson-like+json');
  });
});

describe('templates on a busy machine', () => {
  const event = scenarioTimeline('user-reboot', identityFrom(null, { name: 'sim-vm-0' }))[0]!;
  const sink = (name: string, template: string) =>
    webhookSink.create(SinkConfig.parse({ name, type: 'webhook', url: `${peer.url}/${name}`, template }) as WebhookConfig, {
      logger: silentLogger,
      stdout: process.stdout,
    });
  /** send as the dispatcher would: again while the outcome is a retry (at most 20 times). */
  async function deliver(s: Sink, e: typeof event): Promise<Outcome[]> {
    const outcomes: Outcome[] = [];
    for (let attempt = 0; attempt < 20; attempt++) {
      const [o] = await s.send([e], { signal: new AbortController().signal });
      outcomes.push(o!);
      if (o!.status !== 'retry') break;
    }
    return outcomes;
  }

  it('counts the CPU time a template uses: thirty renders at once all deliver (retried, never rejected), and one that loops for ever is still stopped for good', async () => {
    // eight busy loops in processes of their own, while the thirty render (each ends by itself after a minute)
    const busy = Array.from({ length: 8 }, () =>
      spawn(process.execPath, ['-e', 'const end = Date.now() + 60_000; while (Date.now() < end);'], { stdio: 'ignore' }),
    );
    const sinks: Sink[] = [];
    try {
      // about 10 ms of CPU time a render, a tenth of the limit
      const light = await sink('light', '{ "id": id, "sum": $sum([1..3500].($ * 2)) }');
      const endless = await sink('endless', '( $loop := function($n) { $loop($n + 1) }; $loop(0) )');
      sinks.push(light, endless);
      const events = Array.from({ length: 30 }, (_, i) => ({ ...event, id: `${event.id}/${i}` }));
      const tries = await Promise.all(events.map((e) => deliver(light, e)));
      // every one delivered in the end; what came before was a retry for a busy machine, never a rejection
      expect(tries.map((t) => t.at(-1))).toEqual(events.map(() => ({ status: 'delivered' })));
      for (const o of tries.flat().filter((x) => x.status !== 'delivered'))
        expect(o).toMatchObject({ status: 'retry', reason: expect.stringMatching(/^TEMPLATE_DELAYED: template: /) });
      expect(peer.requests.map((r) => (JSON.parse(r.body) as { id: string }).id).sort()).toEqual(events.map((e) => e.id).sort());
      // the endless loop spends its 100 ms of CPU time however busy the machine is (on this one,
      // as busy as other work makes it): rejected for good, never sent
      for (const b of busy) b.kill('SIGKILL');
      const runaway = await deliver(endless, event);
      expect(runaway.at(-1)).toEqual({
        status: 'reject',
        reason: 'TEMPLATE_FAILED: template: the template ran for more than 100 ms of CPU time and was stopped',
      });
      expect(peer.requests.filter((r) => r.url === '/endless')).toEqual([]);
    } finally {
      for (const b of busy) b.kill('SIGKILL');
      for (const s of sinks) await s.close();
    }
  }, 120_000);
});

describe('templates', () => {
  const event = scenarioTimeline('user-reboot', identityFrom(null, { name: 'sim-vm-0' }))[0]!;
  it('a template that runs longer than 100 ms is stopped; one that recurses without end too', async () => {
    const slow = await Template.compile('[1..5000000].($ * 2) ~> $sum()');
    await expect(slow.render(event, { approvalUrl: () => null })).rejects.toThrow(/ran for more than 100 ms of CPU time and was stopped/);
    const deep = await Template.compile('( $f := function($n) { 1 + $f($n + 1) }; $f(0) )');
    await expect(deep.render(event, { approvalUrl: () => null })).rejects.toThrow(/recursed deeper than 500 levels/);
  });
  it('a template sees the CloudEvent in its JSON format and has no way out of it', async () => {
    const t = await Template.compile('{ "keys": $keys($), "env": $exists($$.process), "type": type }');
    expect(await t.render(event, { approvalUrl: () => null })).toEqual({
      keys: Object.keys(event),
      env: false,
      type: 'azure.scheduledevent.scheduled',
    });
  });
});

describe('the command line', () => {
  it('validate: a template that does not compile is exit 2 with its key and position', async () => {
    const dir = tempDir();
    try {
      const cfg = join(dir.path, 'bad.yaml');
      writeFileSync(
        cfg,
        `sinks:\n  - name: chat\n    type: webhook\n    url: https://chat.example.com/hook\n    template: '{ "text": $headline( }'\n    urlTemplate: '"/a" &'\n`,
      );
      const r = await cli(['validate', '--config', cfg]);
      expect(r.code).toBe(2);
      expect(r.stderr).toContain('sinks[0].template: The symbol "}" cannot be used as a unary operator at position 22');
      expect(r.stderr).toMatch(/sinks\[0\]\.urlTemplate: .* at position \d+/);
    } finally {
      dir.cleanup();
    }
  });

  it('validate: a template that runs past its limit on the sample events is exit 2 with its key', async () => {
    const dir = tempDir();
    try {
      const cfg = join(dir.path, 'slow.yaml');
      writeFileSync(
        cfg,
        [
          'sinks:',
          '  - { name: fine, type: webhook, url: "https://chat.example.com/hook", template: \'{ "id": data.eventId }\' }',
          '  - name: slow',
          '    type: webhook',
          '    url: https://chat.example.com/hook',
          '    headerTemplates: { X-Pad: \'$pad("", 200000000)\' }',
          '    template: \'$match(data.description & " " & data.description & "!", /^(\\w+\\s?)*$/) ? {} : { "a": 1 }\'',
        ].join('\n'),
      );
      const r = await cli(['validate', '--config', cfg]);
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(
        /sinks\[1\]\.template: the template ran for more than 100 ms of CPU time and was stopped \(on the sample \w+ event of scenario [\w-]+\)/,
      );
      expect(r.stderr).not.toContain('sinks[0]');
      const pad = join(dir.path, 'pad.yaml');
      writeFileSync(pad, readFileSync(cfg, 'utf8').replace(/\n {4}template: .*$/, ''));
      const p = await cli(['validate', '--config', pad]);
      expect(p.code).toBe(2);
      expect(p.stderr).toContain('sinks[1].headerTemplates.X-Pad: the template $pad would make more than 1048576 characters');
    } finally {
      dir.cleanup();
    }
  });

  it('validate warns when an IMDS field is joined into a URL without $encodeUrlComponent', async () => {
    const dir = tempDir();
    try {
      const cfg = join(dir.path, 'url.yaml');
      const sink = (name: string, t: string) =>
        `  - { name: ${name}, type: webhook, url: "https://x.example.com/hooks/", urlTemplate: '${t}' }`;
      writeFileSync(
        cfg,
        [
          'sinks:',
          sink('raw', '"/hooks/" & data.eventId & "/" & subject'),
          sink('encoded', '"/hooks/" & $encodeUrlComponent(data.eventId & "/" & data.vm.name)'),
        ].join('\n'),
      );
      const r = await cli(['validate', '--config', cfg]);
      expect(r.code).toBe(0);
      expect(r.stderr).toContain(
        'warning: sinks[0].urlTemplate: data.eventId, subject are joined into the URL without $encodeUrlComponent',
      );
      expect(r.stderr).not.toContain('sinks[1]');
    } finally {
      dir.cleanup();
    }
  });

  it('template test shows exactly what is sent (static headers masked, the signature), and what the filter drops', async () => {
    const dir = tempDir();
    try {
      const cfg = join(dir.path, 'bridge.yaml');
      writeFileSync(cfg, `${readFileSync(join(ROOT, 'examples', 'templates', 'opsgenie.yaml'), 'utf8')}\n`);
      writeFileSync(
        cfg,
        readFileSync(cfg, 'utf8').replace(
          'filter: { scope: self }',
          `filter: { scope: self, types: [scheduled, completed] }\n    secret: ${SECRET}`,
        ),
      );
      const r = await cli(['template', 'test', '--config', cfg, '--sink', 'opsgenie'], {
        OPSGENIE_API_KEY: 'abcdef01-2345-6789-abcd-ef0123456789',
      });
      expect(r.code).toBe(0);
      expect(r.stdout).toContain('   authorization: GenieKey ****** (45 characters, not shown)');
      expect(r.stdout).not.toContain('abcdef01-2345');
      expect(r.stdout).toContain('   webhook-signature: v1,<at sending>');
      expect(r.stdout).toMatch(
        /\n2\. updated {2}Redeploy {2}\S+ {2}at \S+\n {3}not sent: the sink's filter drops it \(types: scheduled, completed\)\n/,
      );
      expect(r.stdout).toContain('5 transitions, 3 dropped by the filter; every one of the 2 sent rendered');
    } finally {
      dir.cleanup();
    }
  });

  it('template test renders every transition of a scenario without sending anything', async () => {
    const dir = tempDir();
    try {
      const cfg = join(dir.path, 'bridge.yaml');
      writeFileSync(cfg, `${readFileSync(join(ROOT, 'examples', 'templates', 'pagerduty.yaml'), 'utf8')}\n`);
      const r = await cli(['template', 'test', '--config', cfg, '--sink', 'pagerduty'], {
        PAGERDUTY_ROUTING_KEY: 'R0123456789abcdefABCDEF012345678',
      });
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      expect(r.stdout).toContain('se-bridge template test: sink pagerduty, scenario degraded-hardware');
      for (const [n, t] of ['scheduled', 'updated', 'approved', 'started', 'completed'].entries())
        expect(r.stdout).toMatch(new RegExp(`\\n${n + 1}\\. ${t}  Redeploy `));
      expect(r.stdout).toContain('   POST https://events.pagerduty.com/v2/enqueue');
      expect(r.stdout).toContain('"event_action": "acknowledge"');
      expect(r.stdout).toContain('5 transitions, 0 dropped by the filter; every one of the 5 sent rendered');
      const canceled = await cli(['template', 'test', '--config', cfg, '--sink', 'pagerduty', '--scenario', 'canceled-maintenance'], {
        PAGERDUTY_ROUTING_KEY: 'R0123456789abcdefABCDEF012345678',
      });
      expect(canceled.stdout).toMatch(/\n2\. canceled {2}Reboot /);
      const wrong = await cli(['template', 'test', '--config', cfg, '--sink', 'nope'], {
        PAGERDUTY_ROUTING_KEY: 'R0123456789abcdefABCDEF012345678',
      });
      expect(wrong.code).toBe(2);
      expect(wrong.stderr).toContain('no sink is named "nope"; the sinks are pagerduty');
    } finally {
      dir.cleanup();
    }
  });
});
