/**
 * launchChromium starts the headless Chromium the browser tests drive through playwright-core:
 * the binary at CHROMIUM_PATH when set (Debian's is /usr/bin/chromium), otherwise the one that
 * `npm ci` installs with @sparticuz/chromium. That package unpacks its binary into the temp
 * folder on first use and reuses whatever it finds there, so it is given a folder of this
 * user's own: a copy unpacked by another user (root, say) is never picked up unreadable.
 * No browser is ever downloaded.
 */
import { mkdirSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser } from 'playwright-core';

/** Flags for a closed network: no background requests, no first-run work, no GPU. */
const QUIET = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];

export async function launchChromium(): Promise<Browser> {
  const path = process.env.CHROMIUM_PATH;
  if (path !== undefined && path !== '') return chromium.launch({ executablePath: path, args: QUIET });
  const own = join(tmpdir(), `se-bridge-chromium-${userInfo().uid}`);
  mkdirSync(own, { recursive: true, mode: 0o700 });
  const saved = process.env.TMPDIR;
  process.env.TMPDIR = own;
  try {
    const packaged = (await import('@sparticuz/chromium')).default;
    const executablePath = await packaged.executablePath();
    // Its own flags, less those that weaken the page's security model (the tests check the CSP).
    const weakening = new Set(['--disable-web-security', '--allow-running-insecure-content']);
    const args = [...packaged.args.filter((a) => !weakening.has(a)), ...QUIET.filter((a) => a !== '--headless')];
    return await chromium.launch({ executablePath, args });
  } finally {
    if (saved === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = saved;
  }
}
