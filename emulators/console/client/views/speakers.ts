// Speaker labels of the transcript: assign one to an existing person or to a new one
// (POST /people, then POST /meetings/{id}/speaker-labels, which relabels every segment and makes
// their embeddings voice samples of the person), remove an assignment (DELETE
// /meetings/{id}/speaker-labels/{label}: the segments lose the person, the samples go), and show
// the voice samples behind an assigned person's model (GET /people/{id}/voice-samples).
// Unassigned labels show the people whose voice is closest (GET /meetings/{id}/speaker-labels'
// suggestions; one click assigns), and an assigned person can absorb a duplicate (POST
// /people/{id}/merge).
import { ApiProblem, type Api } from '../api';
import type { Person } from '../types';
import { errText, fill, fmtTime, h } from './dom';

export class SpeakersPane {
  readonly el: HTMLElement;
  private readonly body = h('div', { id: 'speakers' });
  private readonly message = h('p', { id: 'speaker-message', class: 'muted' });
  private readonly samples = h('div', { id: 'voice-samples' });
  /** Whose samples are shown, so a re-render after an event refreshes them. */
  private shownPerson: string | null = null;
  /** Each unassigned label's place for suggestions, and how to assign it. */
  private suggestionSlots = new Map<string, { slot: HTMLElement; assignTo: (personId: string) => Promise<string> }>();

  constructor(
    private readonly api: Api,
    private readonly meetingId: string,
    private readonly onAssigned: () => Promise<void>,
  ) {
    this.el = h('section', { class: 'card' }, h('h3', {}, 'Speakers'), this.body, this.message, this.samples);
  }

  render(labels: Map<string, string | null>, people: Person[]) {
    if (this.shownPerson) void this.showSamples(people.find((p) => p.id === this.shownPerson));
    if (!labels.size) return fill(this.body, h('p', { class: 'muted' }, 'Speaker labels appear with the transcript.'));
    const byId = new Map(people.map((p) => [p.id, p]));
    this.suggestionSlots.clear();
    fill(
      this.body,
      ...[...labels].map(([label, personId]) => this.row(label, personId ? byId.get(personId) : undefined, people)),
    );
    void this.showSuggestions();
  }

  /** Beside each unassigned label, the people whose voice is closest: a click assigns one. */
  private async showSuggestions() {
    if (!this.suggestionSlots.size) return;
    const slots = this.suggestionSlots;
    let items: Awaited<ReturnType<Api['speakerLabels']>>['items'];
    try {
      ({ items } = await this.api.speakerLabels(this.meetingId));
    } catch (err) {
      this.message.textContent = errText(err);
      return;
    }
    for (const { speaker_label: label, suggestions } of items) {
      const target = slots.get(label);
      if (!target || !suggestions.length) continue;
      const buttons = suggestions.map((s) => {
        const attrs = { class: 'speaker-suggestion', 'data-label': label, 'data-person': s.person_id };
        const b = h('button', attrs, `${s.display_name} (${s.similarity.toFixed(2)})`);
        b.onclick = async () => {
          b.disabled = true;
          try {
            this.message.textContent = await target.assignTo(s.person_id);
          } catch (err) {
            this.message.textContent = errText(err);
            b.disabled = false;
          }
        };
        return b;
      });
      fill(target.slot, 'sounds like: ', ...buttons);
    }
  }

