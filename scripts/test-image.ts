/**
 * npm run test:image: builds the image (npm run build:image) and runs it with Podman: as its
 * non-root user, `--version`, `validate` of the DaemonSet's configuration mounted where the
 * DaemonSet mounts it, and `demo --duration 10` inside the container. Prints what it checked
 * and the image's size; exits 1 on the first check that fails. Needs Podman and runc, which
 * `npm ci` cannot bring, so it is not part of `npm test`.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import { IMAGE, podman } from './build-image.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
let failed = 0;

function check(what: string, ok: boolean, detail = ''): void {
  process.stdout.write(`${ok ? 'ok  ' : 'FAIL'}  ${what}${detail ? `: ${detail}` : ''}\n`);
  if (!ok) failed += 1;
}

/** run starts the image with the arguments; the exit status and output, whatever they are. */
function run(args: string[], extra: string[] = []): { code: number; out: string } {
  try {
    return { code: 0, out: podman(['run', '--rm', '--network', 'none', '--cgroups=enabled', ...extra, IMAGE, ...args]) };
  } catch (err) {
    const e = err as { status?: number; stdout?: string; stderr?: string };
    return { code: e.status ?? 1, out: `${e.stdout ?? ''}${e.stderr ?? ''}` };
  }
}

execFileSync(process.execPath, [join(ROOT, 'scripts', 'build-image.ts')], { cwd: ROOT, stdio: 'inherit' });

const config = JSON.parse(podman(['image', 'inspect', '--format', '{{json .Config}}', IMAGE])) as {
  User?: string;
  Entrypoint?: string[];
  Cmd?: string[];
};
check('runs as the non-root user 10001:10001', config.User === '10001:10001', config.User);
check(
  'entrypoint se-bridge, default command run',
  JSON.stringify(config.Entrypoint) === '["/usr/local/bin/se-bridge"]' && JSON.stringify(config.Cmd) === '["run"]',
);

const version = run(['--version']);
check('se-bridge --version', version.code === 0 && version.out.includes(VERSION), version.out.trim());

const dir = mkdtempSync(join(tmpdir(), 'se-bridge-image-'));
try {
  const daemonset = parseAllDocuments(readFileSync(join(ROOT, 'config', 'kubernetes', 'daemonset.yaml'), 'utf8')).map(
    (d) => d.toJS() as Record<string, any>,
  );
  // world-readable, as a ConfigMap volume is: the bridge's user is not the owner
  chmodSync(dir, 0o755);
  writeFileSync(join(dir, 'bridge.yaml'), daemonset.find((d) => d.kind === 'ConfigMap')!.data['bridge.yaml'], { mode: 0o644 });
  const validate = run(
    ['validate'],
    [
      '-v',
      `${dir}:/etc/se-bridge:ro,Z`,
      '-e',
      'EVENTHUB_CONNECTION_STRING=Endpoint=sb://x.servicebus.windows.net/;SharedAccessKeyName=k;SharedAccessKey=v;EntityPath=h',
    ],
  );
  check(
    "validate the DaemonSet's configuration at /etc/se-bridge/bridge.yaml",
    validate.code === 0 && /valid; sinks: .*node \(kubernetes\)/.test(validate.out),
    validate.out.trim(),
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}

const started = Date.now();
const demo = run(['demo', '--duration', '10']);
const summary = /Transitions seen per scenario:\n[^]*\ntotal\s+[\d\s]+/.exec(demo.out)?.[0] ?? '';
check(
  `demo --duration 10 (${((Date.now() - started) / 1000).toFixed(1)} s)`,
  demo.code === 0 && summary !== '' && demo.out.includes('probe lb: 503 out-of-service'),
  demo.code === 0 ? 'exit 0' : demo.out.slice(-2000),
);
if (summary !== '') process.stdout.write(`${summary}\n`);

const size = Number(podman(['image', 'inspect', '--format', '{{.Size}}', IMAGE]).trim());
process.stdout.write(`${IMAGE}: ${(size / 2 ** 20).toFixed(1)} MiB\n`);
process.exit(failed === 0 ? 0 : 1);
