/**
 * teamsMessage renders the chat model as a Teams message whose attachment is an Adaptive Card
 * (version 1.5, what Teams Workflows render): a coloured title, the facts and, when a human
 * must decide, an Action.OpenUrl to the approval page (Workflows cards do not support
 * Action.Submit). Times show in each reader's local time through {{DATE()}} / {{TIME()}}.
 *
 * @see https://adaptivecards.io/explorer/
 */
import { utcText, vmList, type ChatMessage, type Severity } from './chat-model.ts';

export const STYLE: Record<Severity, { container: string; color: string }> = {
  critical: { container: 'attention', color: 'Attention' },
  high: { container: 'warning', color: 'Warning' },
  warning: { container: 'warning', color: 'Warning' },
  resolved: { container: 'good', color: 'Good' },
  info: { container: 'emphasis', color: 'Default' },
};

/**
 * literal keeps a TextRun's text from becoming a DATE()/TIME() function: TextRuns are never
 * parsed as Markdown, but renderers still expand `{{…}}`.
 */
function literal(text: string): string {
  return text.replace(/\{\{/g, '{\u200b{');
}

type Run = Record<string, unknown>;

/** run is a TextRun: text that is shown as it is, never as Markdown. */
export function run(text: string, style: Record<string, unknown> = {}): Run {
  return { type: 'TextRun', text: literal(text), ...style };
}

/** rich is a RichTextBlock of runs: where text from IMDS or configuration goes. */
export function rich(inlines: Run[], extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { type: 'RichTextBlock', inlines, ...extra };
}

/**
 * fact is one row of the facts: our own label in a TextBlock (Markdown, our words only) and the
 * value as runs. A FactSet would parse the value as Markdown, and Teams' Markdown has no escape
 * that reads right everywhere (iOS and Android show CommonMark backslashes literally).
 */
export function fact(title: string, value: Run[]): Record<string, unknown> {
  return {
    type: 'ColumnSet',
    spacing: 'Small',
    columns: [
      { type: 'Column', width: 1, items: [{ type: 'TextBlock', text: title, weight: 'Bolder', wrap: true }] },
      { type: 'Column', width: 3, items: [rich(value)] },
    ],
  };
}

/**
 * adaptiveCard: every value that comes from IMDS or configuration (VM and resource names, event
 * type, status, source, EventId, Description) is a TextRun, so it reads exactly as it was sent,
 * and nothing in it can become a link beside the real Approve button, a mention, a list or
 * emphasis. Markdown is left to our own words.
 */
export function adaptiveCard(msg: ChatMessage): Record<string, unknown> {
  const s = STYLE[msg.severity];
  const nb = msg.notBefore;
  const facts = [
    fact('Event', [run(`${msg.eventType} · ${msg.eventStatus}`)]),
    fact('Source', [run(msg.source === 'User' ? 'User (an administrator asked for it)' : msg.source)]),
    fact('Not before', [run(nb ? `${utcText(nb.iso)} (${nb.timeLeft})` : msg.eventStatus === 'Started' ? 'now (started)' : '-')]),
    fact('Expected impact', [run(msg.duration)]),
    fact('VMs', [run(vmList(msg))]),
    fact('EventId', [run(msg.eventId, { fontType: 'Monospace' })]),
  ];
  const seen = `${msg.transition} · seen {{DATE(${isoSeconds(msg.observedAt)}, SHORT)}} {{TIME(${isoSeconds(msg.observedAt)})}} on `;
  const body: Record<string, unknown>[] = [
    {
      type: 'Container',
      style: s.container,
      bleed: true,
      items: [
        rich([run(msg.title, { weight: 'Bolder', size: 'Large', color: s.color })]),
        rich([{ type: 'TextRun', text: seen, isSubtle: true }, run(msg.thisVm, { isSubtle: true })], { spacing: 'None' }),
      ],
    },
    { type: 'Container', items: facts },
  ];
  if (nb) {
    body.push({
      type: 'TextBlock',
      text: `Your local time: {{DATE(${isoSeconds(nb.iso)}, SHORT)}} {{TIME(${isoSeconds(nb.iso)})}}`,
      isSubtle: true,
      size: 'Small',
      wrap: true,
    });
  }
  if (msg.description !== '') body.push(rich([run(msg.description)]));
  if (msg.prepared !== null) body.push(rich([{ type: 'TextRun', text: 'Prepared: ', weight: 'Bolder' }, run(msg.prepared)]));
  return cardOf(
    body,
    msg.approveUrl !== null
      ? [{ type: 'Action.OpenUrl', title: 'Approve: start the maintenance now', url: msg.approveUrl, style: 'positive' }]
      : [],
  );
}

/** cardOf: an Adaptive Card of version 1.5 (what Teams Workflows render), full width, of these elements and actions. */
export function cardOf(body: readonly Record<string, unknown>[], actions: readonly Record<string, unknown>[]): Record<string, unknown> {
  return {
    type: 'AdaptiveCard',
    $schema: 'http://adaptivecards.io/schemas/adaptive-card.json',
    version: '1.5',
    msteams: { width: 'Full' },
    body,
    actions,
  };
}

/** workflowMessage wraps a card the way the Workflows webhook trigger expects. */
export function workflowMessage(card: Record<string, unknown>): Record<string, unknown> {
  return { type: 'message', attachments: [{ contentType: 'application/vnd.microsoft.card.adaptive', contentUrl: null, content: card }] };
}

/** teamsMessage: an event's card, wrapped for the Workflows webhook trigger. */
export function teamsMessage(msg: ChatMessage): Record<string, unknown> {
  return workflowMessage(adaptiveCard(msg));
}

/** Adaptive Cards' DATE()/TIME() want RFC 3339 without fractions. */
export function isoSeconds(iso: string): string {
  return iso.replace(/\.\d+Z$/, 'Z');
}
