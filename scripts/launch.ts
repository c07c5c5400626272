/**
 * How the daemon is started where it is deployed, each read from the one place it is written:
 * the V8 flags from the package's bin (its #! line, bin/se-bridge.js), which the single
 * executable is built with too (build-binary.ts); and the environment the systemd unit sets for
 * the process (glibc's allocator settings, config/systemd/se-bridge.service), which the image
 * sets too (build-image.ts). The benchmarks run the daemon with both.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const read = (path: string) => readFileSync(fileURLToPath(new URL(`../${path}`, import.meta.url)), 'utf8');

/** v8FlagsOf parses a `#!/usr/bin/env -S node --FLAG...` line. */
export function v8FlagsOf(shebang: string): string[] {
  const m = /^#!\/usr\/bin\/env -S node((?: --\S+)+)$/.exec(shebang);
  if (m === null) throw new Error(`bin/se-bridge.js: the first line is not "#!/usr/bin/env -S node --FLAG...": ${shebang}`);
  return m[1]!.trim().split(/\s+/);
}

/** allocatorEnvOf: the glibc settings (`Environment=GLIBC_TUNABLES=...`, `MALLOC_...`) of a systemd unit. */
export function allocatorEnvOf(unit: string): Record<string, string> {
  return Object.fromEntries([...unit.matchAll(/^Environment=((?:GLIBC_TUNABLES|MALLOC_[A-Z_]+))=(\S+)$/gm)].map((m) => [m[1]!, m[2]!]));
}

export const LAUNCH = {
  v8Flags: v8FlagsOf(read('bin/se-bridge.js').split('\n')[0]!),
  env: allocatorEnvOf(read('config/systemd/se-bridge.service')),
};
