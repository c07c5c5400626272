/**
 * The suite's own hygiene (testkit/test-hygiene.ts): no test file compares an elapsed wall-clock
 * time in an assertion, awaits a fixed sleep outside a bounded polling loop, or leaves a test out.
 * The check is shown catching each pattern on small samples, and passing what the suite does
 * instead.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { hygieneOf, testFiles } from '../../testkit/test-hygiene.ts';
import { ROOT } from '../helpers.ts';

/**
 * ALLOWED: the breaches the suite keeps on purpose, each with its reason. A lower bound on the gaps
 * between the bridge's own reads: the poll loop and the shared rate budget sleep on the real clock
 * (the budget's decisions are also checked in virtual time, test/unit/backoff.test.ts and
 * test/integration/imds-client.test.ts); a loaded machine only lengthens gaps, so these cannot fail
 * from load, and nothing else shows that the whole bridge spaces its reads.
 */
const ALLOWED: readonly { file: string; text: string; why: string }[] = [
  {
    file: 'test/integration/bridge.test.ts',
    text: 'expect(Math.min(...gaps)).toBeGreaterThanOrEqual(198)',
    why: 'the least gap between two polls of the real poll loop: a lower bound, which load only lengthens',
  },
  {
    file: 'test/integration/bridge.test.ts',
    text: 'expect(all[i + 5]! - all[i]!).toBeGreaterThanOrEqual(950)',
    why: 'the rate budget shared by every IMDS caller of one bridge, on the real clock: a lower bound, which load only lengthens',
  },
  {
    file: 'test/integration/fleet-wave-alerts.test.ts',
    text: 'expect(spoken[i]!.at - spoken[i - 1]!.at).toBeGreaterThanOrEqual(60_000)',
    why: "a wave's words at most a minute apart, read from the time each speaker stamped on them (its own clock, the one it spaces them by): a lower bound, which load only lengthens",
  },
];
const allowed = (f: { file: string; text: string }) => ALLOWED.some((a) => a.file === f.file && f.text.startsWith(a.text));

const rules = (text: string) => hygieneOf('sample.test.ts', text).map((f) => `${f.line}:${f.rule}`);

describe('test hygiene', () => {
  it('no test file of test/, sinks/ or testkit/ times itself on the wall clock, sleeps to synchronize, or leaves a test out', () => {
    const files = testFiles(ROOT, ['test', 'sinks', 'testkit']);
    expect(files.length).toBeGreaterThan(100);
    const found = files.flatMap((f) => hygieneOf(f, readFileSync(join(ROOT, f), 'utf8')));
    expect(found.filter((f) => !allowed(f)).map((f) => `${f.file}:${f.line}: ${f.rule}: ${f.text}`)).toEqual([]);
    // every exception still stands for something in the suite
    expect(ALLOWED.filter((a) => !found.some((f) => f.file === a.file && f.text.startsWith(a.text)))).toEqual([]);
  });

  it.each([
    ['a clock read less a start', 'const t0 = Date.now();\nexpect(Date.now() - t0).toBeLessThan(1000);'],
    ['performance.now', 'const a = performance.now();\nexpect(performance.now() - a).toBeGreaterThanOrEqual(99);'],
    ['process.hrtime', 'expect(process.hrtime.bigint() - t0).toBeLessThan(5n);'],
    ['two recorded instants', 'expect(b.at - a.at).toBeGreaterThanOrEqual(2000 - 100);'],
    ['a tolerance around a deadline', 'expect(ask.at).toBeGreaterThanOrEqual(notBefore - 1500);'],
    ['a window around now', 'expect(Date.parse(m.heartbeatAt)).toBeGreaterThan(Date.now() - 60_000);'],
    ['a spread of instants', 'expect(Math.max(...xs.map((r) => r.at)) - Math.min(...xs.map((r) => r.at))).toBeLessThan(1000);'],
    [
      'a list of gaps',
      'const at = reads.map((r) => r.at);\nconst gaps = at.slice(1).map((t, i) => t - at[i]);\nexpect(Math.max(...gaps)).toBeLessThanOrEqual(6000);',
    ],
    ['a duration by name', 'expect(report.approval.atMs).toBeLessThan(30_000);'],
    ['seconds against now', "expect(Math.abs(Number(h['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(60);"],
    ['under .not', 'expect(Date.now() - t0).not.toBeGreaterThan(5);'],
  ])('catches an elapsed time compared in an assertion: %s', (_what, code) => {
    expect(rules(code)).toEqual([`${code.split('\n').length}:elapsed-time`]);
  });

  it.each([
    ['a promised setTimeout', 'it("x", async () => {\n  await new Promise((r) => setTimeout(r, 500));\n});'],
    ['a named resolve', 'it("x", async () => {\n  await new Promise((resolve) => { setTimeout(resolve, 500); });\n});'],
    ['sleep', 'it("x", async () => {\n  await sleep(500);\n});'],
    ['delay', 'it("x", async () => {\n  await delay(500);\n});'],
    ["timers/promises' setTimeout", 'it("x", async () => {\n  await setTimeout(500);\n});'],
    ['in a hook', 'beforeEach(async () => {\n  await sleep(100);\n});'],
  ])('catches a sleep awaited in a test body: %s', (_what, code) => {
    expect(rules(code)).toEqual(['2:sleep']);
  });

  it.each([
    ['it.skip', 'it.skip("x", () => {});'],
    ['describe.skip', 'describe.skip("x", () => {});'],
    ['it.only', 'it.only("x", () => {});'],
    ['describe.only', 'describe.only("x", () => {});'],
    ['test.todo', 'test.todo("x");'],
    ['it.skip.each', 'it.skip.each([1])("x %s", () => {});'],
    ['xit', 'xit("x", () => {});'],
  ])('catches a test left out: %s', (_what, code) => {
    expect(rules(code)).toContain('1:left-out');
  });

  it('passes what the suite does instead: an order, an injected clock, a bounded poll, a platform condition', () => {
    const code = [
      'expect(h.sim.startRequests[0]!.at).toBeGreaterThanOrEqual(hold.since + 2000);',
      'a.now = t0 + 70_000;',
      'expect(Date.parse(state.until)).toBeGreaterThan(t0 + 630_000);',
      'expect(b.sim.startRequests[0]!.at).toBeGreaterThan(until);',
      'expect(claims.exp).toBeGreaterThanOrEqual(before + 86_399);',
      'expect(reads.length).toBeGreaterThan(0);',
      'expect(pauses.every((ms) => ms <= 5000)).toBe(true);',
      'for (let i = 0; i < 40; i++) { await new Promise((r) => setTimeout(r, 50)); }',
      'const timer = setTimeout(() => child.kill(), 60_000);',
      "it.skipIf(process.platform === 'win32')('x', () => {});",
      'await waitFor(() => sim.requests.length > mark, "a later read");',
    ].join('\n');
    expect(rules(code)).toEqual([]);
  });
});
