// Live transcript: final segments by start time (a segment event and a refetch may both bring
// one: kept once by id), plus the latest interim segment in italics until a final replaces it.
import type { Segment } from '../types';
import { fill, fmtMs, h } from './dom';

export class TranscriptPane {
  readonly el: HTMLElement;
  private readonly list = h('ol', { id: 'transcript', class: 'transcript' });
  private readonly count = h('span', { id: 'segment-count', class: 'muted' }, '0');
  private segments = new Map<string, Segment>();
  private interim: Segment | null = null;
  private names = new Map<string, string>();

  /** `edit(segment, textEl)` opens an editor on a final segment's text (views/segment-editor.ts). */
  constructor(private readonly edit?: (segment: Segment, textEl: HTMLElement) => void) {
    this.el = h('section', { class: 'card' }, h('h3', {}, 'Transcript ', this.count), this.list);
    this.render();
  }

  reset(segments: Segment[]) {
    this.segments = new Map(segments.filter((s) => s.is_final).map((s) => [s.id, s]));
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

  /** A segment as the server now has it (an edit saved here). */
  replace(segment: Segment) {
    if (this.segments.has(segment.id)) this.segments.set(segment.id, segment);
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
    const row = (s: Segment, cls: string) => {
      const text = h('span', { class: 'text' }, s.text);
      const edit =
        s.is_final &&
        this.edit &&
        h(
          'button',
          { class: 'link segment-edit-open', title: 'edit the text', onclick: () => this.edit!(s, text) },
          'edit',
        );
      return h(
        'li',
        { class: cls, 'data-id': s.id },
        h('span', { class: 'time' }, fmtMs(s.start_ms)),
        h('span', { class: 'speaker' }, (s.person_id && this.names.get(s.person_id)) || s.speaker_label || '?'),
        h('span', {}, text, ' ', edit),
      );
    };
    if (!all.length && !this.interim) return fill(this.list, h('li', { class: 'muted' }, 'No transcript yet.'));
    fill(this.list, ...all.map((s) => row(s, 'segment')), this.interim && row(this.interim, 'segment interim'));
    this.list.scrollTop = this.list.scrollHeight;
  }
}
