// Live transcript: final segments by start time (a segment event and a refetch may both bring
// one: kept once by id), plus the latest interim segment in italics until a final replaces it.
// An editor opened on a segment stays in its row across re-renders (events keep arriving).
import type { Segment } from '../types';
import { fill, fmtMs, h } from './dom';

export class TranscriptPane {
  readonly el: HTMLElement;
  private readonly list = h('ol', { id: 'transcript', class: 'transcript' });
  private readonly count = h('span', { id: 'segment-count', class: 'muted' }, '0');
  private segments = new Map<string, Segment>();
  private interim: Segment | null = null;
  private names = new Map<string, string>();
  private editing: { id: string; el: HTMLElement } | null = null;

  /** `edit(segment, labels)` makes an editor for a final segment (views/segment-editor.ts). */
  constructor(private readonly edit?: (segment: Segment, labels: string[]) => HTMLElement) {
    this.el = h('section', { class: 'card' }, h('h3', {}, 'Transcript ', this.count), this.list);
    this.render();
  }

  reset(segments: Segment[]) {
    this.segments = new Map(segments.filter((s) => s.is_final).map((s) => [s.id, s]));
    if (this.editing && !this.segments.has(this.editing.id)) this.editing = null;
    this.interim = null;
    this.render();
  }

  add(segment: Segment) {
    if (segment.is_final) {
      this.segments.set(segment.id, segment);
      this.interim = null;
    } else {
      this.interim = segment;
    }
    this.render();
  }

  /** Closes the editor; `segment` is the segment as the server now has it (an edit saved here). */
  closeEditor(segment?: Segment) {
    this.editing = null;
    if (segment && this.segments.has(segment.id)) this.segments.set(segment.id, segment);
    this.render();
  }

  setPeople(names: Map<string, string>) {
    this.names = names;
    this.render();
  }

  /** Distinct speaker labels, and the person each is currently attributed to. */
  labels(): Map<string, string | null> {
    const out = new Map<string, string | null>();
    for (const s of this.sorted())
      if (s.speaker_label) out.set(s.speaker_label, s.person_id ?? out.get(s.speaker_label) ?? null);
    return out;
  }

  private sorted() {
    return [...this.segments.values()].sort((a, b) => a.start_ms - b.start_ms || a.id.localeCompare(b.id));
  }

  private render() {
    const all = this.sorted();
    this.count.textContent = String(all.length);
    const open = (s: Segment) => {
      this.editing = { id: s.id, el: this.edit!(s, [...this.labels().keys()]) };
      this.render();
    };
    const row = (s: Segment, cls: string) => {
      const edit =
        s.is_final &&
        this.edit &&
        h(
          'button',
          { class: 'link segment-edit-open', title: 'edit the text or speaker', onclick: () => open(s) },
          'edit',
        );
      const body =
        this.editing?.id === s.id ? this.editing.el : h('span', {}, h('span', { class: 'text' }, s.text), ' ', edit);
      return h(
        'li',
        { class: cls, 'data-id': s.id },
        h('span', { class: 'time' }, fmtMs(s.start_ms)),
        h('span', { class: 'speaker' }, (s.person_id && this.names.get(s.person_id)) || s.speaker_label || '?'),
        body,
      );
    };
    if (!all.length && !this.interim) return fill(this.list, h('li', { class: 'muted' }, 'No transcript yet.'));
    fill(this.list, ...all.map((s) => row(s, 'segment')), this.interim && row(this.interim, 'segment interim'));
    if (!this.editing) this.list.scrollTop = this.list.scrollHeight;
  }
}
