/**
 * Azurite, Microsoft's Azure Storage emulator (the `azurite` npm package, a development
 * dependency), started as a child process serving Blob Storage on 127.0.0.1 at a free port, in
 * memory. It speaks the real Blob REST API, conditional headers and all, to the real
 * @azure/storage-blob client: the fleet budget's store in the tests, the benchmarks and
 * `demo --fleet`. `Azurite.available()` says whether it is installed (a checkout after npm ci).
 */
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import type { Readable } from 'node:stream';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

/** Azurite's published development account and key (its documentation's, the same on every install). */
export { DEV_ACCOUNT, DEV_KEY } from '../azure/dev-storage.ts';
import { DEV_ACCOUNT, DEV_KEY } from '../azure/dev-storage.ts';

/** azuritePackage: where the azurite package's package.json is (a require resolution, so it also works from the bundle). */
const azuritePackage = (): string => createRequire(import.meta.url).resolve('azurite/package.json');

export class Azurite {
  readonly #child: ChildProcessByStdio<null, Readable, Readable>;
  readonly #dir: string;
  url = '';

  private constructor(child: ChildProcessByStdio<null, Readable, Readable>, dir: string) {
    this.#child = child;
    this.#dir = dir;
  }

  /** available: the azurite package is installed here. */
  static available(): boolean {
    try {
      azuritePackage();
      return true;
    } catch {
      return false;
    }
  }

  /**
   * start launches Azurite's blob service and waits (at most 30 s) until it listens. With `tls`
   * (PEM files) it serves HTTPS, and with `oauth` it also takes Entra ID bearer tokens (Azurite's
   * "basic" check: issuer, audience and lifetime; it needs HTTPS).
   */
  static async start(o: { tls?: { cert: string; key: string }; oauth?: boolean } = {}): Promise<Azurite> {
    const main = join(dirname(azuritePackage()), 'dist/src/blob/main.js');
    const dir = mkdtempSync(join(tmpdir(), 'se-bridge-test-azurite-'));
    const child = spawn(
      process.execPath,
      [
        main,
        '--blobHost',
        '127.0.0.1',
        '--blobPort',
        '0',
        '--inMemoryPersistence',
        '--skipApiVersionCheck',
        '--disableTelemetry',
        '--silent',
        ...(o.tls ? ['--cert', o.tls.cert, '--key', o.tls.key] : []),
        ...(o.oauth ? ['--oauth', 'basic'] : []),
      ],
      { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const azurite = new Azurite(child, dir);
    let out = '';
    azurite.url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`Azurite did not start within 30 s: ${out}`)), 30_000);
      const seen = (c: Buffer) => {
        out += c.toString();
        const m = /listens on (https?:\/\/127\.0\.0\.1:\d+)/.exec(out);
        if (m) {
          clearTimeout(timer);
          resolve(m[1]!);
        }
      };
      child.stdout.on('data', seen);
      child.stderr.on('data', seen);
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`Azurite exited with ${code}: ${out}`));
      });
    });
    return azurite;
  }

  /** The account's blob endpoint. */
  get blobEndpoint(): string {
    return `${this.url}/${DEV_ACCOUNT}`;
  }

  /** A connection string to the emulator's account, through `endpoint` (default: Azurite itself). */
  connectionString(endpoint = this.blobEndpoint): string {
    return `DefaultEndpointsProtocol=http;AccountName=${DEV_ACCOUNT};AccountKey=${DEV_KEY};BlobEndpoint=${endpoint};`;
  }

  async stop(): Promise<void> {
    if (this.#child.exitCode === null) {
      const gone = new Promise((resolve) => this.#child.once('exit', resolve));
      this.#child.kill('SIGTERM');
      const timer = setTimeout(() => this.#child.kill('SIGKILL'), 5000);
      await gone;
      clearTimeout(timer);
    }
    rmSync(this.#dir, { recursive: true, force: true });
  }
}
