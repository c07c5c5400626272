/** The latency chart of docs/latency.svg: a cumulative distribution per lane. */
export function svg(latency: Record<string, { samples: number[] }>): string {
  const W = 720;
  const H = 380;
  const L = 60;
  const B = 330;
  const maxX = Math.max(...Object.values(latency).flatMap((l) => l.samples));
  const xMax = Math.ceil(maxX / 250) * 250;
  const colors: Record<string, string> = {
    'poll-200ms': '#1b7f3b',
    'poll-500ms': '#1f5fbf',
    'poll-1000ms': '#8a3ffc',
    reference: '#c4314b',
  };
  const x = (v: number) => L + (v / xMax) * (W - L - 20);
  const y = (p: number) => B - p * (B - 30);
  const lines = Object.entries(latency)
    .map(([name, l]) => {
      const pts = l.samples.map((v, i) => `${x(v).toFixed(1)},${y((i + 1) / l.samples.length).toFixed(1)}`).join(' ');
      return `<polyline fill="none" stroke="${colors[name] ?? '#333'}" stroke-width="2" points="${x(0)},${y(0)} ${pts}"/>`;
    })
    .join('\n');
  const ticks = Array.from({ length: xMax / 250 + 1 }, (_, i) => i * 250)
    .filter((v) => v % (xMax > 2000 ? 500 : 250) === 0)
    .map(
      (v) =>
        `<line x1="${x(v)}" y1="${B}" x2="${x(v)}" y2="${B + 5}" stroke="#555"/><text x="${x(v)}" y="${B + 20}" text-anchor="middle">${v}</text>`,
    )
    .join('');
  const yt = [0, 0.5, 0.9, 0.99]
    .map(
      (p) =>
        `<text x="${L - 8}" y="${y(p) + 4}" text-anchor="end">${p === 0.99 ? 'p99' : p === 0.9 ? 'p90' : p === 0.5 ? 'p50' : '0'}</text><line x1="${L}" y1="${y(p)}" x2="${W - 20}" y2="${y(p)}" stroke="#eee"/>`,
    )
    .join('');
  const legend = Object.keys(latency)
    .map(
      (name, i) =>
        `<rect x="${W - 250}" y="${B - 84 + i * 18}" width="14" height="4" fill="${colors[name]}"/><text x="${W - 230}" y="${B - 78 + i * 18}">${name === 'reference' ? 'reference algorithm (1 s sleep)' : `se-bridge, ${name.replace('poll-', 'poll every ')}`}</text>`,
    )
    .join('');
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">
<rect width="100%" height="100%" fill="#fff"/>
<text x="${L}" y="20" font-size="14" font-weight="bold">IMDS change to webhook delivery: cumulative distribution</text>
${yt}<line x1="${L}" y1="${B}" x2="${W - 20}" y2="${B}" stroke="#555"/>${ticks}
<text x="${(W + L) / 2}" y="${H - 8}" text-anchor="middle">milliseconds</text>
${lines}
${legend}
</svg>
`;
}
