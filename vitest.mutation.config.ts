import { defineConfig, mergeConfig } from 'vitest/config';
import base from './vitest.config.ts';

/**
 * The test files of one mutation run (`npm run test:mutation`): SE_BRIDGE_MUTATION_TESTS lists
 * them, comma-separated; the module under mutation is exercised in the runner's own process by
 * these files, so a mutant reaches them.
 */
const files = (process.env.SE_BRIDGE_MUTATION_TESTS ?? '').split(',').filter((f) => f !== '');

const config = mergeConfig(base, defineConfig({}));
// the base's list of files and reporters replaced, not added to
config.test = { ...config.test, include: files, reporters: ['default'] };
export default config;
