// Account export (POST /me/exports, docs/exports.md): request one, follow its state (refreshed on
// each EntityChanged account_export), download the archive through its signed link once ready.
import type { Api } from '../api';
import { errText, fill, fmtTime, h } from './dom';

type Export = Awaited<ReturnType<Api['accountExports']>>['items'][number];

const size = (bytes: number | null) => (bytes === null ? '' : ` · ${(bytes / 1e6).toFixed(1)} MB`);

export class AccountExportPanel {
  private readonly state = h('div', { id: 'account-export-state', class: 'muted' }, 'No export yet.');
  private readonly error = h('p', { class: 'error' });
  private readonly request = h(
    'button',
    { id: 'account-export-request', onclick: () => void this.start() },
    'Export my account',
  );
  readonly el = h(
    'section',
    { class: 'card', id: 'account-export' },
    h('h2', {}, 'Account export'),
    this.request,
    this.state,
    this.error,
  );

  constructor(private readonly api: Api) {}

  async load() {
    try {
      const latest = (await this.api.accountExports()).items[0];
      this.show(latest ?? null);
      this.error.textContent = '';
    } catch (err) {
      this.error.textContent = errText(err);
    }
  }

  private async start() {
    this.request.disabled = true;
    try {
      await this.api.requestAccountExport();
      await this.load();
    } catch (err) {
      this.error.textContent = errText(err);
      this.request.disabled = false;
    }
  }

  private show(e: Export | null) {
    if (!e) return fill(this.state, 'No export yet.');
    const busy = e.status === 'pending' || e.status === 'running';
    this.request.disabled = busy;
    this.state.setAttribute('data-status', e.status);
    fill(
      this.state,
      h('span', { class: `badge ${e.status}` }, busy ? `${e.status}…` : e.status),
      ` requested ${fmtTime(e.created_at)}${size(e.byte_count)}`,
      e.url &&
        h('a', { id: 'account-export-download', href: e.url, download: `account-export-${e.id}.zip` }, ' download'),
      e.url_expires_at && h('span', { class: 'muted' }, ` (link valid until ${fmtTime(e.url_expires_at)})`),
      e.error && h('span', { class: 'error' }, ` ${e.error}`),
    );
  }
}
