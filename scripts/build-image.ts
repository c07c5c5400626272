/**
 * npm run build:image: an OCI image of the single executable on a minimal root filesystem,
 * built with Podman from local files only (no base image to pull):
 *
 *   /usr/local/bin/se-bridge         the single executable (npm run build:binary)
 *   /lib, /lib64, /usr/lib           glibc, libstdc++ and libgcc_s, from Debian's packages
 *   /etc/ssl/certs/ca-certificates.crt  Mozilla's CA bundle, from Debian's ca-certificates
 *   /etc/passwd, /etc/group          root and the bridge's user, se-bridge (10001:10001)
 *   /var/lib/se-bridge               the state directory, owned by the bridge's user
 *   /tmp                             1777
 *
 * The image runs as 10001:10001 with `run` as its default command. The Dockerfile at the root
 * of the repository builds the same layout where a builder can pull base images.
 *
 * Needs apt-get (Debian's packages are downloaded, not installed), dpkg-deb and Podman with
 * runc. Writes build/se-bridge-image-<version>.tar (an OCI archive, `podman load -i` it) and
 * tags se-bridge:<version> locally.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { LAUNCH } from './launch.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
const WORK = join(ROOT, 'build', 'image');
const ROOTFS = join(WORK, 'rootfs');
const DEBS = join(WORK, 'debs');
const UID = 10001;
const PACKAGES = ['libc6', 'libgcc-s1', 'libstdc++6', 'ca-certificates'];
export const IMAGE = `se-bridge:${VERSION}`;

/** podman runs Podman with runc and the containers.conf this machine needs (no ulimits to set). */
export function podman(args: string[], options: { stdio?: 'inherit' | 'pipe' } = {}): string {
  const conf = join(WORK, 'containers.conf');
  mkdirSync(WORK, { recursive: true });
  writeFileSync(conf, '[containers]\ndefault_ulimits = []\n');
  const out = execFileSync('podman', ['--runtime', 'runc', ...args], {
    env: { ...process.env, CONTAINERS_CONF: conf },
    encoding: 'utf8',
    stdio: options.stdio === 'inherit' ? 'inherit' : ['ignore', 'pipe', 'pipe'],
    maxBuffer: 64 * 2 ** 20,
  });
  return out ?? '';
}

function need(tool: string): void {
  try {
    execFileSync('sh', ['-c', `command -v ${tool}`], { stdio: 'ignore' });
  } catch {
    throw new Error(`build:image needs ${tool}; on Debian: apt-get install podman runc (dpkg-deb and apt-get come with Debian)`);
  }
}

