/**
 * The reverse proxy set-up of docs/approvals.md stays true: config/nginx/se-bridge.conf hands
 * each site's requests to the listener its configuration names (the relay's `listen`, the
 * bridge's `server.listen` behind `approval.publicUrl`), with the forwarding headers the
 * bridge reads, a body limit no larger than the bridge's own, a read timeout longer than the
 * relay's longest wait, and each configuration trusts the proxy's address.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfigFile, loadFileWith } from '../../src/config/load.ts';
import { Cidrs } from '../../src/lib/client-address.ts';
import { RelayConfig } from '../../src/relay/config.ts';
import { MAX_DELIVERY } from '../../src/relay/fleet-routes.ts';
import { EXAMPLE_ENV, ROOT } from '../helpers.ts';

interface Site {
  names: string[];
  listen: string[];
  directives: Map<string, string[]>;
  locations: Map<string, string>;
}

/** sites reads the server blocks of an nginx file: their directives, and each location's body. */
function sites(text: string): Site[] {
  const clean = text.replace(/#[^\n]*/g, '');
  const out: Site[] = [];
  for (const m of clean.matchAll(/server\s*\{((?:[^{}]|\{[^{}]*\})*)\}/g)) {
    const body = m[1]!;
    const locations = new Map<string, string>();
    for (const l of body.matchAll(/location\s+([^{]+?)\s*\{([^{}]*)\}/g)) locations.set(l[1]!.trim(), l[2]!);
    const top = body.replace(/location\s+[^{]+\{[^{}]*\}/g, '');
    const directives = new Map<string, string[]>();
    for (const d of top.matchAll(/^\s*(\w+)\s+([^;]+);/gm)) directives.set(d[1]!, [...(directives.get(d[1]!) ?? []), d[2]!.trim()]);
    out.push({
      names: (directives.get('server_name')?.[0] ?? '').split(/\s+/),
      listen: directives.get('listen') ?? [],
      directives,
      locations,
    });
  }
  return out;
}

const PROXY = '127.0.0.1';
const nginx = sites(readFileSync(join(ROOT, 'config', 'nginx', 'se-bridge.conf'), 'utf8'));
const bridge = loadConfigFile(join(ROOT, 'config', 'bridge.example.yaml'), EXAMPLE_ENV);
const relay = loadFileWith(RelayConfig, join(ROOT, 'config', 'relay.example.yaml'), EXAMPLE_ENV);

function checkSite(host: string, upstream: string, trusted: readonly string[]) {
  const site = nginx.find((s) => s.names.includes(host) && s.listen.some((l) => /^443 ssl\b/.test(l)));
  expect(site, `a TLS site for ${host}`).toBeDefined();
  expect(site!.directives.get('ssl_certificate')).toHaveLength(1);
  expect(site!.directives.get('ssl_certificate_key')).toHaveLength(1);
  const limit = /^(\d+)k$/.exec(site!.directives.get('client_max_body_size')?.[0] ?? '');
  expect(Number(limit?.[1])).toBeLessThanOrEqual(64);
  const root = site!.locations.get('/')!;
  expect(root, `${host}: location /`).toBeDefined();
  expect(root).toMatch(new RegExp(`proxy_pass http://${upstream.replaceAll('.', '\\.')};`));
  expect(root).toMatch(/proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for;/);
  expect(root).toMatch(/proxy_set_header Host \$host;/);
  expect(root).toMatch(/proxy_set_header X-Forwarded-Proto \$scheme;/);
  const read = Number(/proxy_read_timeout (\d+)s;/.exec(root)?.[1]);
  expect(read * 1000).toBeGreaterThan(relay.replyWaitMs);
  expect(new Cidrs(trusted).has(PROXY), `${host}: trustedProxies names the proxy`).toBe(true);
}

describe('the reverse proxy set-up', () => {
  it('hands the relay’s site to the relay’s listener, and the relay trusts the proxy', () => {
    expect(relay.listen.startsWith(`${PROXY}:`)).toBe(true);
    checkSite('approvals.example.com', relay.listen, relay.trustedProxies);
    expect(nginx.find((s) => s.names.includes('approvals.example.com') && s.locations.has('= /metrics'))).toBeDefined();
  });

  it("takes Event Grid's deliveries to the relay whole: up to the relay's own limit, and Event Grid's 1 MB", () => {
    const site = nginx.find((s) => s.names.includes('approvals.example.com') && s.listen.some((l) => /^443 ssl\b/.test(l)))!;
    const grid = site.locations.get('= /v1/azure/eventgrid');
    expect(grid, 'location = /v1/azure/eventgrid').toBeDefined();
    expect(grid).toMatch(new RegExp(`proxy_pass http://${relay.listen.replaceAll('.', '\\.')};`));
    expect(grid).toMatch(/proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for;/);
    const limit = /client_max_body_size (\d+)m;/.exec(grid ?? '');
    expect(Number(limit?.[1]) * 1024 * 1024).toBe(MAX_DELIVERY);
  });

  it.each(['= /v1/azure/eventgrid', '= /v1/fleet/calendar.ics'])(
    'never logs a key sent in the query (%s): its access log has a format without the query, its error log only critical lines',
    (route) => {
      const text = readFileSync(join(ROOT, 'config', 'nginx', 'se-bridge.conf'), 'utf8').replace(/#[^\n]*/g, '');
      const site = nginx.find((s) => s.names.includes('approvals.example.com') && s.listen.some((l) => /^443 ssl\b/.test(l)))!;
      const location = site.locations.get(route)!;
      expect(location, `location ${route}`).toBeDefined();
      expect(location).toMatch(new RegExp(`proxy_pass http://${relay.listen.replaceAll('.', '\\.')};`));
      // nginx's variables that carry the query: the request line, the URI as sent, the arguments
      const query = /\$(request|request_uri|args|query_string|arg_\w+|is_args)\b/;
      const access = /^\s*access_log\s+([^;]+);/m.exec(location)?.[1]?.trim().split(/\s+/);
      expect(access, `access_log in location ${route}`).toBeDefined();
      if (access![0] !== 'off') {
        const format = new RegExp(`log_format\\s+${access![1]}\\s+((?:'[^']*'\\s*)+);`).exec(text)?.[1];
        expect(format, `log_format ${access![1]}`).toBeDefined();
        expect(format).not.toMatch(query);
      }
      // an error line carries the request line, query and all
      expect(/^\s*error_log\s+\S+\s+(crit|alert|emerg)\s*;/m.test(location), 'error_log at crit in the route').toBe(true);
    },
  );

  it("hands /console to the console's own listener, its live stream unbuffered and kept open", () => {
    const site = nginx.find((s) => s.names.includes('approvals.example.com') && s.listen.some((l) => /^443 ssl\b/.test(l)))!;
    const location = site.locations.get('/console');
    expect(location, 'location /console').toBeDefined();
    expect(location).toMatch(new RegExp(`proxy_pass http://${relay.console!.listen.replaceAll('.', '\\.')};`));
    expect(location).toMatch(/proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for;/);
    expect(location).toMatch(/proxy_set_header X-Forwarded-Proto \$scheme;/);
    expect(location).toMatch(/proxy_buffering off;/);
    // longer than the stream's keep-alive comment (15 s)
    expect(Number(/proxy_read_timeout (\d+)h;/.exec(location!)?.[1])).toBeGreaterThanOrEqual(1);
  });

  it('hands the bridge’s site (its publicUrl) to its approval server, and the bridge trusts the proxy', () => {
    const host = new URL(bridge.approval.publicUrl!).hostname;
    expect(bridge.server.listen.startsWith(`${PROXY}:`)).toBe(true);
    checkSite(host, bridge.server.listen, bridge.server.trustedProxies);
  });

  it('sends plain http to https', () => {
    const plain = nginx.find((s) => s.listen.includes('80'))!;
    expect(plain.names).toEqual(expect.arrayContaining(['approvals.example.com', new URL(bridge.approval.publicUrl!).hostname]));
    expect(plain.directives.get('return')).toEqual(['301 https://$host$request_uri']);
  });
});
