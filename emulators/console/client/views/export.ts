// Export buttons for one transcription (GET /transcriptions/{id}/export): each downloads the
// transcript in its format, fetched with the bearer token and saved from a Blob.
import type { Api } from '../api';
import { errText, fill, h } from './dom';

const FORMATS = [
  ['vtt', 'text/vtt'],
  ['srt', 'application/x-subrip'],
  ['txt', 'text/plain'],
  ['json', 'application/json'],
] as const;

export class ExportBar {
  readonly el = h('div', { id: 'export', class: 'row' });
  private readonly status = h('span', { class: 'muted' });

  constructor(private readonly api: Api) {}

  show(transcriptionId: string | null) {
    if (!transcriptionId) return fill(this.el);
    const button = ([format, type]: (typeof FORMATS)[number]) =>
      h(
        'button',
        { class: 'link', 'data-format': format, onclick: () => void this.download(transcriptionId, format, type) },
        format.toUpperCase(),
      );
    fill(this.el, h('span', {}, 'Export: '), ...FORMATS.map(button), this.status);
  }

  private async download(id: string, format: (typeof FORMATS)[number][0], type: string) {
    try {
      const text = await this.api.exportTranscript(id, format);
      const url = URL.createObjectURL(new Blob([text], { type }));
      h('a', { href: url, download: `transcript-${id}.${format}` }).click();
      setTimeout(() => URL.revokeObjectURL(url), 10_000);
      this.status.textContent = '';
    } catch (err) {
      this.status.textContent = ` ${errText(err)}`;
    }
  }
}
