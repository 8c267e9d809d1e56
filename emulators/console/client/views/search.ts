// Search over everything of the user (GET /search): a query, the sort (best or newest first),
// the results with their marked snippets, and "more" while next_cursor says there is more.
// A result opens its meeting. The snippet is HTML the server escaped, with only <mark> added.
import type { Api } from '../api';
import { errText, fill, fmtMs, fmtTime, h } from './dom';

type Sort = 'relevance' | 'recent';
type Hit = Awaited<ReturnType<Api['search']>>['items'][number];

export class SearchPane {
  readonly el: HTMLElement;
  private readonly input = h('input', {
    id: 'search-q',
    type: 'search',
    placeholder: 'search everything',
    'aria-label': 'search',
  });
  private readonly sort = h(
    'select',
    { id: 'search-sort', 'aria-label': 'sort' },
    h('option', { value: 'relevance' }, 'best first'),
    h('option', { value: 'recent' }, 'newest first'),
  );
  private readonly results = h('ol', { id: 'search-results', class: 'search-results' });
  private readonly more = h('button', { id: 'search-more', class: 'link', hidden: true }, 'more');
  private cursor: string | null = null;
  private query: { q: string; sort: Sort } | null = null;

  constructor(
    private readonly api: Api,
    private readonly openMeeting: (id: string) => void,
  ) {
    const form = h(
      'form',
      { id: 'search-form', class: 'row' },
      this.input,
      this.sort,
      h('button', { type: 'submit' }, 'Search'),
    );
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      void this.run();
    });
    this.sort.addEventListener('change', () => this.input.value.trim() && void this.run());
    this.more.addEventListener('click', () => void this.page());
    this.el = h('section', { class: 'card', id: 'search' }, h('h3', {}, 'Search'), form, this.results, this.more);
  }

  private async run() {
    const q = this.input.value.trim();
    if (!q) return;
    this.query = { q, sort: this.sort.value as Sort };
    this.cursor = null;
    fill(this.results);
    await this.page();
  }

  private async page() {
    if (!this.query) return;
    try {
      const { items, next_cursor } = await this.api.search(this.query.q, this.query.sort, this.cursor);
      this.cursor = next_cursor;
      if (!items.length && !this.results.childElementCount)
        fill(this.results, h('li', { class: 'muted' }, 'Nothing found.'));
      this.results.append(...items.map((hit) => this.row(hit)));
    } catch (err) {
      fill(this.results, h('li', { class: 'error' }, errText(err)));
      this.cursor = null;
    }
    this.more.hidden = !this.cursor;
  }

  private row(hit: Hit) {
    const snippet = h('span', { class: 'snippet' });
    snippet.innerHTML = hit.snippet; // escaped by the server; only <mark> is markup
    const where = [
      hit.kind.replace('_', ' '),
      fmtTime(hit.start_time),
      hit.start_ms === undefined ? '' : `at ${fmtMs(hit.start_ms)}`,
    ]
      .filter(Boolean)
      .join(' · ');
    return h(
      'li',
      { class: 'search-hit', 'data-kind': hit.kind, 'data-id': hit.id },
      hit.meeting_id
        ? h(
            'a',
            {
              href: `#/meetings/${hit.meeting_id}`,
              onclick: (e: Event) => (e.preventDefault(), this.openMeeting(hit.meeting_id!)),
            },
            snippet,
          )
        : snippet,
      h('span', { class: 'muted' }, ` ${where} · rank ${hit.rank.toFixed(3)}`),
    );
  }
}
