// The meeting list (newest first, "more" pages through next_cursor) and the create form.
import type { Api } from '../api';
import type { Meeting } from '../types';
import { errText, fill, fmtTime, h } from './dom';

export class MeetingsList {
  readonly el: HTMLElement;
  private readonly list = h('ul', { id: 'meetings', class: 'meetings' });
  private readonly more = h(
    'button',
    { id: 'meetings-more', class: 'link', hidden: true, onclick: () => this.load(true) },
    'More…',
  );
  private readonly error = h('p', { class: 'error' });
  private items: Meeting[] = [];
  private cursor: string | null = null;
  private selected: string | null = null;

  constructor(
    private readonly api: Api,
    private readonly onOpen: (id: string) => void,
  ) {
    const title = h('input', {
      id: 'new-meeting-title',
      placeholder: 'Title',
      value: `Session ${new Date().toLocaleTimeString()}`,
    });
    const type = h(
      'select',
      { id: 'new-meeting-type' },
      ...['recording', 'upload', 'text', 'anecdotal'].map((t) => h('option', { value: t }, t)),
    );
    const create = h(
      'button',
      {
        id: 'create-meeting',
        onclick: async () => {
          create.disabled = true;
          try {
            const m = await api.createMeeting(title.value.trim() || 'Untitled', type.value);
            await this.load(false);
            this.select(m.id);
          } catch (err) {
            this.error.textContent = errText(err);
          } finally {
            create.disabled = false;
          }
        },
      },
      'Create',
    );
    this.el = h(
      'section',
      { class: 'card meetings-card' },
      h('h2', {}, 'Meetings'),
      h('div', { class: 'create' }, title, h('div', { class: 'row' }, type, create)),
      this.error,
      this.list,
      this.more,
    );
  }

  async load(append: boolean): Promise<void> {
    try {
      const page = await this.api.listMeetings(append ? this.cursor : null);
      this.items = append ? [...this.items, ...page.items] : page.items;
      this.cursor = page.next_cursor;
      this.error.textContent = '';
    } catch (err) {
      this.error.textContent = errText(err);
    }
    this.render();
  }

  select(id: string): void {
    this.onOpen(id);
  }

  /** Highlights the open meeting (null: none). */
  mark(id: string | null): void {
    this.selected = id;
    this.render();
  }

  private render() {
    this.more.hidden = !this.cursor;
    if (!this.items.length) return fill(this.list, h('li', { class: 'muted' }, 'No meetings yet: create one.'));
    fill(
      this.list,
      ...this.items.map((m) =>
        h(
          'li',
          {},
          h(
            'button',
            {
              class: `meeting-item${m.id === this.selected ? ' selected' : ''}`,
              'data-id': m.id,
              onclick: () => this.select(m.id),
            },
            h('span', { class: 'title' }, m.title),
            h('span', { class: 'meta' }, `${m.source_type} · ${fmtTime(m.start_time)}`),
          ),
        ),
      ),
    );
  }
}
