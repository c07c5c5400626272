/**
 * Stand-ins for the services the recipes in examples/templates/ feed, written from each
 * service's public API documentation (none of them can be reached from the machines the tests
 * run on). One HTTP server on 127.0.0.1 answers each at the real path with the real success
 * status and body, and refuses, as the service does, what breaks the documented rules: required
 * fields, types, enumerations, lengths, unknown fields where the service refuses them, and for
 * Telegram the HTML it accepts. Every refusal is kept with its reason, so a test sees why.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

type Json = Record<string, unknown>;
export interface Received {
  readonly service: string;
  readonly method: string;
  readonly path: string;
  readonly headers: IncomingMessage['headers'];
  readonly body: unknown;
  /** Why the service refused it, or null when it accepted it. */
  readonly refused: string | null;
}

const isObj = (v: unknown): v is Json => v !== null && typeof v === 'object' && !Array.isArray(v);
const str = (v: unknown, max: number, min = 0) => typeof v === 'string' && [...v].length >= min && [...v].length <= max;

/** Checker collects what breaks a service's rules. */
class Checker {
  readonly problems: string[] = [];
  need(ok: boolean, problem: string): void {
    if (!ok) this.problems.push(problem);
  }
  keys(o: Json, allowed: readonly string[], where: string): void {
    for (const k of Object.keys(o)) this.need(allowed.includes(k), `${where}: unknown field "${k}"`);
  }
  optString(o: Json, key: string, max: number, where: string): void {
    if (key in o) this.need(str(o[key], max), `${where}.${key}: must be a string of at most ${max} characters`);
  }
}

export class ServiceStandIns {
  readonly received: Received[] = [];
  /** Opsgenie alerts by alias, PagerDuty alerts by dedup_key: their state after what was accepted. */
  readonly opsgenie = new Map<string, { status: 'open' | 'closed'; count: number; notes: string[] }>();
  readonly pagerduty = new Map<string, 'triggered' | 'acknowledged' | 'resolved'>();
  static readonly GENIE_KEY = '0b7e5c1a-6f4d-4c2e-9a8b-3d2f1e0c9b8a';
  static readonly TELEGRAM_TOKEN = '123456789:AAHstandInTokenForTestsOnly0123456';
  readonly #server: Server;
  url = '';

  constructor() {
    this.#server = createServer((req, res) => void this.#handle(req, res));
  }

