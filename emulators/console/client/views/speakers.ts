// Speaker labels of the transcript: assign one to an existing person or to a new one
// (POST /people, then POST /meetings/{id}/speaker-labels, which relabels every segment and
// trains the person's voice model).
import type { Api } from '../api';
import type { Person } from '../types';
import { errText, fill, h } from './dom';

export class SpeakersPane {
  readonly el: HTMLElement;
  private readonly body = h('div', { id: 'speakers' });
  private readonly message = h('p', { id: 'speaker-message', class: 'muted' });

  constructor(
    private readonly api: Api,
    private readonly meetingId: string,
    private readonly onAssigned: () => Promise<void>,
  ) {
    this.el = h('section', { class: 'card' }, h('h3', {}, 'Speakers'), this.body, this.message);
  }

  render(labels: Map<string, string | null>, people: Person[]) {
    if (!labels.size) return fill(this.body, h('p', { class: 'muted' }, 'Speaker labels appear with the transcript.'));
    const byId = new Map(people.map((p) => [p.id, p]));
    fill(this.body, ...[...labels].map(([label, personId]) => this.row(label, personId ? byId.get(personId) : undefined, people)));
  }

  private row(label: string, current: Person | undefined, people: Person[]) {
    const select = h('select', { class: 'speaker-person', 'data-label': label }, h('option', { value: '' }, 'new person…'), ...people.map((p) => h('option', { value: p.id }, p.display_name)));
    const name = h('input', { class: 'speaker-new-name', 'data-label': label, placeholder: 'name of a new person' });
    select.onchange = () => (name.hidden = select.value !== '');
    const assign = h('button', {
      class: 'speaker-assign',
      'data-label': label,
      onclick: async () => {
        assign.disabled = true;
        try {
          const personId = select.value || (await this.api.createPerson(name.value.trim())).id;
          const { updated_count } = await this.api.assignSpeaker(this.meetingId, label, personId);
          this.message.textContent = `${label}: ${updated_count} segments attributed`;
          await this.onAssigned();
        } catch (err) {
          this.message.textContent = errText(err);
        } finally {
          assign.disabled = false;
        }
      },
    }, 'Assign');
    return h(
      'div',
      { class: 'speaker row', 'data-label': label },
      h('strong', {}, label),
      h('span', { class: 'speaker-current' }, current ? `→ ${current.display_name} (voice ${current.voice_model_status})` : '→ unassigned'),
      select,
      name,
      assign,
    );
  }
}