async function main(): Promise<void> {
  for (const tool of ['podman', 'runc', 'apt-get', 'dpkg-deb']) need(tool);
  // postject's notes about ELF sections are noise: shown only when the build fails
  execFileSync(process.execPath, [join(ROOT, 'scripts', 'build-binary.ts'), 'linux-x64'], { cwd: ROOT, stdio: 'pipe' });
  rmSync(WORK, { recursive: true, force: true });
  mkdirSync(ROOTFS, { recursive: true });
  mkdirSync(DEBS, { recursive: true });

  // 1. Debian's packages, downloaded (not installed) and unpacked into the root filesystem
  // as root, apt's sandbox user could not write here: download as whoever runs this
  execFileSync('apt-get', ['-q', '-o', 'APT::Sandbox::User=root', 'download', ...PACKAGES], {
    cwd: DEBS,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  for (const deb of readdirSync(DEBS).filter((f) => f.endsWith('.deb'))) execFileSync('dpkg-deb', ['-x', join(DEBS, deb), ROOTFS]);
  // what the executable never reads: documentation, locales, character set converters, maintainer tools
  for (const dir of [
    'usr/share',
    'usr/sbin',
    'usr/bin',
    'sbin',
    'etc/ca-certificates',
    'usr/lib/x86_64-linux-gnu/gconv',
    'usr/libexec',
    'etc/ld.so.conf.d',
  ]) {
    rmSync(join(ROOTFS, dir), { recursive: true, force: true });
  }
  // the CA bundle update-ca-certificates would write, from the package's certificates
  const certs = join(WORK, 'certs');
  mkdirSync(certs, { recursive: true });
  execFileSync('dpkg-deb', [
    '-x',
    join(
      DEBS,
      readdirSync(DEBS).find((f) => f.startsWith('ca-certificates_'))!,
    ),
    certs,
  ]);
  const mozilla = join(certs, 'usr', 'share', 'ca-certificates', 'mozilla');
  const bundle = readdirSync(mozilla)
    .filter((f) => f.endsWith('.crt'))
    .sort()
    .map((f) => readFileSync(join(mozilla, f), 'utf8').trim())
    .join('\n');
  mkdirSync(join(ROOTFS, 'etc', 'ssl', 'certs'), { recursive: true });
  writeFileSync(join(ROOTFS, 'etc', 'ssl', 'certs', 'ca-certificates.crt'), `${bundle}\n`);

  // 2. users, the state directory, /tmp, and the executable
  writeFileSync(
    join(ROOTFS, 'etc', 'passwd'),
    `root:x:0:0:root:/root:/sbin/nologin\nse-bridge:x:${UID}:${UID}:se-bridge:/var/lib/se-bridge:/sbin/nologin\n`,
  );
  writeFileSync(join(ROOTFS, 'etc', 'group'), `root:x:0:\nse-bridge:x:${UID}:\n`);
  writeFileSync(join(ROOTFS, 'etc', 'nsswitch.conf'), 'passwd: files\ngroup: files\nhosts: files dns\n');
  mkdirSync(join(ROOTFS, 'tmp'), { recursive: true });
  chmodSync(join(ROOTFS, 'tmp'), 0o1777);
  mkdirSync(join(WORK, 'state'), { recursive: true });
  chmodSync(join(WORK, 'state'), 0o750);
  mkdirSync(join(ROOTFS, 'usr', 'local', 'bin'), { recursive: true });
  copyFileSync(join(ROOT, 'build', 'se-bridge-linux-x64'), join(ROOTFS, 'usr', 'local', 'bin', 'se-bridge'));
  chmodSync(join(ROOTFS, 'usr', 'local', 'bin', 'se-bridge'), 0o755);

  // 3. the image
  writeFileSync(
    join(WORK, 'Containerfile'),
    [
      'FROM scratch',
      'COPY rootfs/ /',
      `COPY --chown=${UID}:${UID} state/ /var/lib/se-bridge/`,
      `USER ${UID}:${UID}`,
      'WORKDIR /var/lib/se-bridge',
      'ENV SE_BRIDGE_CONFIG=/etc/se-bridge/bridge.yaml',
      // glibc's allocator settings of the package's bin (scripts/launch.ts), for the executable
      ...Object.entries(LAUNCH.env).map(([k, v]) => `ENV ${k}=${v}`),
      `LABEL org.opencontainers.image.title="scheduled-events-bridge" org.opencontainers.image.version="${VERSION}" org.opencontainers.image.licenses="MIT"`,
      'ENTRYPOINT ["/usr/local/bin/se-bridge"]',
      'CMD ["run"]',
      '',
    ].join('\n'),
  );
  podman(['build', '--quiet', '--format', 'oci', '-t', IMAGE, '-f', join(WORK, 'Containerfile'), WORK], { stdio: 'inherit' });
  const archive = join(ROOT, 'build', `se-bridge-image-${VERSION}.tar`);
  rmSync(archive, { force: true });
  podman(['save', '--format', 'oci-archive', '-o', archive, IMAGE]);
  const size = Number(podman(['image', 'inspect', '--format', '{{.Size}}', IMAGE]).trim());
  const mib = (n: number) => `${(n / 2 ** 20).toFixed(1)} MiB`;
  process.stdout.write(
    `${IMAGE}: ${mib(size)} (the executable ${mib(statSync(join(ROOT, 'build', 'se-bridge-linux-x64')).size)}); OCI archive ${archive} (${mib(statSync(archive).size)})\n`,
  );
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
