// Full-text search over the caller's transcript segments, notes, talking points and meeting
// titles (GET /search). Each kind has a tsvector column (kept by trigger) with a GIN index
// (schema/schema.sql); one statement ranks the four kinds together, best first.
//
// Text search configuration: 'english'. Transcripts and notes are English prose in this
// product, and stemming is what people expect of a search box ("decided" finds "deciding",
// "meetings" finds "meeting"; "decision" is another stem); stop words ("the", "and") are dropped, which keeps the indexes
// small and a query of "the plan" from matching every segment. The price: words of other
// languages are stemmed by English rules, and a query of only stop words matches nothing.
//
// Order (decisions.md section 7). sort=relevance: rank DESC, then kind, then id; rank is
// ts_rank, a float4 that is a pure function of the row's text and the query, so it is the same on
// every page. sort=recent: the meeting's start_time DESC (a note about no meeting: its
// created_at), then by position in the meeting: the title, the segments by start_ms, then talking
// points and notes; then kind and id. Both are total orders, so the keyset cursor of the last item
// gives pages without duplicates or gaps; a row whose text changes between two pages may move
// (documented). A cursor also carries a digest of the user, q, filters and sort it was made for:
// under another query its keyset would mean nothing, so it is refused (400 invalid_cursor).
import { createHash } from 'node:crypto';
import { UUID_PATTERN } from '../async';
import type { Queryable } from '../db/pool';
import { decodeCursor, toPage, type Page } from '../domain/pagination';
import { DomainError } from '../errors';

export const SEARCH_CONFIG = 'english';
export const SEARCH_KINDS = ['meeting', 'note', 'segment', 'talking_point'] as const;
export type SearchKind = (typeof SEARCH_KINDS)[number];
export const SEARCH_SORTS = ['relevance', 'recent'] as const;
export type SearchSort = (typeof SEARCH_SORTS)[number];

export interface SearchHit {
  kind: SearchKind;
  id: string;
  meeting_id: string | null;
  snippet: string;
  rank: number;
  start_time: string;
  start_ms?: number;
}

export interface SearchFilter {
  q: string;
  meeting_id?: string;
  person_id?: string;
  from?: string;
  to?: string;
  sort?: SearchSort;
  limit: number;
  cursor?: string;
}

// Search's own problem type (decisions.md section 7), not pagination's generic bad_request.
const invalidCursor = () =>
  new DomainError(
    'invalid_cursor',
    'cursor is not valid for this query; use next_cursor from the previous page of the same search',
  );

/** What a cursor is bound to: the user, q, filters and sort (not limit, which may change between pages). */
function queryDigest(userId: string, f: SearchFilter): string {
  const bound = [
    userId,
    f.q,
    f.meeting_id ?? null,
    f.person_id ?? null,
    f.from ?? null,
    f.to ?? null,
    f.sort ?? 'relevance',
  ];
  return createHash('sha256').update(JSON.stringify(bound)).digest('base64url').slice(0, 22);
}

const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;
const isKind = (k: unknown): k is SearchKind => SEARCH_KINDS.includes(k as SearchKind);
const isId = (v: unknown): v is string => typeof v === 'string' && UUID_PATTERN.test(v);
const isNumber = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);

// A cursor's keyset, as SQL parameters: relevance (rank, kind, id); recent (start_time to the
// microsecond, the group: meeting id or note id, position, kind, id).
const KEYSETS: Record<SearchSort, (key: unknown[]) => boolean> = {
  relevance: ([rank, kind, id]) => isNumber(rank) && isKind(kind) && isId(id),
  recent: ([t, group, pos, kind, id]) =>
    typeof t === 'string' && TIMESTAMP.test(t) && isId(group) && isNumber(pos) && isKind(kind) && isId(id),
};

function decodeSearchCursor(userId: string, f: SearchFilter, sort: SearchSort): unknown[] | null {
  let key: unknown[] | null;
  try {
    key = decodeCursor(f.cursor, sort === 'relevance' ? 4 : 6);
  } catch {
    throw invalidCursor();
  }
  if (!key) return null;
  const digest = key.pop();
  if (digest !== queryDigest(userId, f) || !KEYSETS[sort](key)) throw invalidCursor();
  return key;
}

