/**
 * The shipped Grafana dashboard (config/grafana/scheduled-events-bridge.json): every query of it
 * (each panel's targets, and the `group` variable's label_values) is parsed with Prometheus's
 * own PromQL grammar (@prometheus-io/lezer-promql, the parser of Prometheus's UI), after
 * Grafana's variables are put in as Grafana would, and may name only metrics the bridge exports:
 * the families of its registry (src/observability/metrics.ts, the health checks' included), a
 * histogram's _bucket, _sum and _count series for its name. A query with a syntax error, or one
 * that names a metric no bridge exports, is refused (shown below on bad queries). Beside it: every
 * family of the registry is listed in docs/operations.md, where the metrics are documented.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { SyntaxNode } from '@lezer/common';
import { parser } from '@prometheus-io/lezer-promql';
import { describe, expect, it } from 'vitest';
import { Metrics } from '../../src/observability/metrics.ts';
import { Store } from '../../src/store/store.ts';
import { ROOT } from '../helpers.ts';

interface Target {
  readonly refId: string;
  readonly expr: string;
}
interface Panel {
  readonly id: number;
  readonly title: string;
  readonly type: string;
  readonly targets?: readonly Target[];
}
interface Variable {
  readonly name: string;
  readonly type: string;
  readonly query?: string | { readonly query: string };
}
const dashboard = JSON.parse(readFileSync(join(ROOT, 'config', 'grafana', 'scheduled-events-bridge.json'), 'utf8')) as {
  readonly panels: readonly Panel[];
  readonly templating: { readonly list: readonly Variable[] };
};

/** exported: the series names a bridge's /metrics may hold, read from its registry's TYPE lines. */
async function exported(): Promise<Map<string, string>> {
  const store = Store.open(':memory:');
  const metrics = new Metrics(store.outbox);
  metrics.healthChecks();
  const text = await metrics.registry.metrics().finally(() => store.close());
  const names = new Map<string, string>();
  for (const [, name, kind] of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    names.set(name!, kind!);
    if (kind === 'histogram') for (const s of ['_bucket', '_sum', '_count']) names.set(`${name}${s}`, `${kind} series`);
  }
  return names;
}
const known = await exported();

/** grafana: the query as Grafana sends it, its variables put in (a range for the interval ones, a regex of any value for the others). */
const grafana = (query: string): string =>
  query.replace(/\$__(rate_interval|interval|range)\b|\$\{__(rate_interval|interval|range)\}/g, '5m').replace(/\$\{?\w+\}?/g, '.+');

/**
 * problems: what is wrong with one PromQL query: a syntax error (the grammar's error nodes), a
 * metric named by a regex of __name__ (it cannot be checked), or a metric the bridge does not export.
 */
