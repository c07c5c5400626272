import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfigFile, parseConfigText, resolveConfigPath, validateConfig } from '../../src/config/load.ts';
import { jsonSchema, SinkConfig } from '../../src/config/schema.ts';
import { SINK_CONFIG_SCHEMAS, SINK_TYPES } from '../../src/registry/sinks.ts';
import { EXAMPLE_ENV, ROOT, undocumentedKeys } from '../helpers.ts';

function problems(text: string, env: NodeJS.ProcessEnv = {}): readonly string[] {
  try {
    parseConfigText(text, 'test.yaml', env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).problems;
  }
  throw new Error('expected a ConfigError');
}

describe('configuration', () => {
  it('applies every default to an empty file', () => {
    const c = parseConfigText('', 'empty.yaml', {});
    expect(c.imds).toEqual({
      endpoint: 'http://169.254.169.254',
      pollIntervalMs: 1000,
      maxRetryPauseMs: 5000,
      requestTimeoutMs: 5000,
      firstRequestTimeoutMs: 120000,
    });
    expect(c.sinks).toEqual([]);
    expect(c.log.level).toBe('info');
    expect(c.state.path).toMatch(/state\.db$/);
  });

  it('accepts the shipped example and demo configurations', () => {
    const example = loadConfigFile(join(ROOT, 'config', 'bridge.example.yaml'), EXAMPLE_ENV);
    expect(example.sinks.map((s) => s.type)).toEqual([
      'stdout',
      'webhook',
      'eventhubs',
      'servicebus',
      'eventgrid',
      'slack',
      'teams',
      'exec',
      'probe',
      'kubernetes',
      'file',
    ]);
    const demo = loadConfigFile(join(ROOT, 'config', 'demo.yaml'), {});
    expect(demo.imds.endpoint).toBe('http://127.0.0.1:8080');
  });

  it('reports every problem at once, each by its path', () => {
    const found = problems(`
imds: { pollIntervalMs: 50, endpoint: "ftp://x" }
sinks:
  - { name: a, type: stdout, format: xml }
  - { name: a, type: file }
  - { name: c, type: carrier-pigeon }
  - { name: d, type: file, path: /tmp/x, filter: { types: [boom], scope: self, extra: 1 }, delivery: { maxAttempts: 0 } }
log: { level: loud }
bogus: 1
`);
    expect(found).toEqual(
      expect.arrayContaining([
        'imds.pollIntervalMs: must be at least 200',
        'imds.endpoint: must be an absolute https or http URL',
        'sinks[0].format: must be one of text | json',
        'sinks[1].name: duplicate sink name "a" (also sinks[0])',
        'sinks[1].path: is required (string)',
        `sinks[2].type: must be one of ${SINK_TYPES.join(' | ')}`,
        'sinks[3].filter.types[0]: must be one of scheduled | updated | started | completed | canceled | approved | fleet.collision | fleet.paused | calendar.conflict | unwatched',
        'sinks[3].filter.extra: unknown key',
        'sinks[3].delivery.maxAttempts: must be at least 1',
        'log.level: must be one of fatal | error | warn | info | debug | trace | silent',
        'bogus: unknown key',
      ]),
    );
    expect(found).toHaveLength(11);
  });

  it('expands ${NAME} from the environment and names an unset variable by path', () => {
    const text = 'sinks:\n  - { name: f, type: file, path: "${DIR}/events-${SUFFIX:-x}.jsonl" }\n';
    expect(parseConfigText(text, 't', { DIR: '/data', SUFFIX: 'y' }).sinks[0]).toMatchObject({ path: '/data/events-y.jsonl' });
    expect(parseConfigText(text, 't', { DIR: '/data' }).sinks[0]).toMatchObject({ path: '/data/events-x.jsonl' });
    expect(parseConfigText(text, 't', { DIR: '/data', SUFFIX: '' }).sinks[0]).toMatchObject({ path: '/data/events-x.jsonl' });
    expect(problems(text, {})).toEqual(['sinks[0].path: environment variable DIR is not set']);
    // said once per key: not again as a URL or a secret the schema refuses
    expect(
      problems(
        'approval: { secret: "${A}" }\nsinks: [{ name: w, type: webhook, url: "${U}", secret: "${S}" }, { name: s, type: slack, webhookUrl: "${W}" }]',
        {},
      ),
    ).toEqual([
      'approval.secret: environment variable A is not set',
      'sinks[0].url: environment variable U is not set',
      'sinks[0].secret: environment variable S is not set',
      'sinks[1].webhookUrl: environment variable W is not set',
    ]);
    expect(parseConfigText('sinks: [{ name: f, type: file, path: "/a/$${HOME}" }]', 't', { HOME: '/root' }).sinks[0]).toMatchObject({
      path: '/a/${HOME}',
    });
  });

  it('lets SE_BRIDGE_IMDS_ENDPOINT and LOG_LEVEL override the file', () => {
    const c = parseConfigText('imds: { endpoint: http://169.254.169.254 }\nlog: { level: info }', 't', {
      SE_BRIDGE_IMDS_ENDPOINT: 'http://127.0.0.1:9999',
      LOG_LEVEL: 'debug',
    });
    expect(c.imds.endpoint).toBe('http://127.0.0.1:9999');
    expect(c.log.level).toBe('debug');
    expect(problems('', { LOG_LEVEL: 'chatty' })).toEqual([
      'log.level: must be one of fatal | error | warn | info | debug | trace | silent',
    ]);
  });

  it('reports YAML syntax errors with their position', () => {
    const found = problems('imds:\n  endpoint: [unclosed\n');
    expect(found[0]).toMatch(/^\(yaml\) line \d+, column \d+: /);
    expect(problems('a: 1\na: 2\n')[0]).toMatch(/^\(yaml\) line 2/);
  });

  it('says which file cannot be read', () => {
    expect(() => loadConfigFile('/nonexistent/bridge.yaml', {})).toThrow(
      /\/nonexistent\/bridge\.yaml: 1 configuration problem:\n {2}\(file\): cannot read: ENOENT/,
    );
  });

  it('finds the file from --config, then SE_BRIDGE_CONFIG, then config/bridge.yaml, then the installed one; else says where it looked', () => {
    expect(resolveConfigPath('a.yaml', { SE_BRIDGE_CONFIG: 'b.yaml' })).toBe('a.yaml');
    expect(resolveConfigPath(undefined, { SE_BRIDGE_CONFIG: 'b.yaml' })).toBe('b.yaml');
    const places = (local: string, installed: string) => ({ variable: 'SE_BRIDGE_CONFIG', local, installed });
    expect(resolveConfigPath(undefined, {}, places('config/bridge.example.yaml', 'config/demo.yaml'))).toBe('config/bridge.example.yaml');
    expect(resolveConfigPath(undefined, {}, places('config/none.yaml', 'config/demo.yaml'))).toBe('config/demo.yaml');
    expect(() => resolveConfigPath(undefined, { SE_BRIDGE_CONFIG: '' }, places('config/none.yaml', '/nonexistent/bridge.yaml'))).toThrow(
      `no configuration file; looked, in order, at:\n  --config FILE: not given\n  $SE_BRIDGE_CONFIG: not set\n  config/none.yaml: not found (in ${process.cwd()})\n  /nonexistent/bridge.yaml: not found\n`,
    );
  });

  it('derives a JSON Schema that rejects unknown keys and lists every sink type', () => {
    type Prop<T> = { anyOf: [T, { type: 'null' }] };
    const schema = jsonSchema() as {
      additionalProperties: boolean;
      properties: { sinks: Prop<{ items: { oneOf: { properties: { type: Prop<{ const: string }> } }[] } }> };
    };
    expect(schema.additionalProperties).toBe(false);
    // every object property also takes null: a key written with no value counts as absent
    expect(schema.properties.sinks.anyOf[1]).toEqual({ type: 'null' });
    expect(schema.properties.sinks.anyOf[0].items.oneOf.map((o) => o.properties.type.anyOf[0].const)).toEqual([...SINK_TYPES]);
  });

  it('has one schema per registered sink, in the same order', () => {
    expect(SINK_CONFIG_SCHEMAS.map((s) => s.shape.type.value)).toEqual([...SINK_TYPES]);
    expect(SinkConfig.safeParse({ name: 'x', type: 'stdout' }).success).toBe(true);
  });

  it('documents every key of the schema in the example file', () => {
    const example = readFileSync(join(ROOT, 'config', 'bridge.example.yaml'), 'utf8');
    const missing = undocumentedKeys(jsonSchema(), example);
    expect(missing).toEqual([]);
  });
});

