/**
 * A small PromQL evaluator and alerting-rule runner for the tests: the part of Prometheus that
 * the shipped alerts (config/prometheus/alerts.yaml) use, evaluated the way Prometheus does, so
 * `npm test` can check them without promtool (which no npm package brings):
 *
 * - vector selectors with `=`, `!=`, `=~`, `!~` matchers, a 5-minute lookback, stale when absent;
 * - `rate()` and `increase()` over a range, counter resets handled, extrapolated as Prometheus does;
 * - comparisons with a scalar (filtering), `and`, `or`, `unless`, with `on(...)` matching;
 * - rules with `for`, labels and annotations (`{{ $labels.x }}`, `{{ $value }}`);
 * - promtool's test files: `input_series` in its expanding notation (`1+2x3` is 1 3 5 7, `5x2`
 *   is 5 5 5, `_` no sample, `_x2` two of them) and
 *   `alert_rule_test` cases.
 *
 * It is a test oracle for these rules, cross-checked with promtool itself (docs/operations.md, Metrics).
 */

export type Labels = Record<string, string>;
export interface Series {
  readonly labels: Labels;
  /** [time in ms, value], in time order. */
  readonly samples: readonly (readonly [number, number])[];
}
export interface Sample {
  readonly labels: Labels;
  readonly value: number;
}

const LOOKBACK_MS = 5 * 60_000;

// ----- parsing ---------------------------------------------------------------------------------

type Matcher = { name: string; op: '=' | '!=' | '=~' | '!~'; value: string };
type Node =
  | { kind: 'selector'; matchers: Matcher[]; rangeMs?: number }
  | { kind: 'call'; fn: 'rate' | 'increase'; arg: Node & { kind: 'selector' } }
  | { kind: 'compare'; op: string; left: Node; value: number }
  | { kind: 'set'; op: 'and' | 'or' | 'unless'; on: string[] | null; left: Node; right: Node };

const TOKEN = /\s*(=~|!~|==|!=|>=|<=|[{}()[\],=<>]|"(?:[^"\\]|\\.)*"|[0-9]+(?:\.[0-9]+)?[smhd]?|[a-zA-Z_:][a-zA-Z0-9_:]*)/y;

function tokenize(text: string): string[] {
  const out: string[] = [];
  TOKEN.lastIndex = 0;
  while (TOKEN.lastIndex < text.length) {
    if (/^\s*$/.test(text.slice(TOKEN.lastIndex))) break;
    const m = TOKEN.exec(text);
    if (m === null) throw new Error(`cannot read PromQL at: ${text.slice(TOKEN.lastIndex)}`);
    out.push(m[1]!);
  }
  return out;
}

