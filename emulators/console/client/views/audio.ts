// Playback of the finished take: GET /meetings/{id}/audio-url, the signed object-storage link
// first, the per-user signed proxy link if the first does not load.
import { ApiProblem, type Api } from '../api';
import { errText, fmtTime, h } from './dom';

export class AudioPane {
  readonly el: HTMLElement;
  private readonly audio = h('audio', { id: 'audio', controls: true, preload: 'auto' });
  private readonly info = h('p', { id: 'audio-info', class: 'muted' }, 'No audio loaded.');
  private fallback: string | null = null;

  constructor(
    private readonly api: Api,
    private readonly meetingId: string,
  ) {
    const load = h('button', { id: 'audio-load', onclick: () => this.load() }, 'Load audio');
    this.audio.addEventListener('error', () => {
      if (!this.fallback) return void (this.info.textContent = 'the audio did not load');
      this.info.textContent = 'signed storage link failed; playing through the proxy link';
      this.audio.src = this.fallback;
      this.fallback = null;
    });
    this.audio.addEventListener('loadedmetadata', () => (this.info.textContent = `${this.audio.duration.toFixed(1)} s · ${this.info.dataset.expires ?? ''}`));
    this.el = h('section', { class: 'card' }, h('h3', {}, 'Audio'), h('div', { class: 'row' }, load), this.audio, this.info);
  }

  /** Loads the link; quiet when the meeting has no audio yet. */
  async load(): Promise<void> {
    try {
      const link = await this.api.audioUrl(this.meetingId);
      this.fallback = link.proxy_url ?? null;
      this.info.dataset.expires = `link valid until ${fmtTime(link.expires_at)}`;
      this.info.textContent = 'loading…';
      this.audio.src = link.url;
    } catch (err) {
      this.info.textContent = err instanceof ApiProblem && err.status === 404 ? 'No audio yet (a recording has audio once it is finalized).' : errText(err);
    }
  }
}
