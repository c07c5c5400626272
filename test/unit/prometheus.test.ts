/**
 * The bridge's Prometheus registry against prom-client (a dev dependency here, the oracle):
 * the same metrics, fed the same values, must expose the same samples; and a third-party
 * parser must read the text.
 */
import parsePrometheus from 'parse-prometheus-text-format';
import * as prom from 'prom-client';
import { describe, expect, it } from 'vitest';
import { Counter, Gauge, Histogram, processMetrics, Registry } from '../../src/lib/prometheus.ts';

/** One sample per line, its labels sorted, so two writers that order labels differently compare equal. */
function samples(text: string): string[] {
  return text
    .split('\n')
    .filter((l) => l !== '' && !l.startsWith('#'))
    .map((line) => {
      const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
      if (m === null) throw new Error(`not a sample line: ${line}`);
      const labels = m[2] === undefined ? [] : (m[2].match(/[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|\\.)*"/g) ?? []).sort();
      return `${m[1]}{${labels.join(',')}} ${Number(m[3])}`;
    })
    .sort();
}

const hostile = 'a "quoted" \\ back\nslash';
const BUCKETS = [0.005, 0.1, 1, 10];

describe('Prometheus registry', () => {
  it('exposes the same samples as prom-client for counters, gauges and histograms, hostile label values included', async () => {
    const ours = new Registry();
    const c = ours.register(new Counter('t_requests_total', 'Requests.', ['sink', 'outcome']));
    const g = ours.register(new Gauge('t_depth', 'Depth.', ['sink']));
    const plain = ours.register(new Gauge('t_incarnation', 'Incarnation.'));
    ours.register(new Counter('t_idle_total', 'Never incremented.'));
    const h = ours.register(new Histogram('t_duration_seconds', 'Duration.', ['sink'], BUCKETS));

    const theirs = new prom.Registry();
    const pc = new prom.Counter({ name: 't_requests_total', help: 'Requests.', labelNames: ['sink', 'outcome'], registers: [theirs] });
    const pg = new prom.Gauge({ name: 't_depth', help: 'Depth.', labelNames: ['sink'], registers: [theirs] });
    const pplain = new prom.Gauge({ name: 't_incarnation', help: 'Incarnation.', registers: [theirs] });
    new prom.Counter({ name: 't_idle_total', help: 'Never incremented.', registers: [theirs] });
    const ph = new prom.Histogram({
      name: 't_duration_seconds',
      help: 'Duration.',
      labelNames: ['sink'],
      buckets: BUCKETS,
      registers: [theirs],
    });

    for (const [labels, by] of [
      [{ sink: 'ops', outcome: 'delivered' }, 1],
      [{ sink: hostile, outcome: 'retry' }, 2],
      [{ sink: 'ops', outcome: 'delivered' }, 3],
    ] as const) {
      c.inc(labels, by);
      pc.inc(labels, by);
    }
    g.set({ sink: 'ops' }, 4);
    pg.set({ sink: 'ops' }, 4);
    g.reset();
    pg.reset();
    g.set({ sink: 'b' }, 2.5);
    pg.set({ sink: 'b' }, 2.5);
    plain.set(17);
    pplain.set(17);
    for (const v of [0.001, 0.005, 0.05, 0.5, 3, 99]) {
      h.observe({ sink: 'ops' }, v);
      ph.observe({ sink: 'ops' }, v);
    }
    h.observe({ sink: hostile }, 0.2);
    ph.observe({ sink: hostile }, 0.2);

    const text = await ours.metrics();
    expect(samples(text)).toEqual(samples(await theirs.metrics()));
    expect(text).toContain('sink="a \\"quoted\\" \\\\ back\\nslash"');
    expect(ours.contentType).toBe(theirs.contentType);

    const parsed = parsePrometheus(text);
    expect(parsed.map((f) => [f.name, f.type])).toEqual([
      ['t_requests_total', 'COUNTER'],
      ['t_depth', 'GAUGE'],
      ['t_incarnation', 'GAUGE'],
      ['t_idle_total', 'COUNTER'],
      ['t_duration_seconds', 'HISTOGRAM'],
    ]);
    expect(parsed[0]!.metrics).toContainEqual({ labels: { sink: hostile, outcome: 'retry' }, value: '2' });
  });

  it('refuses a name registered twice', () => {
    const r = new Registry();
    r.register(new Counter('x_total', 'x'));
    expect(() => r.register(new Counter('x_total', 'x'))).toThrow(/registered twice/);
  });

  it('names its process metrics as prom-client does, with the same types, and leaves no timer behind', async () => {
    const before = process.getActiveResourcesInfo().filter((t) => t === 'Timeout' || t === 'Immediate').length;
    const ours = new Registry();
    processMetrics(ours);
    const text = await ours.metrics();
    // sampling the event loop every few ms was the idle CPU this registry exists to avoid
    expect(process.getActiveResourcesInfo().filter((t) => t === 'Timeout' || t === 'Immediate').length).toBe(before);

    const theirs = new prom.Registry();
    prom.collectDefaultMetrics({ register: theirs });
    const types = (t: string) => new Map(parsePrometheus(t).map((f) => [f.name, f.type]));
    const reference = types(await theirs.metrics());
    theirs.clear();
    const mine = types(text);
    expect(mine.size).toBeGreaterThanOrEqual(16);
    for (const [name, type] of mine) expect([name, reference.get(name)]).toEqual([name, type]);
    expect(samples(text).find((s) => s.startsWith('process_resident_memory_bytes{}'))).toMatch(/ [1-9]\d+$/);
    expect(samples(text).find((s) => s.startsWith('nodejs_eventloop_lag_seconds{}'))).toMatch(/ \d/);
  });

  it('follows the naming rules promtool check metrics enforces: _total for counters and only for them, a HELP and a TYPE for each', async () => {
    const { Metrics } = await import('../../src/observability/metrics.ts');
    const { Store } = await import('../../src/store/store.ts');
    const store = Store.open(':memory:');
    try {
      const text = await new Metrics(store.outbox).registry.metrics();
      const families = parsePrometheus(text);
      expect(families.length).toBeGreaterThan(30);
      const wrong = families.flatMap((f) => {
        const counter = f.type === 'COUNTER';
        const problems: string[] = [];
        if (counter !== f.name.endsWith('_total'))
          problems.push(`${f.name}: a ${f.type.toLowerCase()} ${counter ? 'without' : 'with'} _total`);
        if (!/^[a-z_:][a-z0-9_:]*$/.test(f.name)) problems.push(`${f.name}: not snake_case`);
        if (!f.help) problems.push(`${f.name}: no HELP`);
        return problems;
      });
      expect(wrong).toEqual([]);
    } finally {
      store.close();
    }
  });
});