function duration(token: string): number {
  const m = /^(\d+)([smhd])$/.exec(token);
  if (m === null) throw new Error(`not a duration: ${token}`);
  return Number(m[1]) * { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[m[2] as 's'];
}

export function parse(text: string): Node {
  const t = tokenize(text);
  let i = 0;
  const peek = () => t[i];
  const take = (want?: string) => {
    const v = t[i++];
    if (v === undefined || (want !== undefined && v !== want)) throw new Error(`expected ${want ?? 'more'} in ${text}, got ${v}`);
    return v;
  };
  const labelList = (): string[] => {
    take('(');
    const names: string[] = [];
    while (peek() !== ')') {
      names.push(take());
      if (peek() === ',') take(',');
    }
    take(')');
    return names;
  };
  const selector = (): Node & { kind: 'selector' } => {
    const matchers: Matcher[] = [];
    if (peek() !== '{') matchers.push({ name: '__name__', op: '=', value: take() });
    if (peek() === '{') {
      take('{');
      while (peek() !== '}') {
        const name = take();
        const op = take() as Matcher['op'];
        matchers.push({ name, op, value: JSON.parse(take()) as string });
        if (peek() === ',') take(',');
      }
      take('}');
    }
    const node: Node & { kind: 'selector' } = { kind: 'selector', matchers };
    if (peek() === '[') {
      take('[');
      node.rangeMs = duration(take());
      take(']');
    }
    return node;
  };
  const atom = (): Node => {
    if (peek() === '(') {
      take('(');
      const inner = or();
      take(')');
      return inner;
    }
    if ((peek() === 'rate' || peek() === 'increase') && t[i + 1] === '(') {
      const fn = take() as 'rate' | 'increase';
      take('(');
      const arg = selector();
      take(')');
      return { kind: 'call', fn, arg };
    }
    return selector();
  };
  const compare = (): Node => {
    const left = atom();
    if (['==', '!=', '>', '>=', '<', '<='].includes(peek() ?? '')) {
      const op = take();
      return { kind: 'compare', op, left, value: Number(take()) };
    }
    return left;
  };
  const setOp = (ops: string[], next: () => Node) => (): Node => {
    let left = next();
    while (ops.includes(peek() ?? '')) {
      const op = take() as 'and' | 'or' | 'unless';
      const on = peek() === 'on' ? (take(), labelList()) : null;
      left = { kind: 'set', op, on, left, right: next() };
    }
    return left;
  };
  const and = setOp(['and', 'unless'], compare);
  const or = setOp(['or'], and);
  const node = or();
  if (i !== t.length) throw new Error(`unread PromQL: ${t.slice(i).join(' ')}`);
  return node;
}

// ----- evaluation ------------------------------------------------------------------------------

function matches(labels: Labels, ms: readonly Matcher[]): boolean {
  return ms.every((m) => {
    const v = labels[m.name] ?? '';
    if (m.op === '=') return v === m.value;
    if (m.op === '!=') return v !== m.value;
    const re = new RegExp(`^(?:${m.value})$`);
    return m.op === '=~' ? re.test(v) : !re.test(v);
  });
}

const withoutName = (l: Labels): Labels => Object.fromEntries(Object.entries(l).filter(([k]) => k !== '__name__'));
const signature = (l: Labels, on: string[] | null) =>
  JSON.stringify(on === null ? Object.entries(withoutName(l)).sort() : on.map((k) => [k, l[k] ?? '']));

/** extrapolatedIncrease is Prometheus's extrapolatedRate for counters, without the division. */
function extrapolatedIncrease(points: readonly (readonly [number, number])[], start: number, end: number): number | null {
  if (points.length < 2) return null;
  let increase = points.at(-1)![1] - points[0]![1];
  for (let k = 1; k < points.length; k++) if (points[k]![1] < points[k - 1]![1]) increase += points[k - 1]![1];
  const first = points[0]!;
  const last = points.at(-1)!;
  const sampled = (last[0] - first[0]) / 1000;
  const average = sampled / (points.length - 1);
  let toStart = (first[0] - start) / 1000;
  const toEnd = (end - last[0]) / 1000;
  if (increase > 0 && first[1] >= 0) toStart = Math.min(toStart, sampled * (first[1] / increase));
  const threshold = average * 1.1;
  const factor = (sampled + (toStart < threshold ? toStart : average / 2) + (toEnd < threshold ? toEnd : average / 2)) / sampled;
  return increase * factor;
}

export function evaluate(node: Node, series: readonly Series[], at: number): Sample[] {
  switch (node.kind) {
    case 'selector':
      return series.flatMap((s) => {
        if (!matches(s.labels, node.matchers)) return [];
        const p = [...s.samples].reverse().find(([t, v]) => t <= at && !Number.isNaN(v));
        return p === undefined || at - p[0] > LOOKBACK_MS ? [] : [{ labels: s.labels, value: p[1] }];
      });
    case 'call': {
      const range = node.arg.rangeMs!;
      return series.flatMap((s) => {
        if (!matches(s.labels, node.arg.matchers)) return [];
        const points = s.samples.filter(([t, v]) => t > at - range && t <= at && !Number.isNaN(v));
        const inc = extrapolatedIncrease(points, at - range, at);
        if (inc === null) return [];
        return [{ labels: withoutName(s.labels), value: node.fn === 'rate' ? inc / (range / 1000) : inc }];
      });
    }
    case 'compare': {
      const test = {
        '==': (a: number) => a === node.value,
        '!=': (a: number) => a !== node.value,
        '>': (a: number) => a > node.value,
        '>=': (a: number) => a >= node.value,
        '<': (a: number) => a < node.value,
        '<=': (a: number) => a <= node.value,
      }[node.op]!;
      return evaluate(node.left, series, at).filter((x) => test(x.value));
    }
    case 'set': {
      const left = evaluate(node.left, series, at);
      const right = evaluate(node.right, series, at);
      const rightSigs = new Set(right.map((x) => signature(x.labels, node.on)));
      if (node.op === 'and') return left.filter((x) => rightSigs.has(signature(x.labels, node.on)));
      if (node.op === 'unless') return left.filter((x) => !rightSigs.has(signature(x.labels, node.on)));
      const leftSigs = new Set(left.map((x) => signature(x.labels, node.on)));
      return [...left, ...right.filter((x) => !leftSigs.has(signature(x.labels, node.on)))];
    }
  }
}

// ----- alerting rules --------------------------------------------------------------------------

export interface AlertRule {
  readonly alert: string;
  readonly expr: string;
  readonly for?: string;
  readonly labels?: Labels;
  readonly annotations?: Labels;
}
export interface Alert {
  readonly labels: Labels;
  readonly annotations: Labels;
}

function fill(template: string, labels: Labels, value: number): string {
  return template
    .replace(/\{\{\s*\$labels\.([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}/g, (_m, k: string) => labels[k] ?? '')
    .replace(/\{\{\s*\$value\s*\}\}/g, String(value));
}

/**
 * firingAt evaluates `rule` every `stepMs` from time 0 to `at`, as Prometheus's rule manager
 * does, and returns the alerts firing at `at`: active for at least `for`, their labels the
 * sample's (less __name__) with the rule's and `alertname`.
 */
export function firingAt(rule: AlertRule, series: readonly Series[], at: number, stepMs: number): Alert[] {
  const expr = parse(rule.expr);
  const forMs = rule.for === undefined ? 0 : duration(rule.for);
  const since = new Map<string, number>();
  let current: Sample[] = [];
  for (let t = 0; t <= at; t += stepMs) {
    current = evaluate(expr, series, t);
    const keys = new Set(current.map((x) => signature(x.labels, null)));
    for (const k of [...since.keys()]) if (!keys.has(k)) since.delete(k);
    for (const k of keys) if (!since.has(k)) since.set(k, t);
  }
  return current
    .filter((x) => at - since.get(signature(x.labels, null))! >= forMs)
    .map((x) => {
      const labels = { ...withoutName(x.labels), ...rule.labels, alertname: rule.alert };
      const annotations = Object.fromEntries(Object.entries(rule.annotations ?? {}).map(([k, v]) => [k, fill(v, labels, x.value)]));
      return { labels, annotations };
    });
}

// ----- promtool's test files -------------------------------------------------------------------

/** seriesOf reads promtool's input_series: `name{a="b"}` and values like `1 2 _ 3+1x4 5x2`. */
export function seriesOf(input: { series: string; values: string }, intervalMs: number): Series {
  const m = /^\s*([a-zA-Z_:][a-zA-Z0-9_:]*)?\s*(?:\{(.*)\})?\s*$/.exec(input.series);
  if (m === null) throw new Error(`cannot read series ${input.series}`);
  const labels: Labels = m[1] ? { __name__: m[1] } : {};
  for (const [, k, v] of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"/g)) labels[k!] = v!;
  const values: number[] = [];
  for (const word of input.values.trim().split(/\s+/)) {
    const missing = /^_(?:x(\d+))?$/.exec(word);
    if (missing) {
      values.push(...Array(missing[1] === undefined ? 1 : Number(missing[1])).fill(Number.NaN));
      continue;
    }
    const run = /^(-?[\d.]+)(?:([+-][\d.]+))?x(\d+)$/.exec(word);
    if (run) {
      const [a, b, n] = [Number(run[1]), Number(run[2] ?? 0), Number(run[3])];
      for (let k = 0; k <= n; k++) values.push(a + b * k);
      continue;
    }
    values.push(Number(word));
  }
  return { labels, samples: values.map((v, k) => [k * intervalMs, v] as const) };
}
