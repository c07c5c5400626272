/**
 * The rules of the chat services the template recipes feed (Google Chat, Discord, Mattermost,
 * Telegram), written from each service's public API documentation: each checks one request body
 * as the service would and answers with its status and body. service-standins.ts serves them.
 */

type Json = Record<string, unknown>;

export const isObj = (v: unknown): v is Json => v !== null && typeof v === 'object' && !Array.isArray(v);
export const str = (v: unknown, max: number, min = 0) => typeof v === 'string' && [...v].length >= min && [...v].length <= max;

/** Checker collects what breaks a service's rules. */
export class Checker {
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

/** Google Chat incoming webhook: a message with `text` and/or `cardsV2`, at most 32,000 bytes; unknown fields refused. */
export function googleChat(c: Checker, body: unknown, url: URL): [number, unknown] {
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
export function discord(c: Checker, body: unknown): [number, unknown] {
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
export function mattermost(c: Checker, body: unknown): [number, unknown] {
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
