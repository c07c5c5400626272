/**
 * The reference algorithm, as the upstream documentation's sample does it, for comparison:
 * sleep one second, GET the document, compare DocumentIncarnation, forward each event.
 * Usage: node bench/reference-poller.ts IMDS_URL WEBHOOK_URL
 */
const [imds, webhook] = process.argv.slice(2) as [string, string];
let last: number | null = null;
for (;;) {
  await new Promise((r) => setTimeout(r, 1000));
  try {
    const res = await fetch(`${imds}/metadata/scheduledevents?api-version=2020-07-01`, { headers: { Metadata: 'true' } });
    const doc = (await res.json()) as { DocumentIncarnation: number; Events: unknown[] };
    if (doc.DocumentIncarnation !== last) {
      last = doc.DocumentIncarnation;
      for (const e of doc.Events)
        await fetch(webhook, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(e) });
    }
  } catch {
    // the sample logs and carries on
  }
}
