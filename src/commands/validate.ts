import { configWarnings } from '../config/warnings.ts';
import { EXIT, loadOrReport, parse } from './common.ts';
import { templateLimitProblems } from './template.ts';

export async function main(argv: string[]): Promise<number> {
  const { values } = parse(argv, { config: { type: 'string', short: 'c' } });
  const loaded = await loadOrReport(values.config);
  if (loaded === null) return EXIT.usage;
  const limits = await templateLimitProblems(loaded.config);
  if (limits.length > 0) {
    process.stderr.write(
      `${loaded.path}: ${limits.length} configuration problem${limits.length === 1 ? '' : 's'}:\n  ${limits.join('\n  ')}\n`,
    );
    return EXIT.usage;
  }
  const sinks = loaded.config.sinks.map((s) => `${s.name} (${s.type})`).join(', ') || 'none';
  for (const w of configWarnings(loaded.config)) process.stderr.write(`warning: ${w}\n`);
  process.stdout.write(`${loaded.path}: valid; sinks: ${sinks}\n`);
  return EXIT.ok;
}
