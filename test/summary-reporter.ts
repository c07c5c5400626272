/**
 * A vitest reporter that ends the run with one plain line, "tests: N passed, N failed"
 * (", N skipped" when any were), for tools that read a run's closing line.
 *
 * A test counts as failed when it failed, and also when it never ran because its file failed
 * around it (an import error, a beforeAll or afterAll that threw): a suite that could not run
 * is a failure, never a skip.
 */
import type { Reporter, TestModule } from 'vitest/node';

export interface Summary {
  passed: number;
  failed: number;
  skipped: number;
}

/** summarize counts a finished run's tests (see the module comment). */
export function summarize(testModules: ReadonlyArray<TestModule>): Summary {
  const s: Summary = { passed: 0, failed: 0, skipped: 0 };
  for (const m of testModules) {
    const tests = [...m.children.allTests()];
    // failed around its tests: an error of the file itself, or a failed file with no failed test
    const broken = m.errors().length > 0 || (m.state() === 'failed' && !tests.some((t) => t.result().state === 'failed'));
    let unrun = 0;
    for (const t of tests) {
      const state = t.result().state;
      if (state === 'passed') s.passed++;
      else if (state === 'failed') s.failed++;
      else if (broken) unrun++;
      else s.skipped++;
    }
    s.failed += broken ? Math.max(1, unrun) : 0;
  }
  return s;
}

export default class SummaryReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    const { passed, failed, skipped } = summarize(testModules);
    process.stdout.write(`\ntests: ${passed} passed, ${failed} failed${skipped > 0 ? `, ${skipped} skipped` : ''}\n`);
  }
}
