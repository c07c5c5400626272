/**
 * slackMessage renders the chat model as Slack Block Kit: a header, a section of fields, the
 * description, a context line and, when a human must decide, an Approve button. Dates use
 * Slack's `<!date^…>` so every reader sees their own local time. Within Block Kit's limits:
 * 50 blocks, 150-character headers, 2000-character fields, 3000-character texts, 75-character
 * button texts.
 *
 * @see https://api.slack.com/reference/block-kit/blocks
 */
import { truncate, utcText, vmList, type ChatMessage, type Severity } from './chat-model.ts';

export const LIMITS = { blocks: 50, header: 150, field: 2000, text: 3000, buttonText: 75, fallback: 3000 } as const;

export const ICON: Record<Severity, string> = {
  critical: ':red_circle:',
  high: ':large_orange_circle:',
  warning: ':large_yellow_circle:',
  resolved: ':white_check_mark:',
  info: ':information_source:',
};

export interface SlackPayload {
  text: string;
  blocks: Record<string, unknown>[];
}

/** slackDate is `<!date^epoch^{date_short_pretty} {time}|fallback>`: local time for each reader. */
function slackDate(epoch: number, iso: string): string {
  return `<!date^${epoch}^{date_short_pretty} {time}|${utcText(iso)}>`;
}

/**
 * escape makes text inert in Slack's mrkdwn and in a message's fallback `text`: `&`, `<` and
 * `>` are entities, so nothing from IMDS or an approver can form `<!channel>`, `<@U…>` or a
 * `<url|label>` link. Every mrkdwn object that holds such text is also `verbatim`, so Slack does
 * not turn a bare URL or a channel name in it into a link beside the Approve button.
 */
export function escape(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** code renders text in a code span; Slack has no escape for a backtick inside one, so it becomes ˋ. */
function code(text: string): string {
  return `\`${escape(text).replace(/`/g, 'ˋ')}\``;
}

export interface SlackRenderOptions {
  /** Bot mode with interactivity: the button carries this value instead of opening a URL. */
  interactiveValue?: string;
}

export function slackMessage(msg: ChatMessage, options: SlackRenderOptions = {}): SlackPayload {
  const nb = msg.notBefore;
  const fields = [
    `*Event*\n${escape(msg.eventType)} · ${escape(msg.eventStatus)}`,
    `*Source*\n${msg.source === 'User' ? 'User (an administrator asked for it)' : escape(msg.source)}`,
    `*Not before*\n${nb ? `${slackDate(nb.epoch, nb.iso)} (${nb.timeLeft})` : msg.eventStatus === 'Started' ? 'now (started)' : '-'}`,
    `*Expected impact*\n${escape(msg.duration)}`,
    `*VMs*\n${escape(vmList(msg))}`,
  ].map((text) => ({ type: 'mrkdwn', text: truncate(text, LIMITS.field), verbatim: true }));
  const blocks: Record<string, unknown>[] = [headerBlock(msg.severity, msg.title), { type: 'section', fields }];
  if (msg.description !== '') {
    blocks.push({ type: 'section', text: { type: 'mrkdwn', text: truncate(`>${escape(msg.description)}`, LIMITS.text), verbatim: true } });
  }
  if (msg.prepared !== null) {
    blocks.push({
      type: 'context',
      elements: [{ type: 'mrkdwn', text: truncate(`:white_check_mark: ${escape(msg.prepared)}`, LIMITS.text), verbatim: true }],
    });
  }
  const observedEpoch = Math.floor(Date.parse(msg.observedAt) / 1000);
  blocks.push({
    type: 'context',
    elements: [
      {
        type: 'mrkdwn',
        text: truncate(
          `${ICON[msg.severity]} ${msg.transition} · EventId ${code(msg.eventId)} · seen ${slackDate(observedEpoch, msg.observedAt)} on ${escape(msg.thisVm)}`,
          LIMITS.text,
        ),
        verbatim: true,
      },
    ],
  });
  if (msg.approveUrl !== null) {
    const button: Record<string, unknown> = {
      type: 'button',
      style: 'primary',
      action_id: 'se_bridge_approve',
      text: { type: 'plain_text', text: truncate('Approve: start the maintenance now', LIMITS.buttonText) },
    };
    if (options.interactiveValue !== undefined) button.value = options.interactiveValue;
    else button.url = msg.approveUrl;
    blocks.push({ type: 'actions', block_id: 'se_bridge_approval', elements: [button] });
  }
  const when = nb ? `, not before ${utcText(nb.iso)} (${nb.timeLeft})` : '';
  return { text: truncate(escape(`${msg.title}${when}. EventId ${msg.eventId}`), LIMITS.fallback), blocks: blocks.slice(0, LIMITS.blocks) };
}

/** threadLine is the short reply added under the first message when an event moves on. */
export function threadLine(msg: ChatMessage): string {
  const nb = msg.notBefore ? ` Not before ${slackDate(msg.notBefore.epoch, msg.notBefore.iso)}.` : '';
  return truncate(`${ICON[msg.severity]} *${msg.transition}*: ${escape(msg.plainWords)}.${nb}`, LIMITS.text);
}

/** headerBlock: a message's header, its severity's emoji first, within Block Kit's 150 characters. */
export function headerBlock(severity: Severity, title: string): Record<string, unknown> {
  return { type: 'header', text: { type: 'plain_text', text: truncate(`${emojiText(severity)} ${title}`, LIMITS.header), emoji: true } };
}

function emojiText(s: Severity): string {
  return { critical: '🔴', high: '🟠', warning: '🟡', resolved: '✅', info: 'ℹ️' }[s];
}
