/**
 * Telegram's sendMessage rules, written from its Bot API documentation: the text's length once
 * its entities are parsed, and the HTML it accepts with parse_mode HTML.
 */
import { type Checker, isObj, str } from './chat-service-rules.ts';

const TELEGRAM_TAGS = new Set([
  'b',
  'strong',
  'i',
  'em',
  'u',
  'ins',
  's',
  'strike',
  'del',
  'span',
  'tg-spoiler',
  'a',
  'code',
  'pre',
  'blockquote',
  'tg-emoji',
]);

/** Telegram sendMessage: chat_id, text of 1 to 4,096 characters once its entities are parsed, parse_mode HTML as Telegram parses it. */
export function telegram(c: Checker, body: unknown): [number, unknown] {
  const bad = (description: string) =>
    [400, { ok: false, error_code: 400, description: `Bad Request: ${description}` }] as [number, unknown];
  if (!isObj(body)) return bad('message text is empty');
  c.keys(
    body,
    [
      'chat_id',
      'text',
      'parse_mode',
      'entities',
      'link_preview_options',
      'disable_notification',
      'protect_content',
      'reply_parameters',
      'reply_markup',
      'message_thread_id',
      'business_connection_id',
      'message_effect_id',
      'allow_paid_broadcast',
    ],
    'sendMessage',
  );
  if (c.problems.length > 0) return bad(c.problems.join('; '));
  const chat = body.chat_id;
  if (!(Number.isInteger(chat) || (typeof chat === 'string' && /^(-?\d+|@\w{5,32})$/.test(chat)))) return bad('chat not found');
  if (typeof body.text !== 'string' || body.text.trim() === '') return bad('message text is empty');
  if ('parse_mode' in body && !['HTML', 'MarkdownV2', 'Markdown'].includes(body.parse_mode as string))
    return bad(`unsupported parse_mode "${String(body.parse_mode)}"`);
  let visible = body.text;
  if (body.parse_mode === 'HTML') {
    const parsed = parseTelegramHtml(body.text);
    if (typeof parsed !== 'string') return bad(`can't parse entities: ${parsed.error}`);
    visible = parsed;
  }
  if ([...visible].length > 4096) return bad('message is too long');
  const kb = isObj(body.reply_markup) ? body.reply_markup.inline_keyboard : undefined;
  if ('reply_markup' in body) {
    const rows = Array.isArray(kb) ? kb : null;
    if (
      rows === null ||
      !rows.every(
        (r) =>
          Array.isArray(r) &&
          r.every((b) => isObj(b) && str(b.text, 64, 1) && typeof b.url === 'string' && /^(https?|tg):\/\//.test(b.url)),
      )
    )
      return bad("can't parse inline keyboard button: a button needs text and an http(s) url");
  }
  return [200, { ok: true, result: { message_id: 1, date: Math.floor(Date.now() / 1000), chat: { id: chat }, text: visible } }];
}

/** parseTelegramHtml returns the visible text, or why Telegram would refuse it: unknown or unbalanced tags, a bare < or &. */
export function parseTelegramHtml(html: string): string | { error: string } {
  const open: string[] = [];
  let out = '';
  let i = 0;
  while (i < html.length) {
    const ch = html[i]!;
    if (ch === '<') {
      const m = /^<(\/?)([a-z-]+)((?:\s+[a-z-]+="[^"<>]*")*)\s*>/.exec(html.slice(i));
      if (m === null) return { error: `Unsupported start tag at byte offset ${Buffer.byteLength(html.slice(0, i))}` };
      const [all, closing, tag] = m as unknown as [string, string, string];
      if (!TELEGRAM_TAGS.has(tag)) return { error: `Unsupported start tag "${tag}" at byte offset ${Buffer.byteLength(html.slice(0, i))}` };
      if (closing) {
        if (open.pop() !== tag) return { error: `Can't find end tag corresponding to start tag "${tag}"` };
      } else open.push(tag);
      i += all.length;
    } else if (ch === '&') {
      const m = /^&(lt|gt|amp|quot|#\d+|#x[0-9a-fA-F]+);/.exec(html.slice(i));
      if (m === null) return { error: `Unsupported entity at byte offset ${Buffer.byteLength(html.slice(0, i))}` };
      out += { lt: '<', gt: '>', amp: '&', quot: '"' }[m[1]!] ?? '?';
      i += m[0].length;
    } else if (ch === '>') {
      return { error: `Unexpected end tag at byte offset ${Buffer.byteLength(html.slice(0, i))}` };
    } else {
      out += ch;
      i += 1;
    }
  }
  if (open.length > 0) return { error: `Can't find end tag corresponding to start tag "${open.at(-1)}"` };
  return out;
}
