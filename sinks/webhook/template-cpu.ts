/**
 * The CPU time a template has spent, as the template runner counts it (template-runner.ts): what
 * the worker's thread used since it took the job, not the time that passed, so a machine busy
 * with other work never makes a template look like one that runs away.
 *
 * The worker says its thread's CPU time as it takes a job (process.threadCpuUsage, in the worker);
 * Worker.cpuUsage reads it from outside while the worker is busy, even in a regular expression
 * that never returns. Node.js before 24.6 has no Worker.cpuUsage: there, the process's CPU time
 * since the job was posted, less this thread's, stands for it (the worker's, and the little the
 * runtime's other threads used meanwhile).
 */
import type { Worker } from 'node:worker_threads';

/** What the runner keeps of a job's start. */
export interface Taken {
  /** The worker thread's CPU time (µs) as it took the job; undefined until it says, null when it cannot read it. */
  took: number | null | undefined;
  /** The process's CPU time but this thread's (µs) when the job was posted. */
  readonly process: number;
}

const micros = (u: NodeJS.CpuUsage) => u.user + u.system;

/** processCpu: the process's CPU time less this thread's, in µs. */
export function processCpu(): number {
  const own = typeof process.threadCpuUsage === 'function' ? micros(process.threadCpuUsage()) : 0;
  return micros(process.cpuUsage()) - own;
}

/**
 * cpuSpent: the CPU time (ms) the worker has spent on the job since it took it; 0 before it did;
 * null when the worker did not say within `waitMs` (it is stuck where it cannot even be asked).
 */
export async function cpuSpent(job: Taken, worker: Worker, waitMs: number): Promise<number | null> {
  if (typeof worker.cpuUsage !== 'function' || job.took === null) return (processCpu() - job.process) / 1000;
  if (job.took === undefined) return 0;
  const took = job.took;
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      worker.cpuUsage().then((u) => (micros(u) - took) / 1000),
      new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), waitMs))),
    ]);
  } catch {
    return 0; // the worker is gone: its exit fails the job
  } finally {
    clearTimeout(timer);
  }
}
