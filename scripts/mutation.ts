/**
 * Mutation testing of the modules that guard trust and budgets (Stryker, its vitest runner and its
 * TypeScript checker), outside `npm test`. Each module is described by test/mutation/<name>.json:
 * the files mutated, the test files that exercise them in the runner's own process (a mutant
 * lives only there: a process a test starts runs the code unmutated), and every surviving mutant
 * judged equivalent, with why. Modules run one at a time, one test runner and one checker: a
 * machine of two cores runs it, a second run reuses the first's results (an incremental file per
 * module and list of tests under reports/mutation/, for unchanged code and tests).
 *
 *   npm run test:mutation [-- NAME...]     every module, or the named ones
 *   npm run test:mutation -- --last NAME   judges the module's last report again, without a run
 *
 * Prints each module's score (killed or timed out, over every mutant that compiles), its
 * survivors not listed as equivalent, and listed ones that no longer survive. Exits 1 when a
 * module scores under 80 % or leaves a survivor unlisted; 2 on a bad module file.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';

const ROOT = join(import.meta.dirname, '..');
const MODULES = join(ROOT, 'test/mutation');
const REPORTS = join(ROOT, 'reports/mutation');
const THRESHOLD = 80;

const Equivalent = z.strictObject({
  /** the trimmed source line the mutant starts on */
  line: z.string().min(1),
  mutator: z.string().min(1),
  /** the replacement's first line, as Stryker reports it */
  replacement: z.string(),
  /**
   * where the mutant starts and ends on its lines (columns, 1-based), when two mutants of one line print the same: a
   * whole condition and one of its operands, both made false, start alike and end apart
   */
  column: z.number().int().positive().optional(),
  endColumn: z.number().int().positive().optional(),
  why: z.string().min(10),
});
const ModuleFile = z.strictObject({
  mutate: z.array(z.string().regex(/^src\/[\w/.-]+\.ts$/)).min(1),
  tests: z.array(z.string().regex(/^(test|sinks)\/[\w/.-]+\.test\.ts$/)).min(1),
  equivalent: z.record(z.string(), z.array(Equivalent)).default({}),
});
type ModuleFile = z.infer<typeof ModuleFile>;

const Mutant = z.object({
  mutatorName: z.string(),
  replacement: z.string().optional(),
  status: z.string(),
  location: z.object({
    start: z.object({ line: z.number(), column: z.number() }),
    end: z.object({ line: z.number(), column: z.number() }),
  }),
});
const Report = z.object({ files: z.record(z.string(), z.object({ source: z.string(), mutants: z.array(Mutant) })) });

function readModule(name: string): ModuleFile {
  const path = join(MODULES, `${name}.json`);
  const parsed = ModuleFile.safeParse(JSON.parse(readFileSync(path, 'utf8')));
  if (!parsed.success) {
    process.stderr.write(`test/mutation/${name}.json: ${z.prettifyError(parsed.error)}\n`);
    process.exit(2);
  }
  return parsed.data;
}

/** testsDigest: a short digest of a module's list of tests. */
const testsDigest = (tests: readonly string[]): string =>
  createHash('sha256')
    .update([...tests].sort().join('\n'))
    .digest('hex')
    .slice(0, 12);

/**
 * forgetStaticSurvivors: a mutant of code that runs when a module loads (a constant, a schema) is
 * static: no test in particular covers it, so Stryker's incremental run would reuse its survival
 * for ever, whatever tests were added since. Such survivors are dropped from the incremental file
 * and tested again at every run (against every test: a few, each run).
 */
function forgetStaticSurvivors(path: string): void {
  if (!existsSync(path)) return;
  const file = JSON.parse(readFileSync(path, 'utf8')) as { files: Record<string, { mutants: { static?: boolean; status: string }[] }> };
  for (const f of Object.values(file.files))
    f.mutants = f.mutants.filter((m) => m.static !== true || m.status === 'Killed' || m.status === 'Timeout');
  writeFileSync(path, JSON.stringify(file));
}