  async start(): Promise<this> {
    await new Promise<void>((r) => this.#server.listen(0, '127.0.0.1', () => r()));
    this.url = `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
    return this;
  }

  async close(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise<void>((r) => this.#server.close(() => r()));
  }

  refused(): Received[] {
    return this.received.filter((r) => r.refused !== null);
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const url = new URL(req.url ?? '/', 'http://stand-in');
    let body: unknown;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      body = undefined;
    }
    const p = url.pathname;
    const route: [string, (c: Checker) => [number, unknown]] | null = /^\/v1\/spaces\/[^/]+\/messages$/.test(p)
      ? ['google-chat', (c) => googleChat(c, body, url)]
      : /^\/api\/webhooks\/\d+\/[\w-]+$/.test(p)
        ? ['discord', (c) => discord(c, body)]
        : /^\/hooks\/[a-z0-9]{26}$/.test(p)
          ? ['mattermost', (c) => mattermost(c, body)]
          : p.startsWith('/v2/alerts')
            ? ['opsgenie', (c) => this.#opsgenie(c, req, url, body)]
            : p === '/v2/enqueue'
              ? ['pagerduty', (c) => this.#pagerduty(c, body)]
              : p === `/bot${ServiceStandIns.TELEGRAM_TOKEN}/sendMessage`
                ? ['telegram', (c) => telegram(c, body)]
                : null;
    if (route === null || req.method !== 'POST') {
      this.received.push({ service: 'unknown', method: req.method ?? '', path: p, headers: req.headers, body, refused: 'no such route' });
      res.writeHead(404).end();
      return;
    }
    const c = new Checker();
    if (body === undefined) c.problems.push('the body is not JSON');
    const [status, answer] = c.problems.length > 0 ? [400, { error: c.problems.join('; ') }] : route[1](c);
    this.received.push({
      service: route[0],
      method: req.method,
      path: `${p}${url.search}`,
      headers: req.headers,
      body,
      refused: status >= 300 ? c.problems.join('; ') || `HTTP ${status}` : null,
    });
    const text = answer === null ? '' : typeof answer === 'string' ? answer : JSON.stringify(answer);
    res.writeHead(status, { 'content-type': typeof answer === 'string' ? 'text/plain' : 'application/json' }).end(text);
  }

  /** Opsgenie Alert API v2: create (POST /v2/alerts), add note and close (POST /v2/alerts/{id}/notes|close). */
  #opsgenie(c: Checker, req: IncomingMessage, url: URL, body: unknown): [number, unknown] {
    const reply = (took: number) =>
      [202, { result: 'Request will be processed', took, requestId: `req-${this.received.length}` }] as [number, unknown];
    if (req.headers.authorization !== `GenieKey ${ServiceStandIns.GENIE_KEY}`)
      return [401, { message: 'Could not authenticate', took: 0, requestId: 'x' }];
    if (!isObj(body)) return [422, { message: 'Request body is not processable' }];
    const m = /^\/v2\/alerts(?:\/([^/]+)\/(notes|close))?$/.exec(url.pathname);
    if (m === null) return [404, { message: 'Not found' }];
    if (m[1] === undefined) {
      c.keys(
        body,
        [
          'message',
          'alias',
          'description',
          'responders',
          'visibleTo',
          'actions',
          'tags',
          'details',
          'entity',
          'source',
          'priority',
          'user',
          'note',
        ],
        'alert',
      );
      c.need(str(body.message, 130, 1), 'message: required, at most 130 characters');
      c.optString(body, 'alias', 512, 'alert');
      c.optString(body, 'description', 15000, 'alert');
      c.optString(body, 'entity', 512, 'alert');
      c.optString(body, 'source', 100, 'alert');
      c.optString(body, 'note', 25000, 'alert');
      if ('priority' in body) c.need(['P1', 'P2', 'P3', 'P4', 'P5'].includes(body.priority as string), 'priority: one of P1 to P5');
      if ('tags' in body)
        c.need(
          Array.isArray(body.tags) && body.tags.length <= 20 && body.tags.every((t) => str(t, 50, 1)),
          'tags: at most 20 strings of at most 50 characters',
        );
      if ('details' in body)
        c.need(
          isObj(body.details) &&
            Object.values(body.details).every((v) => typeof v === 'string') &&
            JSON.stringify(body.details).length <= 8000,
          'details: a map of strings, at most 8000 characters',
        );
      if (c.problems.length > 0) return [422, { message: c.problems.join('; ') }];
      const alias = (body.alias as string | undefined) ?? `auto-${this.received.length}`;
      const a = this.opsgenie.get(alias);
      // an open alert with the same alias is de-duplicated: its count goes up
      if (a !== undefined && a.status === 'open') a.count += 1;
      else this.opsgenie.set(alias, { status: 'open', count: 1, notes: [] });
      return reply(0.1);
    }
    c.need(url.searchParams.get('identifierType') === 'alias', 'identifierType: these recipes name alerts by alias');
    // an encoded slash in a path segment is refused, as Java servlet containers refuse it by
    // default (and proxies decode it into another path): an alias used in the path has none
    if (/%2f/i.test(m[1])) return [400, { message: 'the identifier in the path holds an encoded /' }];
    const alias = decodeURIComponent(m[1]);
    const alert = this.opsgenie.get(alias);
    if (m[2] === 'notes') {
      c.keys(body, ['user', 'source', 'note'], 'note');
      c.need(str(body.note, 25000, 1), 'note: required, at most 25000 characters');
    } else {
      c.keys(body, ['user', 'source', 'note'], 'close');
      c.optString(body, 'note', 25000, 'close');
    }
    c.optString(body, 'source', 100, m[2]!);
    // Opsgenie answers 202 and fails later for an alert that does not exist: the stand-in says so now
    c.need(alert !== undefined, `no alert has the alias "${alias}"`);
    if (c.problems.length > 0) return [422, { message: c.problems.join('; ') }];
    if (m[2] === 'notes') alert!.notes.push(body.note as string);
    else alert!.status = 'closed';
    return reply(0.05);
  }

  /** PagerDuty Events API v2: POST /v2/enqueue. */
  #pagerduty(c: Checker, body: unknown): [number, unknown] {
    const invalid = () => [400, { status: 'invalid event', message: 'Event object is invalid', errors: c.problems }] as [number, unknown];
    if (!isObj(body)) return [400, { status: 'invalid event', message: 'Event object is invalid', errors: ['not an object'] }];
    c.keys(body, ['routing_key', 'event_action', 'dedup_key', 'payload', 'images', 'links', 'client', 'client_url'], 'event');
    c.need(
      typeof body.routing_key === 'string' && /^[A-Za-z0-9]{32}$/.test(body.routing_key),
      'routing_key: a 32-character integration key',
    );
    const action = body.event_action as string;
    c.need(['trigger', 'acknowledge', 'resolve'].includes(action), "event_action: one of 'trigger', 'acknowledge', 'resolve'");
    if ('dedup_key' in body) c.need(str(body.dedup_key, 255, 1), 'dedup_key: at most 255 characters');
    if (action !== 'trigger') c.need('dedup_key' in body, 'dedup_key: required to acknowledge or resolve');
    if (action === 'trigger') {
      const p = body.payload;
      if (!isObj(p)) c.problems.push('payload: required to trigger');
      else {
        c.keys(p, ['summary', 'source', 'severity', 'timestamp', 'component', 'group', 'class', 'custom_details'], 'payload');
        c.need(str(p.summary, 1024, 1), 'payload.summary: required, at most 1024 characters');
        c.need(str(p.source, 255, 1), 'payload.source: required');
        c.need(
          ['critical', 'error', 'warning', 'info'].includes(p.severity as string),
          'payload.severity: one of critical, error, warning, info',
        );
        if ('timestamp' in p)
          c.need(typeof p.timestamp === 'string' && !Number.isNaN(Date.parse(p.timestamp)), 'payload.timestamp: ISO 8601');
        for (const k of ['component', 'group', 'class']) if (k in p) c.need(typeof p[k] === 'string', `payload.${k}: a string`);
        if ('custom_details' in p) c.need(isObj(p.custom_details), 'payload.custom_details: an object');
      }
    }
    if ('links' in body)
      c.need(
        Array.isArray(body.links) && body.links.every((l) => isObj(l) && typeof l.href === 'string' && /^https?:\/\//.test(l.href)),
        'links: objects with an http(s) href',
      );
    if (c.problems.length > 0) return invalid();
    const key = (body.dedup_key as string | undefined) ?? `auto-${this.received.length}`;
    const state = action === 'trigger' ? 'triggered' : action === 'acknowledge' ? 'acknowledged' : 'resolved';
    // acknowledging or resolving an alert that is not open changes nothing (PagerDuty drops it)
    if (action === 'trigger' || this.pagerduty.has(key)) this.pagerduty.set(key, state);
    return [202, { status: 'success', message: 'Event processed', dedup_key: key }];
  }
}

/** Google Chat incoming webhook: a message with `text` and/or `cardsV2`, at most 32,000 bytes; unknown fields refused. */
function googleChat(c: Checker, body: unknown, url: URL): [number, unknown] {
  const error = () =>
    [400, { error: { code: 400, message: `Invalid JSON payload received. ${c.problems.join('; ')}`, status: 'INVALID_ARGUMENT' } }] as [
      number,
      unknown,
    ];
  c.need(url.searchParams.has('key') && url.searchParams.has('token'), 'the webhook URL carries key and token');
  if (!isObj(body)) return [400, { error: { code: 400, message: 'not an object', status: 'INVALID_ARGUMENT' } }];
  c.keys(body, ['text', 'cardsV2', 'thread', 'fallbackText', 'accessoryWidgets'], 'message');
  c.need(typeof body.text === 'string' || Array.isArray(body.cardsV2), 'a message needs text or cardsV2');
  if ('text' in body) c.need(typeof body.text === 'string', 'text: a string');
  c.need(Buffer.byteLength(JSON.stringify(body)) <= 32_000, 'the message is larger than 32,000 bytes');
  const widgets = ['textParagraph', 'decoratedText', 'buttonList', 'divider', 'image', 'columns', 'grid'];
  for (const [i, cw] of (Array.isArray(body.cardsV2) ? body.cardsV2 : []).entries()) {
    const where = `cardsV2[${i}]`;
    if (!isObj(cw) || !isObj(cw.card)) {
      c.problems.push(`${where}: {cardId, card}`);
      continue;
    }
    c.keys(cw, ['cardId', 'card'], where);
    c.need(typeof cw.cardId === 'string', `${where}.cardId: a string`);
    const card = cw.card;
    c.keys(
      card,
      ['header', 'sections', 'name', 'fixedFooter', 'cardActions', 'displayStyle', 'peekCardHeader', 'sectionDividerStyle'],
      `${where}.card`,
    );
    if (isObj(card.header)) {
      c.keys(card.header, ['title', 'subtitle', 'imageUrl', 'imageType', 'imageAltText'], `${where}.card.header`);
      c.need(typeof card.header.title === 'string' && card.header.title !== '', `${where}.card.header.title: required`);
    }
    for (const [s, section] of (Array.isArray(card.sections) ? card.sections : []).entries()) {
      const sw = `${where}.card.sections[${s}]`;
      if (!isObj(section) || !Array.isArray(section.widgets)) {
        c.problems.push(`${sw}: {widgets: [...]}`);
        continue;
      }
      c.keys(section, ['header', 'widgets', 'collapsible', 'uncollapsibleWidgetsCount'], sw);
      for (const [w, widget] of section.widgets.entries()) {
        const ww = `${sw}.widgets[${w}]`;
        const kinds = isObj(widget) ? Object.keys(widget).filter((k) => widgets.includes(k)) : [];
        c.need(isObj(widget) && kinds.length === 1 && Object.keys(widget).length === 1, `${ww}: exactly one widget`);
        if (!isObj(widget)) continue;
        if (isObj(widget.decoratedText)) {
          c.keys(
            widget.decoratedText,
            ['topLabel', 'text', 'bottomLabel', 'wrapText', 'startIcon', 'button', 'onClick'],
            `${ww}.decoratedText`,
          );
          c.need(typeof widget.decoratedText.text === 'string', `${ww}.decoratedText.text: required`);
        }
        if (isObj(widget.buttonList)) {
          const buttons = widget.buttonList.buttons;
          c.need(Array.isArray(buttons) && buttons.length > 0, `${ww}.buttonList.buttons: required`);
          for (const b of Array.isArray(buttons) ? buttons : []) {
            const link = isObj(b) && isObj(b.onClick) && isObj(b.onClick.openLink) ? b.onClick.openLink.url : undefined;
            c.need(
              isObj(b) && typeof b.text === 'string' && typeof link === 'string' && /^https?:\/\//.test(link),
              `${ww}.buttonList: a button needs text and onClick.openLink.url`,
            );
          }
        }
      }
    }
  }
  if (c.problems.length > 0) return error();
  return [200, { name: 'spaces/AAAA/messages/abc.def', text: body.text ?? '', createTime: new Date().toISOString() }];
}

/** Discord execute webhook: content (2,000) or embeds (10), the embed limits and 6,000 characters in all. */
function discord(c: Checker, body: unknown): [number, unknown] {
  if (!isObj(body)) return [400, { code: 50109, message: 'The request body contains invalid JSON.' }];
  c.keys(
    body,
    [
      'content',
      'username',
      'avatar_url',
      'tts',
      'embeds',
      'allowed_mentions',
      'components',
      'flags',
      'thread_name',
      'applied_tags',
      'poll',
    ],
    'webhook',
  );
  const embeds = body.embeds;
  c.need(
    (typeof body.content === 'string' && body.content !== '') || (Array.isArray(embeds) && embeds.length > 0),
    'Cannot send an empty message (content or embeds)',
  );
  c.optString(body, 'content', 2000, 'webhook');
  if ('username' in body)
    c.need(
      str(body.username, 80, 1) && !/discord|clyde/i.test(body.username as string),
      'username: 1 to 80 characters, not "discord" or "clyde"',
    );
  if (isObj(body.allowed_mentions))
    c.need(
      Array.isArray(body.allowed_mentions.parse) &&
        body.allowed_mentions.parse.every((p) => ['roles', 'users', 'everyone'].includes(p as string)),
      'allowed_mentions.parse',
    );
  let total = 0;
  const count = (v: unknown) => (total += typeof v === 'string' ? [...v].length : 0);
  c.need(!('embeds' in body) || (Array.isArray(embeds) && embeds.length <= 10), 'embeds: at most 10');
  for (const [i, e] of (Array.isArray(embeds) ? embeds : []).entries()) {
    const w = `embeds[${i}]`;
    if (!isObj(e)) {
      c.problems.push(`${w}: an object`);
      continue;
    }
    c.keys(
      e,
      [
        'title',
        'type',
        'description',
        'url',
        'timestamp',
        'color',
        'footer',
        'image',
        'thumbnail',
        'video',
        'provider',
        'author',
        'fields',
      ],
      w,
    );
    c.optString(e, 'title', 256, w);
    c.optString(e, 'description', 4096, w);
    count(e.title);
    count(e.description);
    if ('url' in e) c.need(typeof e.url === 'string' && /^https?:\/\//.test(e.url), `${w}.url: Scheme must be one of ('http', 'https').`);
    if ('color' in e)
      c.need(
        Number.isInteger(e.color) && (e.color as number) >= 0 && (e.color as number) <= 0xffffff,
        `${w}.color: an integer 0 to 16777215`,
      );
    if ('timestamp' in e) c.need(typeof e.timestamp === 'string' && !Number.isNaN(Date.parse(e.timestamp)), `${w}.timestamp: ISO 8601`);
    if (isObj(e.footer)) {
      c.need(str(e.footer.text, 2048, 1), `${w}.footer.text: 1 to 2048 characters`);
      count(e.footer.text);
    }
    const fields = e.fields;
    c.need(!('fields' in e) || (Array.isArray(fields) && fields.length <= 25), `${w}.fields: at most 25`);
    for (const [j, f] of (Array.isArray(fields) ? fields : []).entries()) {
      c.need(isObj(f) && str(f.name, 256, 1) && str(f.value, 1024, 1), `${w}.fields[${j}]: name 1 to 256 and value 1 to 1024 characters`);
      if (isObj(f)) {
        count(f.name);
        count(f.value);
        if ('inline' in f) c.need(typeof f.inline === 'boolean', `${w}.fields[${j}].inline: a boolean`);
      }
    }
  }
  c.need(total <= 6000, `embeds: ${total} characters in all, more than 6000`);
  if (c.problems.length > 0) return [400, { code: 50035, message: 'Invalid Form Body', errors: c.problems }];
  return [204, null];
}

/** Mattermost incoming webhook: text and/or attachments (Slack's attachment fields). */
function mattermost(c: Checker, body: unknown): [number, unknown] {
  if (!isObj(body)) return [400, 'Unable to parse incoming data'];
  c.keys(body, ['text', 'channel', 'username', 'icon_url', 'icon_emoji', 'attachments', 'type', 'props', 'priority'], 'webhook');
  c.need(
    (typeof body.text === 'string' && body.text !== '') || (Array.isArray(body.attachments) && body.attachments.length > 0),
    'No text specified',
  );
  c.optString(body, 'text', 16383, 'webhook');
  for (const [i, a] of (Array.isArray(body.attachments) ? body.attachments : []).entries()) {
    const w = `attachments[${i}]`;
    if (!isObj(a)) {
      c.problems.push(`${w}: an object`);
      continue;
    }
    c.keys(
      a,
      [
        'fallback',
        'color',
        'pretext',
        'author_name',
        'author_link',
        'author_icon',
        'title',
        'title_link',
        'text',
        'fields',
        'image_url',
        'thumb_url',
        'footer',
        'footer_icon',
        'actions',
      ],
      w,
    );
    if ('color' in a)
      c.need(
        typeof a.color === 'string' && (/^#[0-9A-Fa-f]{6}$/.test(a.color) || ['good', 'warning', 'danger'].includes(a.color)),
        `${w}.color: #RRGGBB, good, warning or danger`,
      );
    for (const [j, f] of (Array.isArray(a.fields) ? a.fields : []).entries()) {
      c.need(
        isObj(f) &&
          typeof f.title === 'string' &&
          (typeof f.value === 'string' || typeof f.value === 'number') &&
          (!('short' in f) || typeof f.short === 'boolean'),
        `${w}.fields[${j}]: {title, value, short}`,
      );
    }
  }
  if (c.problems.length > 0) return [400, { id: 'web.incoming_webhook.parse.app_error', message: c.problems.join('; '), status_code: 400 }];
  return [200, 'ok'];
}

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
function telegram(c: Checker, body: unknown): [number, unknown] {
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
