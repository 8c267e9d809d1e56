// Correcting a segment's text in place (PATCH /transcript-segments/{id}). The ETag the server
// answered is kept per segment and sent as If-Match next time, so an edit made elsewhere
// meanwhile is not overwritten: the server answers 412 and the row says so, with a reload.
import { ApiProblem, type Api } from '../api';
import type { Segment } from '../types';
import { errText, fill, h } from './dom';

export class SegmentEditor {
  private readonly etags = new Map<string, string>();

  constructor(
    private readonly api: Api,
    /** The segment as saved (to show it), or null after a 412 (to reload the transcript). */
    private readonly onDone: (segment: Segment | null) => void,
  ) {}

  /** Replaces `textEl`'s content with an editor for the segment's text. */
  open(segment: Segment, textEl: HTMLElement) {
    const input = h('input', { class: 'segment-edit', value: segment.text, 'aria-label': 'segment text' });
    const message = h('span', { class: 'error' });
    const save = async () => {
      try {
        const { segment: saved, etag } = await this.api.updateSegmentText(
          segment.id,
          input.value,
          this.etags.get(segment.id) ?? null,
        );
        if (etag) this.etags.set(segment.id, etag);
        this.onDone(saved);
      } catch (err) {
        if (err instanceof ApiProblem && err.status === 412) {
          this.etags.delete(segment.id);
          fill(
            message,
            'Changed elsewhere, reload. ',
            h('button', { class: 'link segment-reload', onclick: () => this.onDone(null) }, 'reload'),
          );
        } else {
          message.textContent = errText(err);
        }
      }
    };
    input.addEventListener('keydown', (e) => e.key === 'Enter' && void save());
    fill(
      textEl,
      input,
      h('button', { class: 'segment-save', onclick: () => void save() }, 'Save'),
      h('button', { class: 'link', onclick: () => this.onDone(segment) }, 'Cancel'),
      message,
    );
    input.focus();
  }
}
