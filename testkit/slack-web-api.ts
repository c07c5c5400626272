/**
 * SlackStandIn: Slack's Web API as the real @slack/web-api client reaches it (its `slackApiUrl`
 * pointed here): chat.postMessage and chat.update over form-encoded POSTs with a bearer token,
 * answered as Slack answers (`{ok, channel, ts}`, or `{ok: false, error}`), keeping each message
 * by its channel and ts, so a test reads what a channel shows now. Written from Slack's API
 * reference (https://api.slack.com/methods/chat.postMessage, /chat.update); no Slack runs here.
 */
import { HttpPeer, type Answer, type Recorded } from './http-peer.ts';

export interface SlackMessage {
  readonly channel: string;
  readonly ts: string;
  text: string;
  blocks: unknown[];
  updates: number;
}

export interface SlackCall {
  readonly method: string;
  readonly channel: string | null;
  readonly ts: string | null;
  readonly text: string | null;
}

export class SlackStandIn {
  readonly peer = new HttpPeer();
  readonly messages: SlackMessage[] = [];
  /** The channel id a channel name resolves to. */
  readonly channelId = 'C0DIGEST01';
  /** Set to make the next calls fail as Slack would (an HTTP status, or a Slack error name). */
  failWith: { status: number } | { error: string } | null = null;
  readonly token: string;
  #ts = 0;

  constructor(token: string) {
    this.token = token;
    this.peer.answer = (r) => this.#answer(r);
  }

  async listen(): Promise<string> {
    await this.peer.listen();
    return `${this.peer.url}/api/`;
  }

  close(): Promise<void> {
    return this.peer.close();
  }

  /** calls: every chat call made, in order. */
  get calls(): SlackCall[] {
    return this.peer.requests.map((r) => {
      const form = new URLSearchParams(r.body);
      return { method: r.url.replace('/api/', ''), channel: form.get('channel'), ts: form.get('ts'), text: form.get('text') };
    });
  }

  /** remove deletes a message, as a person in the channel may. */
  remove(ts: string): void {
    const i = this.messages.findIndex((m) => m.ts === ts);
    if (i >= 0) this.messages.splice(i, 1);
  }

  #answer(r: Recorded): Answer {
    const json = (body: Record<string, unknown>): Answer => ({
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    if (r.headers.authorization !== `Bearer ${this.token}`) return json({ ok: false, error: 'invalid_auth' });
    if (this.failWith !== null)
      return 'status' in this.failWith ? { status: this.failWith.status } : json({ ok: false, error: this.failWith.error });
    const form = new URLSearchParams(r.body);
    const text = form.get('text') ?? '';
    const blocks = JSON.parse(form.get('blocks') ?? '[]') as unknown[];
    if (r.url === '/api/chat.postMessage') {
      const channel = form.get('channel') ?? '';
      if (channel === '') return json({ ok: false, error: 'channel_not_found' });
      const ts = `1700000000.${String(++this.#ts).padStart(6, '0')}`;
      this.messages.push({ channel: this.channelId, ts, text, blocks, updates: 0 });
      return json({ ok: true, channel: this.channelId, ts });
    }
    if (r.url === '/api/chat.update') {
      const m = this.messages.find((x) => x.channel === form.get('channel') && x.ts === form.get('ts'));
      if (m === undefined) return json({ ok: false, error: 'message_not_found' });
      m.text = text;
      m.blocks = blocks;
      m.updates++;
      return json({ ok: true, channel: m.channel, ts: m.ts });
    }
    return json({ ok: false, error: 'unknown_method' });
  }
}
