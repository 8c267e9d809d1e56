// Playback of the finished take: GET /meetings/{id}/audio-url, the signed object-storage link
// first, the per-user signed proxy link if the first does not load. A recording's audio exists
// only once a take is finalized, so the takes are asked first and the link only for such a take:
// the page never requests a link that is bound to 404 (each would be a red line in the browser).
// Every take (audio_version) of a recording is listed; any finalized one can be played. An upload
// meeting takes an audio file from disk (PUT /meetings/{id}/audio): the no-microphone path.
import { FRAME_MS } from '@mi/client';
import type { Api } from '../api';
import type { Meeting, Take } from '../types';
import { errText, fill, fmtTime, h } from './dom';

/** A finalized take that stored audio (a take finalized with no frame has none). */
const playable = (t: Take) => t.state === 'finalized' && t.frames_stored > 0;

export class AudioPane {
  readonly el: HTMLElement;
  private readonly audio = h('audio', { id: 'audio', controls: true, preload: 'auto' });
  private readonly info = h('p', { id: 'audio-info', class: 'muted' }, 'No audio loaded.');
  private readonly takes = h('ol', { id: 'takes', class: 'plain' });
  private readonly file = h('input', { id: 'audio-file', type: 'file', accept: 'audio/*', 'aria-label': 'audio file' });
  private fallback: string | null = null;
  /** The take whose audio is loaded; null: the newest playable one. */
  private version: number | null = null;

  constructor(
    private readonly api: Api,
    private readonly meeting: Pick<Meeting, 'id' | 'source_type'>,
  ) {
    // Only an upload's audio is asked for on demand; a recording's loads once a take is final.
    const upload = meeting.source_type === 'upload';
    const load = upload && h('button', { id: 'audio-load', onclick: () => this.load(true) }, 'Load audio');
    const send = upload && h('button', { id: 'audio-upload', onclick: () => void this.upload() }, 'Upload');
    this.audio.addEventListener('error', () => {
      if (!this.fallback) return void (this.info.textContent = 'the audio did not load');
      this.info.textContent = 'signed storage link failed; playing through the proxy link';
      this.audio.src = this.fallback;
      this.fallback = null;
    });
    this.audio.addEventListener(
      'loadedmetadata',
      () => (this.info.textContent = `${this.audio.duration.toFixed(1)} s · ${this.info.dataset.expires ?? ''}`),
    );
    this.el = h(
      'section',
      { class: 'card' },
      h('h3', {}, 'Audio'),
      upload && h('div', { class: 'row' }, this.file, send),
      load && h('div', { class: 'row' }, load),
      meeting.source_type === 'recording' && this.takes,
      this.audio,
      this.info,
    );
  }

  /**
   * Loads the link when there is audio. A recording has audio once a take is finalized; an
   * upload's file cannot be known without asking, so it is asked only on the button (`asked`).
   */
  async load(asked = false): Promise<void> {
    try {
      let version: number | undefined;
      if (this.meeting.source_type === 'recording') {
        const takes = (await this.api.takes(this.meeting.id)).items;
        const take = takes.find((t) => t.audio_version === this.version) ?? takes.filter(playable).at(-1);
        this.renderTakes(takes, take?.audio_version ?? null);
        if (!take || !playable(take))
          return void (this.info.textContent = 'No audio yet (a recording has audio once a take is finalized).');
        version = take.audio_version;
      } else if (this.meeting.source_type !== 'upload' || !asked) {
        return void (this.info.textContent =
          this.meeting.source_type === 'upload'
            ? 'Press Load audio for the uploaded file.'
            : `A ${this.meeting.source_type} meeting has no audio.`);
      }
      const link = await this.api.audioUrl(this.meeting.id, version);
      this.fallback = link.proxy_url ?? null;
      this.info.dataset.expires = `${version === undefined ? '' : `take ${version} · `}link valid until ${fmtTime(link.expires_at)}`;
      this.info.textContent = 'loading…';
      this.audio.src = link.url;
    } catch (err) {
      this.info.textContent = errText(err);
    }
  }

  /** Sends the chosen file as the meeting's audio (replacing an earlier one), then loads it. */
  private async upload(): Promise<void> {
    const file = this.file.files?.[0];
    if (!file) return void (this.info.textContent = 'Choose an audio file first.');
    this.info.textContent = `uploading ${file.name}…`;
    try {
      const stored = await this.api.uploadAudio(this.meeting.id, file);
      this.info.textContent = `uploaded ${file.name}: ${stored.byte_count} bytes (${stored.content_type})`;
      await this.load(true);
    } catch (err) {
      this.info.textContent = errText(err);
    }
  }

  private renderTakes(takes: Take[], loaded: number | null) {
    if (!takes.length) return fill(this.takes, h('li', { class: 'muted' }, 'No take yet.'));
    fill(
      this.takes,
      ...takes.map((t) =>
        h(
          'li',
          { class: `take${t.audio_version === loaded ? ' playing' : ''}`, 'data-version': t.audio_version },
          `take ${t.audio_version} · ${t.state} · ${((t.frames_stored * FRAME_MS) / 1000).toFixed(1)} s stored · `,
          `started ${fmtTime(t.started_at)} `,
          playable(t) &&
            t.audio_version !== loaded &&
            h(
              'button',
              { class: 'link take-play', 'data-version': t.audio_version, onclick: () => this.play(t.audio_version) },
              'play',
            ),
          t.audio_version === loaded && h('strong', {}, '▶ loaded'),
        ),
      ),
    );
  }

  private play(version: number) {
    this.version = version;
    void this.load();
  }
}
