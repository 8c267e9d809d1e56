// The recording panel: start/stop from the microphone, a "drop connection" button that
// simulates a network loss (the tab reconnects and resumes), what this tab knows of the take
// (frames captured, held until durable, resumes, gap uploads) and what the server reports
// (GET /meetings/{id}/recording and the recording event history, newest first).
import type { Api } from '../api';
import { FRAME_MS, rangeFrames } from '@mi/client';
import type { RecordingSession, RecordingSnapshot } from '../recording';
import type { RecordingEvent, RecordingState } from '../types';
import { errText, fill, fmtTime, h } from './dom';

const ranges = (r: [number, number][]) =>
  r.length ? `${r.map(([a, b]) => `${a}–${b}`).join(', ')} (${rangeFrames(r)} frames)` : 'none';
const CAPTURING = ['recording', 'resuming', 'stopping'];
const seconds = (frames: number) => `${((frames * FRAME_MS) / 1000).toFixed(1)} s`;
/**
 * The durable figure, frames_stored on both sides, each with the moment it was taken: the tab's
 * comes with the service's AudioStoredProgressEvent (every RECORDING_PROGRESS_EVERY_FRAMES frames
 * or RECORDING_PROGRESS_INTERVAL_SECONDS), the server column's from GET …/recording (polled every
 * 2 s), so mid-recording the two differ by the frames stored in between.
 */
const durable = (frames: number, at: Date | null) => [
  h('span', { class: 'durable' }, `${seconds(frames)} (${frames} frames)`),
  h('span', { class: 'as-of muted' }, at ? ` as of ${at.toLocaleTimeString()}` : ''),
];
/** The labels say where each figure comes from. */
export const TAB_STORED_LABEL = 'stored (last progress event)';
export const SERVER_STORED_LABEL = 'stored (GET /recording)';
/** Payloads longer than this are folded to one line; a click shows them whole. */
const FOLD_CHARS = 60;

export class RecordingPanel {
  readonly el: HTMLElement;
  private readonly startButton = h('button', { id: 'record-start', class: 'primary' }, '● Start recording');
  private readonly stopButton = h('button', { id: 'record-stop' }, '■ Stop');
  private readonly dropButton = h(
    'button',
    { id: 'record-drop', title: 'Close the WebSocket as a network failure would' },
    'Drop connection',
  );
  private readonly meter = h('meter', { id: 'level', min: 0, max: 8000, value: 0 });
  private readonly local = h('dl', { id: 'rec-local', class: 'stats' });
  private readonly server = h('dl', { id: 'rec-server', class: 'stats' });
  private readonly events = h('tbody', { id: 'rec-events' });
  private readonly message = h('p', { id: 'rec-message', class: 'error' });
  private timer: ReturnType<typeof setTimeout> | null = null;
  private dirty = false;
  private takeSeen = false;

  constructor(
    private readonly api: Api,
    private readonly meetingId: string,
    private readonly session: RecordingSession,
    dropSocket: () => void,
  ) {
    this.startButton.onclick = () =>
      void this.session.start(this.meetingId).catch((err) => (this.message.textContent = errText(err)));
    this.stopButton.onclick = () => this.session.stop();
    this.dropButton.onclick = dropSocket;
    this.el = h(
      'section',
      { class: 'card' },
      h('h3', {}, 'Live recording'),
      h(
        'div',
        { class: 'row' },
        this.startButton,
        this.stopButton,
        this.dropButton,
        h('label', {}, 'level ', this.meter),
      ),
      this.message,
      h(
        'div',
        { class: 'columns' },
        h('div', {}, h('h4', {}, 'This tab'), this.local),
        h('div', {}, h('h4', {}, 'Server'), this.server),
      ),
      h('h4', {}, 'Recording events'),
      h(
        'div',
        { class: 'table-scroll' },
        h(
          'table',
          { class: 'events' },
          h('thead', {}, h('tr', {}, h('th', {}, 'time'), h('th', {}, 'event'), h('th', {}, 'payload'))),
          this.events,
        ),
      ),
    );
    this.update();
  }

  /** Called on every change of the session (up to every frame): at most one render per 100 ms. */
  update() {
    if (this.timer) return void (this.dirty = true);
    this.render(this.session.snapshot);
    this.timer = setTimeout(() => {
      this.timer = null;
      if (this.dirty) {
        this.dirty = false;
        this.update();
      }
    }, 100);
  }

  private stored: { frames: number; at: Date } | null = null;

  /** When the tab's figure last changed (a progress event brought a new frames_stored). */
  private storedAt(frames: number): Date | null {
    if (frames === 0) return null;
    if (this.stored?.frames !== frames) this.stored = { frames, at: new Date() };
    return this.stored.at;
  }

