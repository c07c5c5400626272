/**
 * `se-bridge fleet pause` and `fleet resume` as a person runs them, over Blob Storage served by
 * Azurite: a bad request exits 2 and writes nothing; a pause is written with who, why, since and
 * until, and `fleet status` (text and JSON) says it; resume removes it and says what it ended.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Azurite, DEV_ACCOUNT } from '../../src/simulator/azurite.ts';
import { FleetConfig } from '../../src/fleet/budget/config.ts';
import { PAUSE_NAME, PauseSchema } from '../../src/fleet/budget/pause.ts';
import { openFleetStore } from '../../src/fleet/budget/stores/open.ts';
import { tempDir } from '../helpers.ts';
import { cli } from './process.ts';

let azurite: Azurite;
let dir: ReturnType<typeof tempDir>;

beforeAll(async () => {
  azurite = await Azurite.start();
  dir = tempDir();
}, 60_000);

afterAll(async () => {
  await azurite?.stop();
  dir?.cleanup();
});

describe('fleet pause and resume', () => {
  it('refuses a pause without a reason or with an end that is not to come (exit 2, nothing written), and pauses and resumes the group', async () => {
    const group = 'pause-cli';
    const fleet = {
      group,
      maxUnavailable: 1,
      store: { type: 'blob', connectionString: azurite.connectionString(`${azurite.url}/${DEV_ACCOUNT}`), container: 'e2e' },
    };
    const config = join(dir.path, 'pause.json');
    writeFileSync(config, JSON.stringify({ state: { path: join(dir.path, 'pause.db') }, observability: { listen: 'off' }, fleet }));
    const store = await openFleetStore(FleetConfig.parse(fleet).store, group);
    const run = (...args: string[]) => cli(['fleet', ...args, '--config', config]);
    try {
      for (const [args, why] of [
        [['pause'], /a pause needs a reason/],
        [['pause', '--reason', ''], /a pause needs a reason/],
        [['pause', '--reason', 'release', '--until', 'tomorrow'], /until \(tomorrow\) is not a time/],
        [['pause', '--reason', 'release', '--until', '2020-01-01T00:00:00Z'], /is not in the future/],
      ] as const) {
        const r = await run(...args);
        expect({ args, code: r.code }).toEqual({ args, code: 2 });
        expect(r.stderr).toMatch(why);
      }
      expect(await store.get(PAUSE_NAME)).toBeNull();

      const until = new Date(Date.now() + 3_600_000).toISOString();
      const paused = await run('pause', '--reason', 'release 4.2', '--until', until);
      expect(paused).toMatchObject({ code: 0, stderr: '' });
      expect(paused.stdout).toMatch(
        new RegExp(`^group pause-cli is paused by cli:\\S+ since \\S+ \\(until ${until.replace(/\./g, '\\.')}\\): release 4\\.2\\n`),
      );
      expect(PauseSchema.parse((await store.get(PAUSE_NAME))?.value)).toMatchObject({ by: 'person', why: 'release 4.2', until });

      const text = await run('status');
      expect(text.stdout).toMatch(
        /^PAUSED: group pause-cli is paused by cli:\S+ since .*: release 4\.2\. No early approval in the group but a forced one/m,
      );
      const json = JSON.parse((await run('status', '--json')).stdout) as { pause: unknown };
      expect(json.pause).toMatchObject({ by: 'person', why: 'release 4.2', until });

      const resumed = await run('resume');
      expect(resumed).toMatchObject({ code: 0, stderr: '' });
      expect(resumed.stdout).toMatch(/^Resumed group pause-cli: group pause-cli is paused by cli:\S+ .*: release 4\.2\./);
      expect(await store.get(PAUSE_NAME)).toBeNull();
      expect((await run('resume')).stdout).toMatch(/^Group pause-cli was not paused\./);
      expect(JSON.parse((await run('status', '--json')).stdout)).toMatchObject({ pause: null });
    } finally {
      await store.close();
    }
  }, 120_000);
});