/** run: one module through Stryker; its report's path. */
function run(name: string, mod: ModuleFile): string {
  mkdirSync(REPORTS, { recursive: true });
  // the checker's program: the mutated files and what they import, not the whole project
  writeFileSync(join(ROOT, 'tsconfig.mutation.json'), JSON.stringify({ extends: './tsconfig.json', include: [], files: mod.mutate }));
  const report = join(REPORTS, `${name}.json`);
  const config = join(REPORTS, `${name}.stryker.json`);
  const incrementalFile = join('reports/mutation', `${name}.${testsDigest(mod.tests)}.incremental.json`);
  forgetStaticSurvivors(join(ROOT, incrementalFile));
  const base = JSON.parse(readFileSync(join(ROOT, 'stryker.config.json'), 'utf8')) as Record<string, unknown>;
  delete base.$schema;
  writeFileSync(
    config,
    JSON.stringify({
      ...base,
      mutate: mod.mutate,
      incremental: true,
      // one per list of tests: Stryker reuses a mutant's result while its code and covering tests are unchanged, so a test
      // taken off the list would still be counted (its runner never runs it again)
      incrementalFile,
      jsonReporter: { fileName: join('reports/mutation', `${name}.json`) },
      htmlReporter: { fileName: join('reports/mutation', `${name}.html`) },
    }),
  );
  const out = spawnSync('npx', ['stryker', 'run', config], {
    cwd: ROOT,
    stdio: 'inherit',
    env: { ...process.env, SE_BRIDGE_MUTATION_TESTS: mod.tests.join(',') },
  });
  if (out.status !== 0) {
    process.stderr.write(`${name}: stryker exited ${out.status ?? out.signal}\n`);
    process.exit(1);
  }
  return report;
}

interface Outcome {
  name: string;
  killed: number;
  total: number;
  unlisted: string[];
  stale: string[];
}

function judge(name: string, mod: ModuleFile, reportPath: string): Outcome {
  const report = Report.parse(JSON.parse(readFileSync(reportPath, 'utf8')));
  let killed = 0;
  let total = 0;
  const unlisted: string[] = [];
  const used = new Set<Equivalent>();
  for (const [file, { source, mutants }] of Object.entries(report.files)) {
    const lines = source.split('\n');
    const listed = mod.equivalent[file] ?? [];
    for (const m of mutants) {
      if (m.status === 'Killed' || m.status === 'Timeout') {
        killed++;
        total++;
        continue;
      }
      if (m.status !== 'Survived' && m.status !== 'NoCoverage') continue;
      total++;
      const line = (lines[m.location.start.line - 1] ?? '').trim();
      const replacement = (m.replacement ?? '').split('\n')[0]!.trim();
      const match = listed.find(
        (e) =>
          e.line === line &&
          e.mutator === m.mutatorName &&
          e.replacement === replacement &&
          (e.column === undefined || e.column === m.location.start.column) &&
          (e.endColumn === undefined || e.endColumn === m.location.end.column),
      );
      if (match) used.add(match);
      // printed as the entry that would list it, for test/mutation/<name>.json once judged equivalent
      else
        unlisted.push(
          `${file}:${m.location.start.line}:${m.location.start.column}-${m.location.end.column} ${m.status} ${JSON.stringify({ line, mutator: m.mutatorName, replacement, why: '' })}`,
        );
    }
  }
  const stale = Object.entries(mod.equivalent).flatMap(([file, list]) =>
    list
      .filter((e) => !used.has(e))
      .map((e) => `${file}: ${JSON.stringify({ line: e.line, mutator: e.mutator, replacement: e.replacement })}`),
  );
  return { name, killed, total, unlisted, stale };
}

type Equivalent = z.infer<typeof Equivalent>;

const all = readdirSync(MODULES)
  .filter((f) => f.endsWith('.json'))
  .map((f) => f.slice(0, -'.json'.length))
  .sort();
const last = process.argv[2] === '--last';
const asked = process.argv.slice(last ? 3 : 2);
for (const name of asked) {
  if (!all.includes(name)) {
    process.stderr.write(`no module ${name}: one of ${all.join(', ')}\n`);
    process.exit(2);
  }
}
const outcomes: Outcome[] = [];
for (const name of asked.length > 0 ? asked : all) {
  const mod = readModule(name);
  outcomes.push(judge(name, mod, last ? join(REPORTS, `${name}.json`) : run(name, mod)));
}

let failed = false;
process.stdout.write('\nmodule                      score   killed/mutants  survivors listed as equivalent\n');
for (const o of outcomes) {
  const score = o.total === 0 ? 100 : (100 * o.killed) / o.total;
  const listed = o.total - o.killed - o.unlisted.length;
  process.stdout.write(`${o.name.padEnd(26)} ${score.toFixed(1).padStart(6)} %  ${`${o.killed}/${o.total}`.padStart(14)}  ${listed}\n`);
  if (score < THRESHOLD) failed = true;
  if (o.unlisted.length > 0) failed = true;
  for (const u of o.unlisted) process.stdout.write(`  survived, not listed: ${u}\n`);
  for (const s of o.stale) process.stdout.write(`  listed, no longer survives: ${s}\n`);
}
process.exit(failed ? 1 : 0);