function problems(query: string): string[] {
  const expr = grafana(query);
  const out: string[] = [];
  const names: string[] = [];
  parser.parse(expr).iterate({
    enter: (ref) => {
      const at = `${expr.slice(ref.from, ref.to)}`;
      if (ref.type.isError) out.push(`syntax error at ${ref.from}: "${expr.slice(ref.from, ref.from + 20)}"`);
      else if (ref.name === 'Identifier' && ref.node.parent?.name === 'VectorSelector') names.push(at);
      else if (ref.name === 'UnquotedLabelMatcher' || ref.name === 'QuotedLabelMatcher') {
        const label = child(ref.node, 'LabelName') ?? child(ref.node, 'QuotedLabelName');
        if (label !== null && text(expr, label).replace(/"/g, '') === '__name__') {
          const op = child(ref.node, 'MatchOp');
          const value = child(ref.node, 'StringLiteral');
          if (op !== null && text(expr, op) === '=' && value !== null) names.push(JSON.parse(text(expr, value)) as string);
          else out.push(`a metric named by a pattern cannot be checked: ${at}`);
        }
      } else if (ref.name === 'QuotedLabelName' && ref.node.parent?.name === 'LabelMatchers') names.push(JSON.parse(at) as string);
    },
  });
  if (out.length === 0 && names.length === 0) out.push('names no metric');
  for (const n of names) if (!known.has(n)) out.push(`names ${n}, which the bridge does not export`);
  return out;
}
const child = (node: SyntaxNode, name: string): SyntaxNode | null => node.getChild(name);
const text = (expr: string, node: SyntaxNode): string => expr.slice(node.from, node.to);

/** The dashboard's queries: each panel's targets, and each query variable's (its label_values' selector). */
function queries(): { where: string; expr: string }[] {
  const out: { where: string; expr: string }[] = [];
  for (const p of dashboard.panels)
    for (const t of p.targets ?? []) out.push({ where: `panel ${p.id} (${p.title}) ${t.refId}`, expr: t.expr });
  for (const v of dashboard.templating.list.filter((x) => x.type === 'query')) {
    const q = typeof v.query === 'string' ? v.query : (v.query?.query ?? '');
    const m = /^label_values\((.+),\s*(\w+)\)$/.exec(q.trim());
    out.push({ where: `variable ${v.name}`, expr: m === null ? q : m[1]! });
  }
  return out;
}

describe('the Grafana dashboard', () => {
  it('parses every query with the PromQL grammar and names only metrics the bridge exports', () => {
    const all = queries();
    expect(all.length).toBeGreaterThanOrEqual(10);
    expect(all.map((q) => [q.where, problems(q.expr)])).toEqual(all.map((q) => [q.where, []]));
  });

  it('refuses a query that names a metric no bridge exports, a pattern of names, and one that does not parse', () => {
    expect(problems('sum by (group) (sebridge_fleet_approvals_held{group=~"$group"})')).toEqual([]);
    expect(problems('histogram_quantile(0.9, sum by (le) (rate(sebridge_fleet_approval_hold_seconds_bucket[$__rate_interval])))')).toEqual(
      [],
    );
    expect(problems('max by (group) (sebridge_fleet_disruptions_allowed{group=~"$group"})')).toEqual([
      'names sebridge_fleet_disruptions_allowed, which the bridge does not export',
    ]);
    // a gauge has no _count series; a name given as a matcher is checked as well
    expect(problems('sebridge_fleet_paused_count')).toEqual(['names sebridge_fleet_paused_count, which the bridge does not export']);
    expect(problems('{__name__="sebridge_fleet_pausd"}')).toEqual(['names sebridge_fleet_pausd, which the bridge does not export']);
    expect(problems('{__name__=~"sebridge_fleet_.*"}')).toEqual([
      'a metric named by a pattern cannot be checked: __name__=~"sebridge_fleet_.*"',
    ]);
    expect(problems('sum(rate(sebridge_fleet_store_errors_total[5m])')[0]).toMatch(/^syntax error/);
  });

  it('has a group variable every panel filters by (directly, or joined through a series that has the group)', () => {
    expect(dashboard.templating.list.find((v) => v.name === 'group')).toMatchObject({ type: 'query' });
    for (const p of dashboard.panels) for (const t of p.targets ?? []) expect(t.expr, `panel ${p.id}`).toContain('group=~"$group"');
    // the panels the issue asks for, each with at least one query
    const titles = dashboard.panels.filter((p) => (p.targets ?? []).length > 0).map((p) => p.title);
    for (const want of [
      /allowed disruptions/i,
      /unavailable/i,
      /held now, by reason/i,
      /time held/i,
      /paused/i,
      /slots held/i,
      /store errors/i,
    ])
      expect(
        titles.some((t) => want.test(t)),
        String(want),
      ).toBe(true);
  });

  it('ships with the package, beside the alert rules', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { files: string[] };
    expect(pkg.files).toContain('config');
  });
});

describe('the metrics, as documented', () => {
  it('lists every sebridge_ family of the registry in docs/operations.md', () => {
    const docs = readFileSync(join(ROOT, 'docs', 'operations.md'), 'utf8');
    const families = [...known].filter(([n, kind]) => n.startsWith('sebridge_') && !kind.endsWith(' series')).map(([n]) => n);
    expect(families.filter((n) => !docs.includes(`\`${n}\``))).toEqual([]);
  });
});
