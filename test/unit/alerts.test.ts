/**
 * The shipped Prometheus alerts (config/prometheus/alerts.yaml): promtool's unit tests beside
 * them (alerts.test.yaml) run here through the test PromQL evaluator (testkit/promql.ts), and
 * the two rules the README used to give are shown wrong on the same input. `promtool test rules
 * config/prometheus/alerts.test.yaml` runs the same file with Prometheus itself.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as yaml } from 'yaml';
import { describe, expect, it } from 'vitest';
import { evaluate, firingAt, parse, seriesOf, type AlertRule } from '../../testkit/promql.ts';
import { ROOT } from '../helpers.ts';

interface RuleTest {
  interval: string;
  input_series: { series: string; values: string }[];
  alert_rule_test: {
    eval_time: string;
    alertname: string;
    exp_alerts: { exp_labels: Record<string, string>; exp_annotations?: Record<string, string> }[];
  }[];
}
const minutes = (d: string) => Number(/^(\d+)m$/.exec(d)![1]) * 60_000;
const dir = join(ROOT, 'config', 'prometheus');
const rules = (yaml(readFileSync(join(dir, 'alerts.yaml'), 'utf8')) as { groups: { rules: AlertRule[] }[] }).groups.flatMap((g) => g.rules);
const file = yaml(readFileSync(join(dir, 'alerts.test.yaml'), 'utf8')) as { evaluation_interval: string; tests: RuleTest[] };
const sorted = <T>(xs: T[]) => [...xs].sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));

describe('the shipped alerts, by their promtool unit tests', () => {
  it('has the five rules, each with a test', () => {
    expect(rules.map((r) => r.alert)).toEqual([
      'SeBridgeBlind',
      'SeBridgeDeliveryStuck',
      'SeBridgeDeadLetters',
      'SeBridgeFleetPaused',
      'SeBridgeFleetApprovalHeld',
    ]);
    expect(new Set(file.tests.flatMap((t) => t.alert_rule_test.map((c) => c.alertname)))).toEqual(new Set(rules.map((r) => r.alert)));
  });

  for (const [n, t] of file.tests.entries()) {
    for (const c of t.alert_rule_test) {
      it(`test ${n + 1}: ${c.alertname} at ${c.eval_time}`, () => {
        const series = t.input_series.map((s) => seriesOf(s, minutes(t.interval)));
        const rule = rules.find((r) => r.alert === c.alertname)!;
        const got = firingAt(rule, series, minutes(c.eval_time), minutes(file.evaluation_interval));
        const want = c.exp_alerts.map((a) => ({
          labels: { ...a.exp_labels, alertname: c.alertname },
          annotations: a.exp_annotations ?? {},
        }));
        expect(sorted(got)).toEqual(sorted(want));
      });
    }
  }
});

describe('the rules the README used to give, on the same input', () => {
  const stuck = file.tests[1]!.input_series.map((s) => seriesOf(s, 60_000));
  const dead = file.tests[2]!.input_series.map((s) => seriesOf(s, 60_000));
  it('SeBridgeDeliveryStuck with a bare `and` never fires: its two sides carry different labels', () => {
    const old = parse('sebridge_outbox_depth > 0 and rate(sebridge_deliveries_total{outcome="delivered"}[10m]) == 0');
    for (let m = 0; m <= 22; m++) expect(evaluate(old, stuck, m * 60_000)).toEqual([]);
    expect(
      evaluate(parse(rules[1]!.expr), stuck, 22 * 60_000)
        .map((s) => s.labels.sink)
        .sort(),
    ).toEqual(['ops', 'teams']);
  });
  it('SeBridgeDeadLetters as increase() of a gauge: silent on the first dead letter, and it fires on a partial replay', () => {
    const old = parse('increase(sebridge_dead_letters[1h]) > 0');
    expect(evaluate(old, dead, 2 * 60_000)).toEqual([]); // the first dead letter: not seen
    expect(evaluate(old, dead, 9 * 60_000).length).toBe(1); // replayed to 0 long ago (a "reset"): still firing
  });
});