describe('credentials over plain http', () => {
  const check = (sink: Record<string, unknown>): string[] => {
    try {
      validateConfig({ sinks: [sink] }, 't', {});
      return [];
    } catch (err) {
      if (err instanceof ConfigError) return [...err.problems];
      throw err;
    }
  };
  const refused = /would send credentials over plain http to a host that is not loopback; use https, or set allowInsecureHttp: true/;
  it('are refused to a host that is not loopback, for every credential kind, naming the URL key', () => {
    expect(check({ name: 'w', type: 'webhook', url: 'http://hooks.example.com/x', auth: { bearer: 'tok-123456' } })).toEqual([
      expect.stringMatching(/^sinks\[0\]\.url: /),
    ]);
    expect(check({ name: 'w', type: 'webhook', url: 'http://10.0.0.5/x', auth: { basic: { username: 'u', password: 'p' } } })[0]).toMatch(
      refused,
    );
    expect(
      check({
        name: 'w',
        type: 'webhook',
        url: 'http://hooks.example.com/x',
        auth: { kind: 'managedIdentity', scope: 'api://a/.default' },
      })[0],
    ).toMatch(refused);
    expect(check({ name: 'g', type: 'eventgrid', endpoint: 'http://grid.example.com', accessKey: 'k' })).toEqual([
      expect.stringMatching(/^sinks\[0\]\.endpoint: would send credentials/),
    ]);
    expect(
      check({
        name: 't',
        type: 'teams',
        webhookUrl: 'http://flow.example.com/x',
        auth: { kind: 'managedIdentity', scope: 'https://service.flow.microsoft.com//.default' },
      }),
    ).toEqual([expect.stringMatching(/^sinks\[0\]\.webhookUrl: would send credentials/)]);
  });
  it('are allowed over https, to loopback, with allowInsecureHttp, and a plain http URL without credentials is fine', () => {
    expect(check({ name: 'w', type: 'webhook', url: 'https://hooks.example.com/x', auth: { bearer: 'tok-123456' } })).toEqual([]);
    for (const host of ['127.0.0.1:8080', 'localhost', '[::1]:9'])
      expect(check({ name: 'w', type: 'webhook', url: `http://${host}/x`, auth: { bearer: 'tok-123456' } })).toEqual([]);
    expect(
      check({ name: 'w', type: 'webhook', url: 'http://hooks.example.com/x', auth: { bearer: 'tok-123456' }, allowInsecureHttp: true }),
    ).toEqual([]);
    expect(check({ name: 'w', type: 'webhook', url: 'http://hooks.example.com/x' })).toEqual([]);
  });
});

