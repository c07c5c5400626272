import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'sinks/**/*.test.ts'],
    // only in npm run test:reliability: real-time faults of minutes, a daemon run as another
    // user (which needs the checkout readable by that user), a tmpfs mount (which needs root)
    exclude: [
      'test/reliability/imds-long-faults.test.ts',
      'test/reliability/disk.test.ts',
      'test/reliability/disk-full.test.ts',
      '**/node_modules/**',
    ],
    // every test stops what it starts: a process a test started and left running fails the run
    globalSetup: ['./test/global-setup.ts'],
    // two files at a time, also on a machine of two cores (vitest's default there is one): most
    // of the suite waits on timers, peers and child processes, not on the CPU
    maxWorkers: 2,
    testTimeout: 30_000,
    hookTimeout: 30_000,
    reporters: ['default', './test/summary-reporter.ts'],
  },
});
