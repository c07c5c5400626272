/** What `prepare --dry-run` says of a probe sink: what it would do, and what the running daemon's probe answers now. */
import type { Rehearsal, RehearsalOptions } from '../../src/api.ts';
import { HttpClient, parseHostPort } from '../../src/kit.ts';

/** How long `prepare --dry-run` waits for the running daemon's probe to answer. */
const ASK_DEADLINE_MS = 2000;

/**
 * rehearseProbe: what the probe would do for a maintenance now (answer 503 for drainSeconds
 * before counting as out of the load balancer), and what the running daemon's probe answers now.
 */
export async function rehearseProbe(
  config: { readonly listen: string; readonly path: string; readonly drainSeconds: number },
  o: RehearsalOptions,
): Promise<Rehearsal> {
  // the schema checked the address; an unspecified one is asked on the loopback
  const listen = parseHostPort(config.listen)!;
  const host = listen.host === '0.0.0.0' ? '127.0.0.1' : listen.host === '::' ? '::1' : listen.host;
  const at = `${host.includes(':') ? `[${host}]` : host}:${listen.port}`;
  let now: number | null = null;
  const http = new HttpClient({ proxy: 'none', maxSockets: 1 });
  try {
    const signal = AbortSignal.any([o.signal, AbortSignal.timeout(ASK_DEADLINE_MS)]);
    now = (await http.request(`http://${at}${config.path}`, { method: 'GET', signal, maxBodyBytes: 4096, onOverflow: 'destroy' })).status;
  } catch {
    /* no daemon answers there now */
  } finally {
    http.close();
  }
  const would = `would answer 503 on ${config.path} for ${config.drainSeconds} s before counting as out of the load balancer`;
  const answer = now === null ? `no probe answers at ${at} now (the daemon is not running?)` : `answers ${now} at ${at} now`;
  return {
    ready: true,
    summary: `${would}; ${answer}`,
    text: `The probe ${would}, then keep answering 503 until the maintenance is over.\nIt ${answer}.`,
    data: { listen: config.listen, path: config.path, drainSeconds: config.drainSeconds, answersNow: now },
  };
}
