/**
 * The shipped deployment files: the systemd unit passes systemd-analyze verify, the
 * DaemonSet and the configuration it mounts are what the README promises, and the Windows
 * service definition is well-formed and runs the same command.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { describe, expect, it } from 'vitest';
import { loadConfigFile, validateConfig } from '../../src/config/load.ts';
import { PUBLISHED_SECRETS } from '../../src/config/published-secrets.ts';
import { ROOT, tempDir } from '../helpers.ts';

describe('deployment files', () => {
  it('the installer puts a minimal configuration in place: valid with no environment at all, no approvals, no secret', () => {
    const script = readFileSync(join(ROOT, 'scripts', 'install-linux.sh'), 'utf8');
    expect(script).toContain('"$config/bridge.minimal.yaml" /etc/se-bridge/bridge.yaml');
    expect(script).not.toMatch(/bridge\.example\.yaml"? \/etc/);
    const config = loadConfigFile(join(ROOT, 'config', 'bridge.minimal.yaml'), {});
    expect(config.approval.secret).toBeUndefined();
    expect(config.approval.rules).toEqual([]);
    expect(config.sinks.map((s) => s.type)).toEqual(['file']);
  });

  it('no shipped file holds a secret value that the configuration would accept', () => {
    const files = [
      'README.md',
      ...['config', 'docs', 'examples'].flatMap((d) =>
        readdirSync(join(ROOT, d), { recursive: true, encoding: 'utf8' }).map((f) => join(d, f)),
      ),
    ];
    const shaped = /whsec_[A-Za-z0-9+/=]{6,}|SharedAccessKey=[A-Za-z0-9+/=]{4,}|signingSecret: *"?[A-Za-z0-9]{8,}|MC4CAQAw[A-Za-z0-9+/=]+/g;
    const found: string[] = [];
    for (const f of files) {
      let text: string;
      try {
        text = readFileSync(join(ROOT, f), 'utf8');
      } catch {
        continue; // a directory
      }
      for (const m of text.matchAll(shaped))
        if (!PUBLISHED_SECRETS.some((p) => m[0].includes(p) || p.includes(m[0].replace(/^signingSecret: *"?/, ''))))
          found.push(`${f}: ${m[0]}`);
    }
    expect(found).toEqual([]);
  });

  it('systemd: the unit verifies, with the hardening the README lists', () => {
    const unit = readFileSync(join(ROOT, 'config', 'systemd', 'se-bridge.service'), 'utf8');
    for (const d of [
      'NoNewPrivileges=yes',
      'ProtectSystem=strict',
      'PrivateTmp=yes',
      'StateDirectory=se-bridge',
      'CacheDirectory=se-bridge',
      'Restart=always',
      'RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX',
      'User=se-bridge',
      'RestartPreventExitStatus=2',
    ]) {
      expect(unit).toContain(d);
    }
    expect(unit).toContain('ExecStart=/usr/local/bin/se-bridge run\n');
    // verify a copy whose ExecStart points at this checkout's command (the unit's path exists only once installed)
    const dir = tempDir();
    try {
      const copy = join(dir.path, 'se-bridge.service');
      writeFileSync(copy, unit.replaceAll('/usr/local/bin/se-bridge', join(ROOT, 'bin', 'se-bridge.js')));
      const out = execFileSync('systemd-analyze', ['verify', copy], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
      expect(out.trim()).toBe('');
    } finally {
      dir.cleanup();
    }
  });

  it('Kubernetes: a DaemonSet with probes, hostPath state, metrics annotations and a valid configuration', () => {
    const docs = parseAllDocuments(readFileSync(join(ROOT, 'config', 'kubernetes', 'daemonset.yaml'), 'utf8')).map(
      (d) => d.toJS() as Record<string, any>,
    );
    expect(docs.map((d) => d.kind)).toEqual(['Namespace', 'ConfigMap', 'DaemonSet']);
    const ds = docs[2]!;
    const pod = ds.spec.template;
    expect(pod.metadata.annotations).toMatchObject({
      'prometheus.io/scrape': 'true',
      'prometheus.io/port': '9464',
      'prometheus.io/path': '/metrics',
    });
    const c = pod.spec.containers[0];
    expect(c.livenessProbe.httpGet.path).toBe('/livez');
    expect(c.readinessProbe.httpGet.path).toBe('/readyz');
    expect(pod.spec.volumes.find((v: any) => v.name === 'state').hostPath.path).toBe('/var/lib/se-bridge');
    const config = validateConfig(parseAllDocuments(docs[1]!.data['bridge.yaml'])[0]!.toJS(), 'configmap', {
      EVENTHUB_CONNECTION_STRING: 'Endpoint=sb://x.servicebus.windows.net/;SharedAccessKeyName=k;SharedAccessKey=v;EntityPath=h',
    });
    expect(config.observability.listen).toBe('0.0.0.0:9464');
    expect(config.state.path).toBe('/var/lib/se-bridge/state.db');
  });

  it("Windows: the example configuration is valid with a Windows VM's environment, its hook a batch file", () => {
    const secret = `whsec_${Buffer.alloc(32, 9).toString('base64')}`;
    const config = loadConfigFile(join(ROOT, 'config', 'windows', 'bridge.yaml'), {
      ProgramData: 'C:\\ProgramData',
      SE_BRIDGE_APPROVAL_SECRET: secret,
    });
    expect(config.sinks.map((x) => `${x.name}:${x.type}`)).toEqual(['audit:file', 'lb:probe', 'drain:exec']);
    expect((config.sinks[0] as { path: string }).path).toBe('C:\\ProgramData\\se-bridge\\events.jsonl');
    expect((config.sinks[2] as { command: string[] }).command[0]).toMatch(/\.cmd$/);
    expect(() => loadConfigFile(join(ROOT, 'config', 'windows', 'bridge.yaml'), {})).toThrow(/environment variable ProgramData is not set/);
  });

  it('Windows: the WinSW definition runs the daemon with the configuration in ProgramData', () => {
    const xml = readFileSync(join(ROOT, 'config', 'windows', 'se-bridge.xml'), 'utf8');
    expect(xml).toContain('<executable>C:\\se-bridge\\se-bridge.exe</executable>');
    expect(xml).toMatch(/<arguments>run<\/arguments>/);
    expect(xml).toContain('<env name="SE_BRIDGE_CONFIG" value="%ProgramData%\\se-bridge\\bridge.yaml" />');
    expect(xml).toMatch(/<onfailure action="restart"/);
    // every element docs/deployment.md relies on: the service's id, where it runs, how it stops, its logs
    expect(xml).toMatch(/<id>se-bridge<\/id>/);
    expect(xml).toContain('<workingdirectory>C:\\se-bridge</workingdirectory>');
    expect(xml).toMatch(/<stoptimeout>\d+ sec<\/stoptimeout>/);
    expect(xml).toMatch(/<startmode>Automatic<\/startmode>/);
    expect(xml).toContain('<logpath>%ProgramData%\\se-bridge\\logs</logpath>');
    expect(xml).toMatch(/<log mode="roll-by-size">[^]*<sizeThreshold>\d+<\/sizeThreshold>[^]*<keepFiles>\d+<\/keepFiles>[^]*<\/log>/);
    const open = (xml.match(/<(\w+)[ >]/g) ?? []).length;
    const closed = (xml.match(/<\/\w+>|\/>/g) ?? []).length;
    expect(closed).toBe(open);
  });
});
