/** VERSION is the package's version, read from package.json: one place to change it. */
import { createRequire } from 'node:module';

export const VERSION: string = (createRequire(import.meta.url)('../../package.json') as { version: string }).version;
