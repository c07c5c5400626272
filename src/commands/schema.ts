import { jsonSchema } from '../config/schema.ts';
import { EXIT, parse } from './common.ts';

export async function main(argv: string[]): Promise<number> {
  parse(argv, {});
  process.stdout.write(`${JSON.stringify(jsonSchema(), null, 2)}\n`);
  return EXIT.ok;
}
