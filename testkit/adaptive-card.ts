/**
 * cardTexts walks an Adaptive Card and splits its text by how a renderer treats it: `markdown`
 * (TextBlock texts, FactSet titles and values, which Teams parses as Markdown) and `runs`
 * (TextRun texts, shown as they are).
 */
export function cardTexts(card: unknown): { markdown: string[]; runs: string[] } {
  const markdown: string[] = [];
  const runs: string[] = [];
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(walk);
    if (node === null || typeof node !== 'object') return;
    const o = node as Record<string, unknown>;
    if (o.type === 'TextBlock' && typeof o.text === 'string') markdown.push(o.text);
    if (o.type === 'TextRun' && typeof o.text === 'string') runs.push(o.text);
    if (o.type === 'FactSet') for (const f of o.facts as { title: string; value: string }[]) markdown.push(f.title, f.value);
    for (const v of Object.values(o)) walk(v);
  };
  walk(card);
  return { markdown, runs };
}
