// One open meeting: its details, the recording panel, transcript, insights, speakers and
// audio. Loads everything over REST on open and keeps it current from WebSocket events.
import type { Api } from '../api';
import type { RecordingSession } from '../recording';
import type { Meeting, Person, ServerMessage, Segment, TalkingPoint, Transcription } from '../types';
import { AudioPane } from './audio';
import { errText, fill, fmtTime, h } from './dom';
import { ExportBar } from './export';
import { InsightsPane } from './insights';
import { RecordingPanel } from './recording-panel';
import { SegmentEditor } from './segment-editor';
import { SpeakersPane } from './speakers';
import { TranscriptPane } from './transcript';

const SERVER_REFRESH_MS = 2_000;

export class MeetingView {
  readonly el: HTMLElement;
  private readonly header = h('div', { id: 'meeting-header' });
  private readonly transcript: TranscriptPane;
  private readonly exports: ExportBar;
  private readonly insights: InsightsPane;
  private readonly speakers: SpeakersPane;
  private readonly audio: AudioPane;
  private readonly recording: RecordingPanel | null = null;
  readonly meetingId: string;
  private transcription: Transcription | null = null;
  /** Every transcription of the meeting, oldest first; the newest is shown unless one was chosen. */
  private transcriptions: Transcription[] = [];
  private chosen: string | null = null;
  private people: Person[] = [];
  private timer: ReturnType<typeof setInterval> | null = null;

  constructor(
    private readonly api: Api,
    private meeting: Meeting,
    private readonly session: RecordingSession,
    dropSocket: () => void,
    taskCadenceSegments: number,
  ) {
    const meetingId = (this.meetingId = meeting.id);
    const editor = new SegmentEditor(api, (end) => {
      this.transcript.closeEditor(typeof end === 'object' ? end.saved : undefined);
      // A moved segment may change the labels; after a 412 the transcript is read again.
      if (end === 'reload') void this.reloadSegments();
      else this.renderSpeakers();
    });
    this.transcript = new TranscriptPane((segment, labels) => editor.open(segment, labels));
    this.exports = new ExportBar(api);
    this.insights = new InsightsPane(taskCadenceSegments);
    this.speakers = new SpeakersPane(api, meetingId, () => this.reloadAfterAssign());
    this.audio = new AudioPane(api, meeting);
    if (meeting.source_type === 'recording') this.recording = new RecordingPanel(api, meetingId, session, dropSocket);
    this.el = h(
      'div',
      { class: 'meeting', 'data-id': meetingId },
      h('section', { class: 'card' }, this.header, this.exports.el),
      h(
        'div',
        { class: 'columns' },
        h('div', {}, this.recording?.el, this.audio.el),
        h('div', {}, this.transcript.el, this.speakers.el, this.insights.el),
      ),
    );
    // The server's view of a recording changes without events for every step: poll it while the tab records.
    this.timer = setInterval(() => {
      if (this.session.active && this.session.snapshot.meetingId === meetingId) void this.recording?.refreshServer();
    }, SERVER_REFRESH_MS);
    this.renderHeader();
    this.recordingChanged();
  }

  async load(): Promise<void> {
    try {
      const [transcriptions, points, tasks, people] = await Promise.all([
        this.api.transcriptions(this.meetingId),
        this.api.talkingPoints(this.meetingId),
        this.api.tasks(this.meetingId),
        this.api.people(),
      ]);
      this.pick(transcriptions.items);
      this.people = people.items;
      this.insights.setTalkingPoints(points.items);
      this.insights.setTasks(tasks.items);
      await this.reloadSegments();
      this.renderHeader();
    } catch (err) {
      fill(this.header, h('p', { class: 'error' }, errText(err)));
    }
    await this.recording?.refreshServer();
    await this.audio.load();
  }

  close() {
    if (this.timer) clearInterval(this.timer);
  }

  /** The recording session changed (possibly for another meeting). */
  recordingChanged() {
    this.recording?.update();
    const s = this.session.snapshot;
    this.insights.setRecording(
      s.meetingId === this.meetingId && ['starting', 'recording', 'resuming'].includes(s.phase),
    );
  }

