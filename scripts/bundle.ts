/**
 * The command line as one CommonJS file, `dist/se-bridge.cjs` (part of `npm run build`): esbuild
 * bundles src/commands/cli.ts with the libraries every configuration uses (zod, yaml, pino),
 * minified. The package's `se-bridge` runs it, and the single executable is made of it
 * (build-binary.ts). One file instead of some four hundred ES modules: about 5 MiB less resident
 * and a quicker start (docs/performance.md), for the same code; dist/src stays the library's
 * entry points (`scheduled-events-bridge`, `/kit`).
 *
 * The client libraries that only some configurations use (the Azure SDKs, Slack's Web API,
 * jsonata, jose for the relay's Entra-protected deliveries) are not in it: each is a tiny
 * stand-in calling __seLazy, defined first thing. Run by node, __seLazy requires the package from
 * node_modules; inside the executable it compiles the group's asset (bundleAssets) once, its
 * `require` the main script's (built-in modules only, all the bundle needs). `import.meta.url`
 * becomes the file's URL.
 *
 *   node scripts/bundle.ts      writes dist/se-bridge.cjs
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, type Plugin } from 'esbuild';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** The libraries kept out of the bundle, by group (one asset each in the executable), and the key each is read by. */
const LAZY = {
  azure: { '@azure/event-hubs': 'eventHubs', '@azure/service-bus': 'serviceBus', '@azure/identity': 'identity', rhea: 'rhea' },
  slack: { '@slack/web-api': 'webApi' },
  templates: { jsonata: 'jsonata' },
  jose: { jose: 'jose' },
} as const;

const common = {
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node24',
  minify: true,
  keepNames: false,
  legalComments: 'none',
  logLevel: 'warning',
} as const;

/** bundleAssets writes each group of LAZY as a bundle of its own into `dir`; the executable's assets, by file name. */
export async function bundleAssets(dir: string): Promise<Record<string, string>> {
  const assets: Record<string, string> = {};
  for (const [group, packages] of Object.entries(LAZY)) {
    // getters, so that the Event Hubs SDK alone is evaluated when only Event Hubs is configured
    const contents = Object.entries(packages)
      .map(
        ([pkg, key]) =>
          `Object.defineProperty(exports, ${JSON.stringify(key)}, { enumerable: true, get: () => require(${JSON.stringify(pkg)}) });`,
      )
      .join('\n');
    assets[`${group}.cjs`] = join(dir, `${group}.cjs`);
    await build({
      ...common,
      stdin: { contents, resolveDir: ROOT, loader: 'js', sourcefile: `${group}.cjs` },
      outfile: assets[`${group}.cjs`],
    });
  }
  return assets;
}

const where = Object.fromEntries(
  Object.entries(LAZY).flatMap(([group, packages]) => Object.entries(packages).map(([pkg, key]) => [pkg, [group, key]])),
);
const seLazy = `const __seLazy = ((builtin) => {
  const where = ${JSON.stringify(where)};
  const groups = new Map();
  const sea = builtin('node:sea');
  const load = (group) => {
    if (!groups.has(group)) {
      const module = { exports: {} };
      const filename = group + '.cjs';
      builtin('node:vm').compileFunction(sea.getAsset(filename, 'utf8'), ['exports', 'require', 'module', '__filename', '__dirname'], { filename })(module.exports, builtin, module, filename, '.');
      groups.set(group, module.exports);
    }
    return groups.get(group);
  };
  return (id) => (sea.isSea() ? load(where[id][0])[where[id][1]] : builtin(id));
})(require);`;

const lazyPackages: Plugin = {
  name: 'lazy-packages',
  setup(b) {
    b.onResolve({ filter: /^[@a-z]/ }, (args) => (args.path in where ? { path: args.path, namespace: 'lazy' } : undefined));
    b.onLoad({ filter: /.*/, namespace: 'lazy' }, (args) => ({
      contents: `module.exports = __seLazy(${JSON.stringify(args.path)});`,
      loader: 'js',
    }));
  },
};

/**
 * undici's HTTP/2 client reads node:http2's constants when it loads: in the bundle it gets the
 * stand-in that loads node:http2 (and with it node:tls) only when used, as src/lib/undici-hooks.ts
 * arranges for the sources, and the hooks themselves are left out (the bundle resolves nothing
 * at run time).
 */
const lazyHttp2: Plugin = {
  name: 'lazy-http2',
  setup(b) {
    b.onResolve({ filter: /^(node:)?http2$/ }, (args) =>
      /[/\\]undici[/\\]lib[/\\]dispatcher[/\\]client-h2\.js$/.test(args.importer)
        ? { path: join(ROOT, 'src', 'lib', 'http2-lazy.ts') }
        : undefined,
    );
    b.onResolve({ filter: /[/\\]undici-hooks\.ts$/ }, () => ({ path: 'undici-hooks', namespace: 'empty' }));
    b.onLoad({ filter: /.*/, namespace: 'empty' }, () => ({ contents: '', loader: 'js' }));
  },
};

/** bundleCli writes the command line's bundle to `outfile`. */
export async function bundleCli(outfile: string): Promise<void> {
  await build({
    ...common,
    entryPoints: [join(ROOT, 'src', 'commands', 'cli.ts')],
    outfile,
    plugins: [lazyPackages, lazyHttp2],
    banner: { js: `${seLazy}\nconst __importMetaUrl = require('node:url').pathToFileURL(__filename).href;` },
    define: { 'import.meta.url': '__importMetaUrl' },
  });
}

if (import.meta.url === `file://${process.argv[1]}`) await bundleCli(join(ROOT, 'dist', 'se-bridge.cjs'));
