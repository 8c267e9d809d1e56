// The webhooks page (#/webhooks): create an endpoint (its secret shown once), list them, send a
// test event, rotate the secret (shown once; the old one signs beside it for the overlap unless
// ended now), and read an endpoint's delivery log.
import type { Api } from '../api';
import type { Webhook } from '../types';
import { errText, fill, fmtTime, h } from './dom';

const TYPES = ['*', 'EntityChanged', 'TranscriptSegmentEvent', 'TalkingPointEvent'] as const;

export class WebhooksPage {
  readonly el: HTMLElement;
  private readonly list = h('ul', { id: 'webhooks', class: 'plain-list' });
  private readonly secret = h('div', { id: 'webhook-secret-box' });
  private readonly message = h('p', { id: 'webhook-message', class: 'error' });
  private readonly deliveries = h('section', { id: 'webhook-deliveries', class: 'card', hidden: true });

  constructor(private readonly api: Api) {
    const url = h('input', { id: 'webhook-url', placeholder: 'https://example.com/hooks', size: 40 });
    const types = h(
      'select',
      { id: 'webhook-types' },
      ...TYPES.map((t) => h('option', { value: t }, t === '*' ? 'every event type' : t)),
    );
    const create = h(
      'button',
      {
        id: 'webhook-create',
        onclick: () =>
          void this.act(create, async () => {
            const hook = await api.createWebhook(url.value.trim(), [types.value as (typeof TYPES)[number]]);
            this.showSecret(hook.id, hook.secret, 'created');
            await this.load();
          }),
      },
      'Create',
    );
    this.el = h(
      'div',
      { class: 'webhooks-page' },
      h(
        'section',
        { class: 'card' },
        h('h2', {}, 'Webhooks'),
        h('p', { class: 'muted' }, 'Events of this account, POSTed and signed per Standard Webhooks.'),
        h('div', { class: 'row' }, url, types, create),
        this.message,
        this.secret,
        this.list,
      ),
      this.deliveries,
    );
  }

  /** Opens the page afresh: a secret shown before is gone. */
  show(): Promise<void> {
    fill(this.secret);
    this.message.textContent = '';
    this.deliveries.hidden = true;
    return this.load();
  }

  async load(): Promise<void> {
    try {
      this.render((await this.api.webhooks()).items);
    } catch (err) {
      this.message.textContent = errText(err);
    }
  }

  /** Runs a button's call: disabled meanwhile, its error shown. */
  private async act(button: HTMLButtonElement, call: () => Promise<void>) {
    button.disabled = true;
    this.message.textContent = '';
    try {
      await call();
    } catch (err) {
      this.message.textContent = errText(err);
    } finally {
      button.disabled = false;
    }
  }

  /** The secret as the server answered it once: not kept anywhere, gone with the next page load. */
  private showSecret(id: string, secret: string, what: string) {
    fill(
      this.secret,
      h(
        'div',
        { class: 'card secret', 'data-webhook': id },
        h('strong', {}, `Secret ${what}: copy it now, it is not shown again. `),
        h('code', { id: 'webhook-secret' }, secret),
      ),
    );
  }

  private render(hooks: Webhook[]) {
    if (!hooks.length) return fill(this.list, h('li', { class: 'muted' }, 'No webhooks yet.'));
    fill(this.list, ...hooks.map((w) => this.item(w)));
  }

  private item(w: Webhook) {
    const button = (cls: string, label: string, call: (b: HTMLButtonElement) => Promise<void>) => {
      const b: HTMLButtonElement = h(
        'button',
        { class: `link ${cls}`, 'data-id': w.id, onclick: () => void this.act(b, () => call(b)) },
        label,
      );
      return b;
    };
    return h(
      'li',
      { class: 'webhook', 'data-id': w.id },
      h('span', { class: 'webhook-url' }, w.url),
      h('span', { class: 'meta' }, ` ${w.event_types.join(', ')} · ${w.enabled ? 'enabled' : 'disabled'} `),
      h(
        'div',
        { class: 'row' },
        button('webhook-test', 'Send test', async () => {
          const { event_id } = await this.api.testWebhook(w.id);
          fill(this.secret, h('p', { class: 'muted', id: 'webhook-test-queued' }, `Test event ${event_id} queued.`));
        }),
        button('webhook-rotate', 'Rotate secret', async () =>
          this.showSecret(
            w.id,
            (await this.api.rotateWebhookSecret(w.id, false)).secret,
            'rotated (the old one signs too for the overlap)',
          ),
        ),
        button('webhook-rotate-now', 'Rotate, old secret stops now', async () =>
          this.showSecret(
            w.id,
            (await this.api.rotateWebhookSecret(w.id, true)).secret,
            'rotated (the old one no longer signs)',
          ),
        ),
        button('webhook-deliveries-open', 'Deliveries', () => this.showDeliveries(w)),
      ),
    );
  }

  private async showDeliveries(w: Webhook) {
    const refresh: HTMLButtonElement = h(
      'button',
      {
        id: 'webhook-deliveries-refresh',
        class: 'link',
        onclick: () => void this.act(refresh, () => this.showDeliveries(w)),
      },
      'refresh',
    );
    const { items } = await this.api.webhookDeliveries(w.id);
    this.deliveries.hidden = false;
    fill(
      this.deliveries,
      h('h3', {}, `Deliveries to ${w.url} (last 7 days, newest first) `, refresh),
      items.length
        ? h(
            'div',
            { class: 'table-scroll' },
            h(
              'table',
              { class: 'events', 'data-webhook': w.id },
              h('tr', {}, ...['time', 'event', 'attempt', 'answer', 'ms'].map((c) => h('th', {}, c))),
              ...items.map((a) =>
                h(
                  'tr',
                  { class: 'webhook-attempt', 'data-event': a.event_id, 'data-status': a.status_code ?? '' },
                  h('td', {}, fmtTime(a.attempted_at)),
                  h('td', { class: 'payload' }, a.event_id),
                  h('td', {}, a.attempt),
                  h('td', {}, a.status_code ?? a.error ?? ''),
                  h('td', {}, a.duration_ms),
                ),
              ),
            ),
          )
        : h('p', { class: 'muted', id: 'webhook-deliveries-empty' }, 'No attempts yet.'),
    );
  }
}
