/**
 * A command's processes, stopped as one: what a run starts (a shell, and whatever it forks) must
 * not outlive a stop, or a command that hangs leaves a process behind at every run. The exec
 * sink's hooks and the health block's exec checks start their commands this way.
 *
 * On Linux and macOS the command leads a process group of its own (`ownGroup`: spawn's
 * `detached`); stopping it sends SIGTERM to the whole group, then SIGKILL to what is left of it
 * after a grace, so a process that ignores SIGTERM goes too. On Windows `taskkill /t /f` ends the
 * process and its descendants at once (a console process without a window has no gentler stop).
 */
import { spawn } from 'node:child_process';

/** How long a stopped command's processes have between SIGTERM and SIGKILL. */
export const KILL_GRACE_MS = 2000;
/** How often, during the grace, whether the group is gone is looked at (it ends the wait early). */
const LOOK_MS = 100;

/** ownGroup: the spawn option that makes the command lead a process group of its own (not on Windows, where a tree is killed by its parent). */
export const ownGroup = { detached: process.platform !== 'win32' } as const;

/** signalGroup sends `signal` to the process group `pid` leads; false when no process of it is left. */
function signalGroup(pid: number, signal: NodeJS.Signals | 0): boolean {
  try {
    process.kill(-pid, signal);
    return true;
  } catch {
    return false; // ESRCH: the group is gone
  }
}

/**
 * killTree stops the command whose process is `pid`, with everything it started: started with
 * `ownGroup`, SIGTERM to its group, then SIGKILL to the group after `graceMs` unless it is gone
 * by then; on Windows its process tree, at once. It returns when the signals are sent, not when
 * the processes have exited.
 */
export function killTree(pid: number, graceMs: number = KILL_GRACE_MS): void {
  if (process.platform === 'win32') {
    spawn('taskkill', ['/pid', String(pid), '/t', '/f'], { stdio: 'ignore', windowsHide: true }).on('error', () => undefined);
    return;
  }
  if (!signalGroup(pid, 'SIGTERM')) return;
  const until = performance.now() + graceMs;
  const look = () => {
    if (!signalGroup(pid, 0)) return;
    if (performance.now() >= until) signalGroup(pid, 'SIGKILL');
    else setTimeout(look, Math.min(LOOK_MS, Math.max(1, until - performance.now())));
  };
  setTimeout(look, Math.min(LOOK_MS, graceMs));
}