  private row(label: string, current: Person | undefined, people: Person[]) {
    const select = h(
      'select',
      { class: 'speaker-person', 'data-label': label },
      h('option', { value: '' }, 'new person…'),
      ...people.map((p) => h('option', { value: p.id }, p.display_name)),
    );
    const name = h('input', { class: 'speaker-new-name', 'data-label': label, placeholder: 'name of a new person' });
    select.onchange = () => (name.hidden = select.value !== '');
    const act = (cls: string, text: string, run: () => Promise<string | null>) => {
      const button = h('button', { class: cls, 'data-label': label }, text);
      button.onclick = async () => {
        button.disabled = true;
        try {
          const said = await run(); // null: run filled the message itself
          if (said !== null) this.message.textContent = said;
        } catch (err) {
          this.message.textContent = errText(err);
        } finally {
          button.disabled = false;
        }
      };
      return button;
    };
    const assignTo = async (personId: string) => {
      const { updated_count } = await this.api.assignSpeaker(this.meetingId, label, personId);
      await this.onAssigned();
      return `${label}: ${updated_count} segments attributed`;
    };
    const assign = act('speaker-assign', 'Assign', async () => {
      if (select.value) return assignTo(select.value);
      const wanted = name.value.trim();
      try {
        return await assignTo((await this.api.createPerson(wanted)).id);
      } catch (err) {
        // display_name is unique per user: a 409 means the person exists; offer them instead.
        if (!(err instanceof ApiProblem && err.status === 409)) throw err;
        const existing = await this.api.personNamed(wanted);
        if (!existing) throw err;
        this.offerExisting(label, existing, assignTo);
        return null;
      }
    });
    const unassign =
      current &&
      act('speaker-unassign', 'Unassign', async () => {
        await this.api.unassignSpeaker(this.meetingId, label);
        await this.onAssigned();
        return `${label}: assignment removed; its segments no longer shape ${current.display_name}'s voice`;
      });
    const samples =
      current &&
      act(
        'speaker-samples',
        'Voice samples',
        async () => ((this.shownPerson = current.id), await this.showSamples(current), ''),
      );
    const suggestions = h('span', { class: 'speaker-suggestions muted', 'data-label': label });
    if (!current) this.suggestionSlots.set(label, { slot: suggestions, assignTo });
    // A duplicate of the assigned person (say, created for another meeting) merges into them.
    const others = current ? people.filter((p) => p.id !== current.id) : [];
    const mergeFrom = others.length
      ? h(
          'select',
          { class: 'speaker-merge-from', 'data-label': label },
          ...others.map((p) => h('option', { value: p.id }, p.display_name)),
        )
      : null;
    const merge =
      current &&
      mergeFrom &&
      act('speaker-merge', `Merge into ${current.display_name}`, async () => {
        const other = others.find((p) => p.id === mergeFrom.value)!;
        await this.api.mergePeople(current.id, other.id);
        await this.onAssigned();
        const into = current.display_name;
        return `${other.display_name} merged into ${into}: their segments, samples, tasks and notes are now ${into}'s`;
      });
    return h(
      'div',
      { class: 'speaker row', 'data-label': label },
      h('strong', {}, label),
      h(
        'span',
        { class: 'speaker-current' },
        current ? `→ ${current.display_name} (voice ${current.voice_model_status})` : '→ unassigned',
      ),
      select,
      name,
      assign,
      unassign,
      samples,
      mergeFrom,
      merge,
      suggestions,
    );
  }

  /** After a 409 on a new person's name: a button that assigns the person who has that name. */
  private offerExisting(label: string, person: Person, assignTo: (id: string) => Promise<string>) {
    const use = h(
      'button',
      { class: 'speaker-use-existing', 'data-label': label },
      `Use the existing ${person.display_name}`,
    );
    use.onclick = async () => {
      use.disabled = true;
      try {
        fill(this.message, await assignTo(person.id));
      } catch (err) {
        fill(this.message, errText(err));
        use.disabled = false;
      }
    };
    fill(
      this.message,
      `A person named “${person.display_name}” already exists (voice ${person.voice_model_status}). `,
      use,
    );
  }

  /** The person's voice samples, newest first (the first page). */
  private async showSamples(person: Person | undefined) {
    if (!person) {
      this.shownPerson = null;
      return fill(this.samples);
    }
    try {
      const { items, next_cursor } = await this.api.voiceSamples(person.id);
      const confidence = person.voice_confidence === null ? '' : `, confidence ${person.voice_confidence.toFixed(3)}`;
      fill(
        this.samples,
        h('h4', {}, `Voice samples of ${person.display_name} (voice ${person.voice_model_status}${confidence})`),
        items.length
          ? h(
              'ul',
              { id: 'voice-sample-list' },
              ...items.map((s) =>
                h(
                  'li',
                  { class: 'voice-sample', 'data-segment': s.segment_id },
                  `${s.speaker_label ?? '(no label)'} · meeting `,
                  h('code', {}, s.meeting_id === this.meetingId ? 'this one' : s.meeting_id.slice(0, 8)),
                  ` · segment `,
                  h('code', {}, s.segment_id.slice(0, 8)),
                  ` · ${fmtTime(s.created_at)}`,
                ),
              ),
            )
          : h('p', { class: 'muted', id: 'voice-samples-empty' }, 'No samples: the voice model is untrained.'),
        next_cursor && h('p', { class: 'muted' }, 'showing the newest 50'),
      );
    } catch (err) {
      fill(this.samples, h('p', { class: 'muted' }, errText(err)));
    }
  }
}
