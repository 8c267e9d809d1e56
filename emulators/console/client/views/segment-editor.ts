// Correcting a segment in place: its text, and its speaker (moved to another label of the meeting)
// with PATCH /transcript-segments/{id}. The editor asks for the segment's ETag when it opens and
// sends it as If-Match, so an edit made elsewhere meanwhile is not overwritten: the server answers
// 412 and the editor says so, with a reload.
import { ApiProblem, type Api } from '../api';
import type { Segment } from '../types';
import { errText, fill, h } from './dom';

/** How an edit ended: saved (the segment as the server has it), cancelled, or lost to a change elsewhere (412). */
export type EditEnd = { saved: Segment } | 'cancelled' | 'reload';

export class SegmentEditor {
  constructor(
    private readonly api: Api,
    private readonly onDone: (end: EditEnd) => void,
  ) {}

  /** An editor for the segment's text and speaker label (one of `labels`, the meeting's). */
  open(segment: Segment, labels: string[]): HTMLElement {
    const opened = this.api.segment(segment.id);
    const input = h('input', { class: 'segment-edit', value: segment.text, 'aria-label': 'segment text' });
    const current = segment.speaker_label ?? '';
    const speaker = h(
      'select',
      { class: 'segment-speaker', 'aria-label': 'speaker label' },
      ...[...new Set([current, ...labels])]
        .filter(Boolean)
        .map((l) => h('option', { value: l, selected: l === current }, l)),
    );
    const message = h('span', { class: 'error segment-message' });
    const save = async () => {
      const patch = {
        ...(input.value !== segment.text ? { text: input.value } : {}),
        ...(speaker.value && speaker.value !== current ? { speaker_label: speaker.value } : {}),
      };
      if (!Object.keys(patch).length) return this.onDone('cancelled');
      try {
        const { etag } = await opened;
        this.onDone({ saved: (await this.api.updateSegment(segment.id, patch, etag)).segment });
      } catch (err) {
        if (!(err instanceof ApiProblem && err.status === 412)) return void (message.textContent = errText(err));
        fill(
          message,
          'Changed elsewhere, reload. ',
          h('button', { class: 'link segment-reload', onclick: () => this.onDone('reload') }, 'reload'),
        );
      }
    };
    input.addEventListener('keydown', (e) => e.key === 'Enter' && void save());
    queueMicrotask(() => input.focus());
    const el = h(
      'span',
      { class: 'segment-editor' },
      input,
      speaker,
      h('button', { class: 'segment-save', onclick: () => void save() }, 'Save'),
      h('button', { class: 'link segment-cancel', onclick: () => this.onDone('cancelled') }, 'Cancel'),
      message,
    );
    // data-etag: the version this edit applies to is known (a test waits for it).
    opened.then(
      ({ etag }) => el.setAttribute('data-etag', etag ?? ''),
      () => undefined,
    );
    return el;
  }
}