describe('the sinks that prepare the VM', () => {
  it('report every bad key of probe and kubernetes by path', () => {
    expect(
      problems(`
sinks:
  - { name: lb, type: probe, listen: "0.0.0.0", path: probe, drainSeconds: -1, filter: { bogus: 1 } }
  - { name: node, type: kubernetes, nodeName: Bad_Name, drain: { timeoutSeconds: 0, extra: 1 } }
`),
    ).toEqual([
      'sinks[0].filter.bogus: unknown key',
      'sinks[0].listen: must be HOST:PORT, e.g. 127.0.0.1:8787',
      'sinks[0].path: must be a URL path starting with /',
      'sinks[0].drainSeconds: must be at least 0',
      'sinks[1].nodeName: must be a Kubernetes node name (lower-case DNS subdomain)',
      'sinks[1].drain.timeoutSeconds: must be at least 1',
      'sinks[1].drain.extra: unknown key',
    ]);
  });
  it('prepare this VM unless told otherwise: the filter scope defaults to self, also when other filter keys are set', () => {
    const c = validateConfig(
      {
        sinks: [
          { name: 'lb', type: 'probe', listen: '0.0.0.0:8080' },
          { name: 'n', type: 'kubernetes', filter: { eventTypes: ['Reboot'] } },
          { name: 'a', type: 'kubernetes', filter: { scope: 'all' } },
        ],
      },
      't',
      {},
    );
    expect(c.sinks.map((s) => s.filter.scope)).toEqual(['self', 'self', 'all']);
  });
});

describe('published secrets', () => {
  it('are refused however the key is written: padded, unpadded, URL-safe, with or without whsec_', () => {
    for (const secret of [
      'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
      'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw=',
      'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw==',
    ]) {
      expect(problems(`approval: { secret: "${secret}" }`)).toEqual([
        expect.stringMatching(/^approval\.secret: is a published example value/),
      ]);
    }
    expect(
      problems(`sinks: [{ name: w, type: webhook, url: "https://x.example.com/h", secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw=" }]`),
    ).toEqual([expect.stringMatching(/^sinks\[0\]\.secret: is a published example value/)]);
    // a key of one's own, of the same shape, is fine
    expect(() => parseConfigText(`approval: { secret: "whsec_${Buffer.alloc(24, 9).toString('base64')}" }`, 't.yaml', {})).not.toThrow();
  });
});

