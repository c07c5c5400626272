import { defineConfig } from 'vitest/config';

/**
 * npm run test:reliability: the heavier cut of the crash and hostile-caller tests
 * (50 SIGKILL rounds, 10,000 generated requests). Bounded: a few minutes on 2 cores.
 */
export default defineConfig({
  test: {
    include: ['test/e2e/crash-restart.test.ts', 'test/integration/approvals-fuzz.test.ts', 'test/reliability/**/*.test.ts'],
    // every test stops what it starts: a process a test started and left running fails the run
    globalSetup: ['./test/global-setup.ts'],
    testTimeout: 600_000,
    hookTimeout: 60_000,
    env: { SE_BRIDGE_CRASH_ROUNDS: '50', SE_BRIDGE_FUZZ_COUNT: '10000' },
    reporters: ['default', './test/summary-reporter.ts'],
  },
});
