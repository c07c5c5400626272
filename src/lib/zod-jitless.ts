/**
 * zod-jitless: imported first by the command line, before any schema is built. zod compiles a
 * fast parser for each object schema with `new Function` at its first parse; a daemon parses its
 * configuration once and an IMDS document a second, so those compiled parsers buy nothing and
 * cost about 1 MiB of memory (docs/performance.md). Without them zod parses the same way, by
 * walking the schema.
 */
import { z } from 'zod';

z.config({ jitless: true });