describe('every problem at once, each saying what would be right', () => {
  it('a published secret is named beside the other problems, not only once they are fixed', () => {
    expect(
      problems(
        'imds: { pollIntervalMs: 1 }\nsinks: [{ name: w, type: webhook, url: "https://x.example.com/h", secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" }]',
      ),
    ).toEqual([
      expect.stringMatching(/^imds\.pollIntervalMs: must be at least 200/),
      expect.stringMatching(/^sinks\[0\]\.secret: is a published example value/),
    ]);
  });

  it('a file full of mistakes: every problem, of the schema and between sections, each by its path with a fix, and no false one', () => {
    const found = problems(`
imds: { pollIntervalMs: 10 }
sinks:
  - { name: lb, type: probe, listen: 127.0.0.1:8081, health: true }
  - { name: chat, type: slack }
approval:
  rules:
    - { match: {}, action: approve, within: windows }
    - { match: { eventType: Rebot }, action: approve }
calendar:
  timeZone: Europe/Nowhere
  blackouts: [ { name: freeze, from: 2025-12-31, to: 2025-12-20 } ]
health:
  http: { expect: 204 }
fleet:
  group: web
  store: { type: kubernetes }
  health: { intervalSeconds: 5 }
`);
    expect([...found].sort()).toEqual(
      [
        'imds.pollIntervalMs: must be at least 200',
        'sinks[1].webhookUrl: set either webhookUrl, or botToken with channel',
        // the rule bound to windows where no calendar has any
        'approval.rules[0].within: windows needs calendar.windows to approve in (none are configured)',
        'approval.rules[1].match.eventType: must be one of Freeze | Reboot | Redeploy | Preempt | Terminate | SpotRebalanceRecommendation (or a list of them)',
        'calendar.timeZone: "Europe/Nowhere" is not a time zone this platform knows: write an IANA name, as Europe/Oslo, America/New_York, Asia/Kolkata, or UTC',
        'calendar.blackouts[0].from: is after to (2025-12-20)',
        // an http check with no target says the key it needs, not "Invalid input"
        'health.http.url: is required (string)',
        'health: is given twice, here and as fleet.health; keep one (the fleet budget and the probe share it)',
        'fleet.health: needs at least one check: http (its url), exec (its command), prometheus (its url and query) or kubernetes',
        // and not: sinks[0].health needs health checks (there are, with problems of their own)
      ].sort(),
    );
  });

  it('a rule between sections says nothing false because of another problem', () => {
    // a window with a problem of its own is still a window: the rule bound to windows has one
    expect(
      problems(
        'approval: { rules: [{ match: {}, action: approve, within: windows }] }\ncalendar: { windows: [{ days: [mon], from: "25:00", to: "05:00" }] }',
      ),
    ).toEqual([expect.stringMatching(/^calendar\.windows\[0\]\.from: 25:00 does not exist/)]);
    // windows under fleet.calendar count too, beside a calendar given twice (the one problem to fix)
    expect(
      problems(
        'approval: { rules: [{ match: {}, action: approve, within: windows }] }\ncalendar: { blackouts: [] }\nfleet: { group: g, store: { type: kubernetes }, calendar: { windows: [{ days: [sat], from: "00:00", to: "24:00" }] } }',
      ),
    ).toEqual(['calendar: is given twice, here and as fleet.calendar; keep one (under fleet, the group shares it)']);
    // a probe waiting for health checks, when the health block has problems: only those
    expect(problems('sinks: [{ name: lb, type: probe, listen: 127.0.0.1:8081, health: true }]\nhealth: { exec: { command: [] } }')).toEqual(
      ['health.exec.command: must have at least 1 item'],
    );
    // one check, or a list of them: each says what it needs
    expect(problems('health: { http: [{ url: "https://a.example.com/h" }, { expect: 200 }], exec: 5 }')).toEqual([
      'health.http[1].url: is required (string)',
      'health.exec: must be an object or an array',
    ]);
    expect(
      problems('health: { kubernetes: { pods: some } }\napproval: { rules: [{ match: { eventType: [Reboot, Rebot] }, action: approve }] }'),
    ).toEqual([
      'approval.rules[0].match.eventType[1]: must be one of Freeze | Reboot | Redeploy | Preempt | Terminate | SpotRebalanceRecommendation',
      'health.kubernetes.pods: must be one of all | none (or an object)',
    ]);
  });

  it('a value of a list of names says the names (one, or a list of them)', () => {
    expect(problems('approval: { rules: [{ match: { eventType: Rebot }, action: approve }] }')).toEqual([
      'approval.rules[0].match.eventType: must be one of Freeze | Reboot | Redeploy | Preempt | Terminate | SpotRebalanceRecommendation (or a list of them)',
    ]);
  });

  it('an unknown key suggests the nearest known one of its place, a sink by its type', () => {
    expect(
      [
        ...problems(
          'imds: { pollIntervall: 1000 }\nsinks: [{ name: s, type: slack, botToken: "xoxb-1", chanel: C1 }, { name: f, type: file, path: /tmp/x, filtr: {} }]\nzzz: 1',
        ),
      ].sort(),
    ).toEqual([
      'imds.pollIntervall: unknown key (did you mean pollIntervalMs?)',
      'sinks[0].chanel: unknown key (did you mean channel?)',
      'sinks[0].channel: is required with botToken',
      'sinks[1].filtr: unknown key (did you mean filter?)',
      'zzz: unknown key',
    ]);
  });
});
