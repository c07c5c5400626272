import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SCENARIOS } from '../../src/simulator/scenarios.ts';
import { tempDir } from '../helpers.ts';
import { cli } from './process.ts';

describe('se-bridge demo', () => {
  it('plays every scenario against the simulator and ends with a summary table, exit 0', async () => {
    const dir = tempDir();
    try {
      const r = await cli(['demo', '--duration', '12', '--state-dir', dir.path], {}, 60_000);
      expect(r.code).toBe(0);
      for (const s of SCENARIOS) expect(r.stdout).toContain(`-- scenario ${s.name}: ${s.title}`);
      expect(r.stdout).toMatch(
        /Transitions seen per scenario:\nSCENARIO\s+scheduled\s+updated\s+started\s+completed\s+canceled\s+approved\n/,
      );
      // the policy approves the user reboot; a platform reboot gets an approval link
      expect(r.stdout).toMatch(/\nuser-reboot\s+1\s+0\s+\d\s+\d\s+0\s+1\n/);
      expect(r.stdout).toMatch(/ {3}approve Reboot \S+: http:\/\/127\.0\.0\.1:\d+\/v1\/approve\?token=[\w-]+\.[\w-]+\n/);
      // the probe goes out of service for a Freeze of this VM; a long Freeze is approved once it has drained
      expect(r.stdout).toMatch(/ {3}probe lb: 200 in-service\n[^]* {3}probe lb: 503 out-of-service \(Freeze \S+\)\n/);
      expect(r.stdout).toMatch(/\ndrain-then-approve\s+1\s+0\s+\d\s+\d\s+0\s+1\n/);
      expect(r.stdout).toMatch(/APPROVED\s+Freeze\s+\S+\s+.*duration=30s\s+approvedBy=policy drain-long-freeze via=hooks/);
      // host failure appears Started; the other-VM event is still reported (scope all)
      expect(r.stdout).toMatch(/\nhost-failure\s+0\s+0\s+1\s+/);
      expect(r.stdout).toMatch(/\nother-vm-only\s+1\s+/);
      expect(r.stdout).toMatch(/STARTED\s+Reboot\s+\S+\s+vms=sim-vm-0\*/);
      const events = readFileSync(join(dir.path, 'events.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as { specversion: string; source: string; type: string; drill?: boolean });
      const summaryTotal = /\ntotal\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)/
        .exec(r.stdout)!
        .slice(1)
        .map(Number)
        .reduce((a, b) => a + b, 0);
      // the scenarios' events (and, after the summary, the end of those still listed), then the drill's
      const real = events.filter((e) => e.drill === undefined);
      expect(real.length).toBeGreaterThanOrEqual(summaryTotal);
      expect(events.slice(0, summaryTotal).every((e) => e.drill === undefined)).toBe(true);
      expect(events.filter((e) => e.drill === true).map((e) => e.type)).toEqual([
        'azure.scheduledevent.scheduled',
        'azure.scheduledevent.approved',
        'azure.scheduledevent.started',
        'azure.scheduledevent.completed',
      ]);
      // the demo ends with a drill and its report
      expect(r.stdout).toMatch(/-- a drill: `se-bridge drill --type Freeze --notice 5s --duration 3s`/);
      expect(r.stdout).toMatch(/DRILL {2}SCHEDULED {2}Freeze {5}drill-/);
      expect(r.stdout).toMatch(/approval: by policy short-freeze via policy at \+\d+\.\d s \(StartRequests not posted: a drill\)/);
      expect(r.stdout).toMatch(/scheduled\s+lb\s+delivered\s+1\s+rehearsed: would answer 503 on \/probe/);
      expect(r.stdout).toMatch(/\nPASSED: every step of the drill passed\n/);
      expect(events.every((e) => e.specversion === '1.0' && e.source.endsWith('/virtualMachines/sim-vm-0'))).toBe(true);
    } finally {
      dir.cleanup();
    }
    // a 12 s demo, its drill and the summary: bounded by the command's own limit (60 s), not by the default 30 s
  }, 90_000);

  it('--fleet approves three VMs through the relay and a local Service Bus stand-in, each once, then three in a group one at a time, then health gates, calendars and the fleet view, exit 0', async () => {
    const r = await cli(['demo', '--fleet'], {}, 90_000);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/1\. POST \/v1\/approvals for web-0: 200 \{[^\n]*"status":"approved"/);
    expect(r.stdout).toMatch(/2\. the approval link of web-1, posted to the other replica: 200 /);
    expect(r.stdout).toMatch(/3\. a token for web-2 signed with web-0's key: 401 [^\n]*TOKEN_BAD_SIGNATURE/);
    expect(r.stdout).toMatch(
      /4\. the same request to both replicas for web-2: (200 and 202|202 and 200) \(duplicates dropped by the queue: 1\)/,
    );
    expect(r.stdout).toMatch(
      /\nweb-0\s+\w{8}\s+change-pipeline \(api\)\s+1\nweb-1\s+\w{8}\s+approval link \(link\)\s+1\nweb-2\s+\w{8}\s+on-call \(api\)\s+1\n/,
    ); // the fleet budget: one of three at a time, the others held until the slot is given back
    expect(r.stdout).toMatch(/Fleet budget: db-0, db-1 and db-2 in group "db", which allows one member down at once\./);
    // at least two of the three are held (all three when each asked after the others' events were in the queue), each said once
    const held = [...r.stdout.matchAll(/(db-\d): held \((?:the slot is held by db-\d|waiting for its turn in the group's queue)\)/g)].map(
      (m) => m[1],
    );
    expect(held.length).toBeGreaterThanOrEqual(2);
    expect(new Set(held).size).toBe(held.length);
    expect(r.stdout.match(/: maintenance over, slot given back/g) ?? []).toHaveLength(3);
    expect(r.stdout).toMatch(/One member at a time: each approval waited for the previous member/);
    // the collision three reboots at one time make is said once; the daemons' log lines stay out of the story
    expect(
      r.stdout.match(/db-\d: fleet\.collision: [23] of db's 3 members are due for maintenance at once; the group allows 1/g) ?? [],
    ).toHaveLength(1);
    expect(r.stdout + r.stderr).not.toMatch(/^\{"level"/m);

    // health gates: a member whose service is down after its maintenance keeps its slot, and the next approval waits for it
    let rest = after(r.stdout, /Health gates: app-0 and app-1 in group "app", which allows one member down at once\./);
    rest = after(rest, /app-0: approved by policy, holds slot-0: in maintenance\n/);
    rest = after(rest, /app-0: not healthy \(http:\/\/127\.0\.0\.1:\d+\/app-0 answered 503, not 200\)\n/);
    rest = after(rest, /app-0: maintenance over \(IMDS no longer lists it\), but not healthy: it keeps slot-0\n/);
    rest = after(rest, /app-1: Reboot scheduled; the policy's approval is held \(the slot is held by app-0, not healthy yet\)\n/);
    rest = after(rest, /app-0: its service answers 200 again\n/);
    rest = after(rest, /app-0: healthy for 2 s: slot-0 given back\n/);
    rest = after(rest, /app-1: holds slot-0: approved\n/);
    expect(rest).toMatch(/^\napp-1 waited until app-0 was whole again, not only until its maintenance was over\.\n/);

    // calendars: held by a blackout while another member is approved; a person forces it, on the record
    rest = after(r.stdout, /Calendars: api-0 and api-1 in group "api"[^\n]*; api-0's calendar has a blackout, release-freeze,/);
    expect(rest).toMatch(/\n {2}api-1: approved by policy \(no calendar\)\n/);
    rest = after(rest, /\n {2}api-0: calendar\.conflict: Azure acts from \S+ to \S+ inside the blackout release-freeze \(UTC\)\n/);
    rest = after(rest, /\n {2}api-0: held by the calendar: \d+ reads of IMDS since its Reboot appeared, and the policy approved nothing\n/);
    rest = after(rest, /POST \/v1\/approvals for api-0 \(a person, without force\): 409 [^\n]*"code":"BLACKOUT"[^\n]*release-freeze/);
    rest = after(rest, /POST \/v1\/approvals for api-0 with "force": true and a reason: 200 [^\n]*"forced":true/);
    rest = after(
      rest,
      /api-0: azure\.scheduledevent\.approved, data\.approval [^\n]*"forced":true,"reason":"[^"\n]*inside the blackout release-freeze"/,
    );
    expect(rest).toMatch(
      /\napi-0 was held by its calendar while api-1 was approved; the forced approval went past the blackout, on the record\.\n/,
    );

    // the fleet view: the relay's read API, summarised; Azure's feed names a VM no bridge watches
    rest = after(r.stdout, /The fleet view: GET \/v1\/fleet on the relay[^\n]*\n/);
    expect(rest).toMatch(/^GROUP\s+BUDGET\s+MEMBERS\s+STALE\s+PENDING\s+SLOTS\n/);
    expect(rest).toMatch(/\napi\s+-\s+2\s+0\s+2\s+-\n/);
    expect(rest).toMatch(/\napp\s+1\s+2\s+0\s+1\s+slot-0: app-1 \(early\)\n/);
    expect(rest).toMatch(/\ndb\s+1\s+3\s+0\s+0\s+-\n/);
    expect(rest).toMatch(/\napi-0\s+api\s+-\s+-\s+closed: inside the blackout release-freeze\s+1\n/);
    expect(rest).toMatch(/\napp-0\s+app\s+-\s+healthy\s+-\s+0\n/);
    rest = after(
      rest,
      /Event Grid delivers Azure's record of a Freeze of batch-7, a VM no bridge watches[^\n]*: 200 \{"received":1,"kept":1,"ignored":0\}\n/,
    );
    rest = after(rest, /the relay's sink: [^\n]*UNWATCHED\s+Freeze\s+\S+[^\n]*batch-7/);
    rest = after(rest, /GET \/v1\/fleet\/events: 4 pending events\n/);
    expect(rest).toMatch(/\nbatch-7\s+-\s+\w{8}\s+Freeze\s+Scheduled\s+-\s+unwatched: no-member\n/);
    expect(rest).toMatch(/\napp-1\s+app\s+\w{8}\s+Reboot\s+Started\s+policy rules\[0\] \(policy\)\s+-\n/);
    expect(rest).toMatch(/\napi-0\s+api\s+\w{8}\s+Reboot\s+Started\s+change-board \(api\)\s+-\n/);
    // the console, open on the same fleet, its key printed (signed in by the demo itself)
    expect(rest).toMatch(/\nThe fleet console: http:\/\/127\.0\.0\.1:\d+\/console \(sign in with the key [\w-]{32}\)\n/);
  }, 120_000);
});

/** after: the text of `out` that follows the first match of `line` (so a later match is known to come after it). */
function after(out: string, line: RegExp): string {
  const m = line.exec(out);
  expect(m, `${line}`).not.toBeNull();
  return out.slice(m!.index + m![0].length);
}