  async recordingFinalized() {
    await Promise.all([this.recording?.refreshServer(), this.audio.load(), this.refreshTranscription()]);
  }

  /** A WebSocket event of this user. */
  onEvent(msg: ServerMessage) {
    if (msg.meeting_id !== undefined && msg.meeting_id !== null && msg.meeting_id !== this.meetingId) return;
    switch (msg.type) {
      case 'TranscriptSegmentEvent': {
        const segment = msg.segment as Segment;
        if (!this.transcription || this.transcription.id !== msg.transcription_id) void this.refreshTranscription();
        if (!this.chosen || this.chosen === msg.transcription_id) this.transcript.add(segment);
        this.renderSpeakers();
        break;
      }
      case 'TalkingPointEvent':
        this.insights.addTalkingPoint(msg.talking_point as TalkingPoint);
        break;
      case 'RecordingStarted':
      case 'RecordingStopped':
      case 'RecordingResumed':
        void this.recording?.refreshServer();
        void this.refreshTranscription();
        break;
      case 'EntityChanged':
        void this.onEntityChanged(String(msg.entity));
        break;
    }
  }

  private async onEntityChanged(entity: string) {
    if (entity === 'task') this.insights.setTasks((await this.api.tasks(this.meetingId)).items);
    else if (entity === 'talking_point')
      this.insights.setTalkingPoints((await this.api.talkingPoints(this.meetingId)).items);
    else if (entity === 'transcript_segment' || entity === 'transcription') await this.refreshTranscription();
    else if (entity === 'person') await this.reloadPeople();
    else if (entity === 'recording') await this.recording?.refreshServer();
    else if (entity === 'meeting') {
      this.meeting = await this.api.getMeeting(this.meetingId);
      this.renderHeader();
      await this.recording?.refreshServer();
    }
  }

  private async refreshTranscription() {
    this.pick((await this.api.transcriptions(this.meetingId)).items);
    await this.reloadSegments();
    this.renderHeader();
  }

  private pick(items: Transcription[]) {
    this.transcriptions = items;
    this.transcription = items.find((t) => t.id === this.chosen) ?? items[items.length - 1] ?? null;
  }

  /** With more than one transcription (a batch pass, several takes), any can be shown. */
  private transcriptionChooser() {
    if (this.transcriptions.length < 2) return null;
    const select = h(
      'select',
      { id: 'transcription-select', 'aria-label': 'transcription' },
      ...this.transcriptions.map((t, i) =>
        h(
          'option',
          { value: t.id, selected: t.id === this.transcription?.id },
          `#${i + 1} ${t.status} · ${fmtTime(t.created_at)}`,
        ),
      ),
    );
    select.addEventListener('change', () => {
      this.chosen = select.value;
      this.pick(this.transcriptions);
      void this.reloadSegments().then(() => this.renderHeader());
    });
    return h('p', {}, 'Transcription ', select);
  }

  private async reloadSegments() {
    this.transcript.reset(this.transcription ? (await this.api.segments(this.transcription.id)).items : []);
    this.renderSpeakers();
  }

  private async reloadPeople() {
    this.people = (await this.api.people()).items;
    this.renderSpeakers();
  }

  private async reloadAfterAssign() {
    await Promise.all([this.reloadPeople(), this.reloadSegments()]);
  }

  private renderSpeakers() {
    this.transcript.setPeople(new Map(this.people.map((p) => [p.id, p.display_name])));
    this.speakers.render(this.transcript.labels(), this.people);
  }

  private renderHeader() {
    const m = this.meeting;
    const t = this.transcription;
    this.exports.show(t?.id ?? null);
    fill(
      this.header,
      h('h2', { id: 'meeting-title' }, m.title),
      h('p', { class: 'muted' }, `${m.source_type} · started ${fmtTime(m.start_time)} · `, h('code', {}, m.id)),
      this.transcriptionChooser(),
      t &&
        h(
          'p',
          { id: 'transcription-status' },
          `transcription ${t.status}${t.is_degraded ? ' (degraded: audio is missing)' : ''}`,
        ),
      m.headline && h('p', { class: 'headline' }, m.headline),
      m.summary && h('p', {}, m.summary),
    );
  }
}
