/**
 * launchChromium starts the headless Chromium the browser tests drive through playwright-core:
 * the binary at CHROMIUM_PATH when set (Debian's is /usr/bin/chromium), otherwise the one that
 * `npm ci` installs with @sparticuz/chromium (it unpacks itself into the temp folder on first
 * use). No browser is ever downloaded.
 */
import { chromium, type Browser } from 'playwright-core';

/** Flags for a closed network: no background requests, no first-run work, no GPU. */
const QUIET = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'];

export async function launchChromium(): Promise<Browser> {
  const path = process.env.CHROMIUM_PATH;
  if (path !== undefined && path !== '') return chromium.launch({ executablePath: path, args: QUIET });
  const packaged = (await import('@sparticuz/chromium')).default;
  // Its own flags, less those that weaken the page's security model (the tests check the CSP).
  const weakening = new Set(['--disable-web-security', '--allow-running-insecure-content']);
  const args = [...packaged.args.filter((a) => !weakening.has(a)), ...QUIET.filter((a) => a !== '--headless')];
  return chromium.launch({ executablePath: await packaged.executablePath(), args });
}