  private render(s: RecordingSnapshot) {
    const ours = s.meetingId === this.meetingId;
    const busy = this.session.active;
    this.startButton.disabled = busy;
    this.stopButton.disabled = !ours || !['recording', 'resuming'].includes(s.phase);
    this.dropButton.disabled = !ours || !busy;
    if (!ours) {
      fill(this.local, ...stat('phase', busy ? 'another meeting is recording in this tab' : 'idle', 'rec-phase'));
      return;
    }
    this.meter.value = s.level;
    this.message.textContent = s.error ?? '';
    fill(
      this.local,
      ...stat('phase', s.phase, 'rec-phase'),
      ...stat(
        'socket',
        s.live ? 'streaming' : CAPTURING.includes(s.phase) ? 'paused: frames are held until the take resumes' : '—',
        'rec-live',
      ),
      ...stat('audio version', s.audioVersion ?? '—', 'rec-version'),
      ...stat('captured', `${s.captured} frames (${seconds(s.captured)})`, 'rec-captured'),
      ...stat(
        TAB_STORED_LABEL,
        [...durable(s.framesStored, this.storedAt(s.framesStored)), ` · highest contiguous #${s.highestContiguous}`],
        'rec-stored',
      ),
      ...stat('held until durable', `${s.unacked} frames`, 'rec-unacked'),
      ...stat('resumes', `${s.resumes} (${s.resent} frames resent)`, 'rec-resumes'),
      ...stat('missing', ranges(s.missingRanges), 'rec-missing'),
      ...stat('stop reason', s.stopReason ?? '—', 'rec-stop-reason'),
      ...stat('server notice', s.notice ?? '—', 'rec-notice'),
      ...stat(
        'gap uploads',
        s.gapUploads.length ? s.gapUploads.map((g) => `${g.start}–${g.end}: ${g.result}`).join('; ') : 'none',
        'rec-gaps',
      ),
    );
  }

  /** Server view: GET /meetings/{id}/recording and the recording events. */
  async refreshServer(): Promise<void> {
    let state: RecordingState | null = null;
    try {
      // GET /recording answers 404 until the first take starts: ask whether one exists first, so
      // the page makes no request that is bound to fail (the browser logs each as an error).
      // Takes are never removed from a live meeting: once one was seen, the question is settled.
      this.takeSeen ||= (await this.api.takes(this.meetingId)).items.length > 0;
      if (this.takeSeen) state = await this.api.recording(this.meetingId);
    } catch (err) {
      return fill(this.server, ...stat('error', errText(err), 'server-error'));
    }
    if (!state) {
      fill(this.server, ...stat('state', 'no recording yet', 'server-state'));
    } else {
      fill(
        this.server,
        ...stat('state', state.state, 'server-state'),
        ...stat('audio version', state.audio_version, 'server-version'),
        ...stat(SERVER_STORED_LABEL, durable(state.frames_stored, new Date()), 'server-stored'),
        ...stat(
          'contiguous',
          `${seconds(state.highest_contiguous_sequence + 1)} (#${state.highest_contiguous_sequence})`,
          'server-hcs',
        ),
        ...stat('missing', ranges(state.missing_ranges), 'server-missing'),
        ...stat('gap deadline', fmtTime(state.gap_upload_deadline), 'server-deadline'),
        ...stat('stop reason', state.stop_reason ?? '—', 'server-stop-reason'),
      );
    }
    try {
      const { items } = await this.api.recordingEvents(this.meetingId);
      this.renderEvents(items);
    } catch (err) {
      fill(this.events, h('tr', {}, h('td', { colspan: 3, class: 'error' }, errText(err))));
    }
  }

  private renderEvents(items: RecordingEvent[]) {
    if (!items.length) return fill(this.events, h('tr', {}, h('td', { colspan: 3, class: 'muted' }, 'none yet')));
    fill(
      this.events,
      ...items.map((e) =>
        h(
          'tr',
          { class: 'rec-event', 'data-type': e.event_type },
          h('td', {}, new Date(e.created_at).toLocaleTimeString()),
          h('td', {}, e.event_type),
          h('td', { class: 'payload' }, payload(e.payload)),
        ),
      ),
    );
  }
}

function stat(label: string, value: string | number | (Node | string)[], id: string): HTMLElement[] {
  return [h('dt', {}, label), h('dd', { id }, ...(Array.isArray(value) ? value : [String(value)]))];
}

/** A short payload as one line; a long one folded to its first characters, whole (indented) when opened. */
function payload(value: unknown): Node | string {
  if (value === null || value === undefined) return '';
  const line = JSON.stringify(value);
  if (line.length <= FOLD_CHARS) return line;
  return h(
    'details',
    { class: 'payload-fold' },
    h('summary', {}, `${line.slice(0, FOLD_CHARS)}…`),
    h('pre', {}, JSON.stringify(value, null, 2)),
  );
}