// ts_headline marks matches with STX/ETX (removed from the text first), so the snippet can be
// HTML-escaped as a whole and the marks then turned into <mark> tags: text a user wrote can
// never inject markup into a client that renders the snippet as HTML.
const START = '\u0002';
const STOP = '\u0003';
// One passage of 15-35 words around the best cover of the query (a short text comes whole).
// ts_headline's parser drops what looks like an XML/HTML tag, so such tags never reach a snippet.
export const HEADLINE_OPTIONS = `StartSel=${START}, StopSel=${STOP}, MaxWords=35, MinWords=15, ShortWord=2`;
const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
const toHtml = (headline: string) =>
  headline
    .replace(/[&<>"']/g, (c) => ESCAPES[c])
    .replaceAll(START, '<mark>')
    .replaceAll(STOP, '</mark>');

// What each kind contributes. `cols` select (kind, id, meeting_id, start_ms, body, t, grp, pos):
// t is the item's start_time, grp and pos its place within it (for sort=recent); `vec` is its
// tsvector. Filters: $1 user, $2 query text, $3 meeting_id, $4 person_id, $5 from, $6 to.
interface KindSql {
  kind: SearchKind;
  cols: string;
  vec: string;
  from: string;
}
const AFTER_LAST_SEGMENT = 9e15; // talking points and notes come after a meeting's segments
// sort=recent matches on the query inline, not on the CTE's: the planner then sees the words and
// estimates how many rows match, and for a common word walks the newest meetings first instead of
// joining every match (bench:search). relevance reads the CTE: it ranks every match anyway, and
// measured slower inline. `$Q` in a kind's `from` stands for the one or the other.
const TSQUERY = `websearch_to_tsquery('${SEARCH_CONFIG}', $2)`;
const matchesOf = (k: KindSql, sort: SearchSort) => k.from.replace('$Q', sort === 'recent' ? TSQUERY : 'query.q');
const timeFilter = (t: string) => `($5::timestamptz IS NULL OR ${t} >= $5) AND ($6::timestamptz IS NULL OR ${t} < $6)`;
const KINDS: KindSql[] = [
  {
    kind: 'meeting',
    cols: `'meeting'::text AS kind, m.id, m.id AS meeting_id, NULL::numeric AS start_ms, m.title AS body, m.start_time AS t, m.id AS grp, -1::float8 AS pos`,
    vec: 'm.title_search',
    from: `FROM meeting m, query
   WHERE m.user_id = $1 AND m.deleted_at IS NULL AND m.title_search @@ $Q
     AND ($3::uuid IS NULL OR m.id = $3)
     AND ($4::uuid IS NULL OR EXISTS (SELECT 1 FROM meeting_attendee a WHERE a.meeting_id = m.id AND a.person_id = $4))
     AND ${timeFilter('m.start_time')}`,
  },
  {
    kind: 'segment',
    cols: `'segment' AS kind, s.id, m.id AS meeting_id, s.start_ms, s.text AS body, m.start_time AS t, m.id AS grp, s.start_ms::float8 AS pos`,
    vec: 's.text_search',
    from: `FROM transcript_segment s
   JOIN transcription t ON t.id = s.transcription_id
   JOIN meeting m ON m.id = t.meeting_id, query
   WHERE s.user_id = $1 AND s.text_search @@ $Q AND m.user_id = $1 AND m.deleted_at IS NULL
     AND ($3::uuid IS NULL OR m.id = $3)
     AND ($4::uuid IS NULL OR s.person_id = $4)
     AND ${timeFilter('m.start_time')}`,
  },
  {
    kind: 'talking_point',
    cols: `'talking_point' AS kind, p.id, m.id AS meeting_id, NULL::numeric AS start_ms, p.content AS body, m.start_time AS t, m.id AS grp, ${AFTER_LAST_SEGMENT}::float8 AS pos`,
    vec: 'p.content_search',
    from: `FROM talking_point p
   JOIN meeting m ON m.id = p.meeting_id, query
   WHERE m.user_id = $1 AND m.deleted_at IS NULL AND p.deleted_at IS NULL AND p.content_search @@ $Q
     AND ($3::uuid IS NULL OR m.id = $3)
     AND ($4::uuid IS NULL OR EXISTS (SELECT 1 FROM meeting_attendee a WHERE a.meeting_id = m.id AND a.person_id = $4))
     AND ${timeFilter('m.start_time')}`,
  },
  {
    kind: 'note',
    // A note about a meeting belongs to it (hidden with it, dated by its start_time); other
    // notes are dated by their created_at.
    cols: `'note' AS kind, n.id, nm.id AS meeting_id, NULL::numeric AS start_ms, n.content AS body, COALESCE(nm.start_time, n.created_at) AS t,
       COALESCE(nm.id, n.id) AS grp, ${AFTER_LAST_SEGMENT}::float8 AS pos`,
    vec: 'n.content_search',
    from: `FROM note n
   LEFT JOIN meeting nm ON n.subject_type = 'MEETING' AND nm.id = n.subject_id AND nm.user_id = $1, query
   WHERE n.user_id = $1 AND n.content_search @@ $Q
     AND (n.subject_type IS DISTINCT FROM 'MEETING' OR (nm.id IS NOT NULL AND nm.deleted_at IS NULL))
     AND ($3::uuid IS NULL OR nm.id = $3)
     AND ($4::uuid IS NULL OR (n.subject_type = 'PERSON' AND n.subject_id = $4))
     AND ${timeFilter('COALESCE(nm.start_time, n.created_at)')}`,
  },
];

// One kind's first limit + 1 rows ($7) after the cursor ($9...). relevance: ts_rank on every
// match (OFFSET 0 keeps the subquery, so ts_rank runs once per match, not again in the cursor's
// predicate), then a top-N sort. recent: no ranking, a top-N sort on time and position; the page's
// rows are ranked at the end.
const BRANCHES: Record<SearchSort, (k: KindSql) => string> = {
  relevance: (k) => `
  (SELECT * FROM (SELECT ${k.cols}, ts_rank(${k.vec}, query.q) AS rank ${matchesOf(k, 'relevance')} OFFSET 0) b
   WHERE $9::real IS NULL OR b.rank < $9 OR (b.rank = $9 AND ('${k.kind}' > $10 OR ('${k.kind}' = $10 AND b.id > $11::uuid)))
   ORDER BY b.rank DESC, b.id LIMIT $7)`,
  recent: (k) => `
  (SELECT * FROM (SELECT ${k.cols}, ${k.vec} AS vec ${matchesOf(k, 'recent')}) b
   WHERE $9::timestamptz IS NULL OR b.t < $9
      OR (b.t = $9 AND (b.grp, b.pos, '${k.kind}', b.id) > ($10::uuid, $11::float8, $12::text, $13::uuid))
   ORDER BY b.t DESC, b.grp, b.pos, b.id LIMIT $7)`,
};
const ORDER: Record<SearchSort, string> = { relevance: 'rank DESC, kind, id', recent: 't DESC, grp, pos, kind, id' };
const RANK: Record<SearchSort, string> = { relevance: 'top.rank', recent: 'ts_rank(top.vec, query.q)' };

// Each kind is one GIN scan over (user_id, tsvector) and a top-N sort, so the outer sort sees at
// most 4 × (limit + 1) rows, and ts_headline (costly: it parses the text) runs on one page only.
// $8 is the headline options.
/** The statement of one sort; exported for bench:search's EXPLAIN, parameters as search() passes them. */
export const searchSql = (sort: SearchSort) => `
WITH query AS (SELECT websearch_to_tsquery('${SEARCH_CONFIG}', $2) AS q),
hits AS (${KINDS.map(BRANCHES[sort]).join('\n  UNION ALL')})
SELECT top.kind, top.id, top.meeting_id, top.start_ms, ${RANK[sort]} AS rank, top.grp, top.pos,
       to_char(top.t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS start_key,
       ts_headline('${SEARCH_CONFIG}', translate(top.body, E'\\x02\\x03', ''), query.q, $8) AS snippet
FROM (SELECT * FROM hits ORDER BY ${ORDER[sort]} LIMIT $7) top, query
ORDER BY ${ORDER[sort]}`;
const STATEMENTS: Record<SearchSort, string> = { relevance: searchSql('relevance'), recent: searchSql('recent') };

interface Row {
  kind: SearchKind;
  id: string;
  meeting_id: string | null;
  start_ms: number | null;
  rank: number;
  grp: string;
  pos: number;
  start_key: string;
  snippet: string;
}

/** The caller's items matching `f.q` in the order of `f.sort`. A query without lexemes (only stop words or punctuation) matches nothing. */
export async function search(q: Queryable, userId: string, f: SearchFilter): Promise<Page<SearchHit>> {
  const sort = f.sort ?? 'relevance';
  const cursor = decodeSearchCursor(userId, f, sort);
  const keys = sort === 'relevance' ? 3 : 5;
  const { rows } = await q.query<Row>(`search.${sort}`, STATEMENTS[sort], [
    userId,
    f.q,
    f.meeting_id ?? null,
    f.person_id ?? null,
    f.from ?? null,
    f.to ?? null,
    f.limit + 1,
    HEADLINE_OPTIONS,
    ...(cursor ?? Array(keys).fill(null)),
  ]);
  const keyOf = new Map<SearchHit, unknown[]>();
  const hits = rows.map((r) => {
    const hit: SearchHit = {
      kind: r.kind,
      id: r.id,
      meeting_id: r.meeting_id,
      snippet: toHtml(r.snippet),
      rank: r.rank,
      start_time: `${r.start_key.slice(0, 23)}Z`,
      ...(r.kind === 'segment' ? { start_ms: Number(r.start_ms) } : {}),
    };
    keyOf.set(hit, sort === 'relevance' ? [r.rank, r.kind, r.id] : [r.start_key, r.grp, r.pos, r.kind, r.id]);
    return hit;
  });
  const digest = queryDigest(userId, f);
  return toPage(hits, f.limit, (h) => [...keyOf.get(h)!, digest]);
}
