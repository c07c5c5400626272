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

export function adaptiveCard(msg: ChatMessage): Record<string, unknown> {
  const s = STYLE[msg.severity];
  const nb = msg.notBefore;
  const facts = [
    { title: 'Event', value: `${msg.eventType} · ${msg.eventStatus}` },
    { title: 'Source', value: msg.source === 'User' ? 'User (an administrator asked for it)' : msg.source },
    { title: 'Not before', value: nb ? `${utcText(nb.iso)} (${nb.timeLeft})` : msg.eventStatus === 'Started' ? 'now (started)' : '-' },
    { title: 'Expected impact', value: msg.duration },
    { title: 'VMs', value: vmList(msg) },
    { title: 'EventId', value: msg.eventId },
  ];
  const body: Record<string, unknown>[] = [
    {
      type: 'Container',
      style: s.container,
      bleed: true,
      items: [
        { type: 'TextBlock', text: msg.title, weight: 'Bolder', size: 'Large', color: s.color, wrap: true },
        { type: 'TextBlock', text: `${msg.transition} · seen {{DATE(${isoSeconds(msg.observedAt)}, SHORT)}} {{TIME(${isoSeconds(msg.observedAt)})}} on ${msg.thisVm}`, isSubtle: true, spacing: 'None', wrap: true },
      ],
    },
    { type: 'FactSet', facts },
  ];
  if (nb) {
    body.push({ type: 'TextBlock', text: `Your local time: {{DATE(${isoSeconds(nb.iso)}, SHORT)}} {{TIME(${isoSeconds(nb.iso)})}}`, isSubtle: true, size: 'Small', wrap: true });
  }
  if (msg.description !== '') body.push({ type: 'TextBlock', text: msg.description, wrap: true });
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
