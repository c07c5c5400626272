/**
 * teamsMessage renders the chat model as a Teams message whose attachment is an Adaptive Card
 * (version 1.5, what Teams Workflows render): a coloured title, a FactSet and, when a human
 * must decide, an Action.OpenUrl to the approval page (Workflows cards do not support
 * Action.Submit). Times show in each reader's local time through {{DATE()}} / {{TIME()}}.
 *
 * @see https://adaptivecards.io/explorer/
 */
import { utcText, vmList, type ChatMessage, type Severity } from './chat-model.ts';

const STYLE: Record<Severity, { container: string; color: string }> = {
  critical: { container: 'attention', color: 'Attention' },
  high: { container: 'warning', color: 'Warning' },
  warning: { container: 'warning', color: 'Warning' },
  resolved: { container: 'good', color: 'Good' },
  info: { container: 'emphasis', color: 'Default' },
};

/**
 * md makes text literal in the Markdown that Teams renders in TextBlocks and facts: the
 * characters that open links, images, autolinks, mentions, emphasis and code are escaped with a
 * backslash (CommonMark), a line that would start a list is escaped too, and
 * `{{` is broken up so that nothing becomes a DATE()/TIME() function. Nothing from IMDS can
 * become a link beside the real Approve button, a mention, or emphasis.
 */
export function md(text: string): string {
  return text
    .replace(/[\\`*_[\]<~]/g, '\\$&')
    .replace(/^(\s*)([-+]|\d+\.)(?=\s)/gm, '$1\\$2')
    .replace(/\{\{/g, '{\u200b{');
}

export function adaptiveCard(msg: ChatMessage): Record<string, unknown> {
  const s = STYLE[msg.severity];
  const nb = msg.notBefore;
  const facts = [
    { title: 'Event', value: `${md(msg.eventType)} · ${md(msg.eventStatus)}` },
    { title: 'Source', value: msg.source === 'User' ? 'User (an administrator asked for it)' : md(msg.source) },
    { title: 'Not before', value: nb ? `${utcText(nb.iso)} (${nb.timeLeft})` : msg.eventStatus === 'Started' ? 'now (started)' : '-' },
    { title: 'Expected impact', value: msg.duration },
    { title: 'VMs', value: md(vmList(msg)) },
    { title: 'EventId', value: md(msg.eventId) },
  ];
  const body: Record<string, unknown>[] = [
    {
      type: 'Container',
      style: s.container,
      bleed: true,
      items: [
        { type: 'TextBlock', text: md(msg.title), weight: 'Bolder', size: 'Large', color: s.color, wrap: true },
        { type: 'TextBlock', text: `${msg.transition} · seen {{DATE(${isoSeconds(msg.observedAt)}, SHORT)}} {{TIME(${isoSeconds(msg.observedAt)})}} on ${md(msg.thisVm)}`, isSubtle: true, spacing: 'None', wrap: true },
      ],
    },
    { type: 'FactSet', facts },
  ];
  if (nb) {
    body.push({ type: 'TextBlock', text: `Your local time: {{DATE(${isoSeconds(nb.iso)}, SHORT)}} {{TIME(${isoSeconds(nb.iso)})}}`, isSubtle: true, size: 'Small', wrap: true });
  }
  if (msg.description !== '') body.push({ type: 'TextBlock', text: md(msg.description), wrap: true });
  return {
    type: 'AdaptiveCard',
    $schema: 'http://adaptivecards.io/schemas/adaptive-card.json',
    version: '1.5',
    msteams: { width: 'Full' },
    body,
    actions: msg.approveUrl !== null ? [{ type: 'Action.OpenUrl', title: 'Approve: start the maintenance now', url: msg.approveUrl, style: 'positive' }] : [],
  };
}

/** teamsMessage wraps the card the way the Workflows webhook trigger expects. */
export function teamsMessage(msg: ChatMessage): Record<string, unknown> {
  return {
    type: 'message',
    attachments: [{ contentType: 'application/vnd.microsoft.card.adaptive', contentUrl: null, content: adaptiveCard(msg) }],
  };
}

/** Adaptive Cards' DATE()/TIME() want RFC 3339 without fractions. */
function isoSeconds(iso: string): string {
  return iso.replace(/\.\d+Z$/, 'Z');
}
