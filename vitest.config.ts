import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // real-time faults of minutes: only in npm run test:reliability
    exclude: ['test/reliability/imds-long-faults.test.ts', '**/node_modules/**'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    reporters: ['default', './test/summary-reporter.ts'],
  },
});
