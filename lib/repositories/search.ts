// Full-text search over the caller's transcript segments, notes, talking points and meeting
// titles (GET /search). Each kind has a generated tsvector column with a GIN index
// (schema/schema.sql); one statement ranks the four kinds together, best first.
//
// Text search configuration: 'english'. Transcripts and notes are English prose in this
// product, and stemming is what people expect of a search box ("decided" finds "decision",
// "meetings" finds "meeting"); stop words ("the", "and") are dropped, which keeps the indexes
// small and a query of "the plan" from matching every segment. The price: words of other
// languages are stemmed by English rules, and a query of only stop words matches nothing.
//
// Order and cursor: rank DESC, then kind, then id; a total order, so the keyset cursor
// (rank, kind, id) of the last item gives pages without duplicates or gaps. rank is
// ts_rank, a float4 that is a pure function of the row's text and the query, so it is the
// same on every page; a row whose text changes between two pages may move (documented).
import { UUID_PATTERN } from '../async';
import type { Queryable } from '../db/pool';
import { DomainError } from '../errors';
import { decodeCursor, toPage, type Page } from '../domain/pagination';

export const SEARCH_CONFIG = 'english';
export const SEARCH_KINDS = ['meeting', 'note', 'segment', 'talking_point'] as const;
export type SearchKind = (typeof SEARCH_KINDS)[number];

export interface SearchHit {
  kind: SearchKind;
  id: string;
  meeting_id: string | null;
  snippet: string;
  rank: number;
  start_ms?: number;
}

export interface SearchFilter {
  q: string;
  meeting_id?: string;
  person_id?: string;
  from?: string;
  to?: string;
  limit: number;
  cursor?: string;
}


function decodeSearchCursor(cursor: string | undefined): [number, SearchKind, string] | null {
  const key = decodeCursor(cursor, 3);
  if (!key) return null;
  const [rank, kind, id] = key;
  if (typeof rank === 'number' && Number.isFinite(rank) && SEARCH_KINDS.includes(kind as SearchKind) && typeof id === 'string' && UUID_PATTERN.test(id)) return [rank, kind as SearchKind, id];
  throw new DomainError('bad_request', 'cursor is not valid; use next_cursor from a previous page');
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
const toHtml = (headline: string) => headline.replace(/[&<>"']/g, (c) => ESCAPES[c]).replaceAll(START, '<mark>').replaceAll(STOP, '</mark>');

// One kind's best limit + 1 rows after the cursor ($5 rank, $6 kind, $7 id). `matches` selects
// (kind, id, meeting_id, start_ms, body, rank); OFFSET 0 keeps it a subquery, so ts_rank runs once
// per match (inlined into the cursor's predicate it would run twice).
const branch = (kind: SearchKind, matches: string) => `
  (SELECT * FROM (${matches} OFFSET 0) b
   WHERE $5::real IS NULL OR b.rank < $5 OR (b.rank = $5 AND ('${kind}' > $6 OR ('${kind}' = $6 AND b.id > $7::uuid)))
   ORDER BY b.rank DESC, b.id LIMIT $10)`;

// $1 user, $2 query text, $3 meeting_id, $4 person_id, $5-$7 cursor, $8 from, $9 to, $10 limit + 1.
// Each kind is one GIN scan over (user_id, tsvector) and a top-N sort, so the outer sort sees at
// most 4 × (limit + 1) rows, and ts_headline (costly: it parses the text) runs on one page only.
/** Exported for bench:search's EXPLAIN; parameters as search() passes them. */
export const SEARCH_SQL = `
WITH query AS (SELECT websearch_to_tsquery('${SEARCH_CONFIG}', $2) AS q),
hits AS (${branch(
  'meeting',
  `SELECT 'meeting'::text AS kind, m.id, m.id AS meeting_id, NULL::numeric AS start_ms, m.title AS body, ts_rank(m.title_search, query.q) AS rank
   FROM meeting m, query
   WHERE m.user_id = $1 AND m.deleted_at IS NULL AND m.title_search @@ query.q
     AND ($3::uuid IS NULL OR m.id = $3)
     AND ($4::uuid IS NULL OR EXISTS (SELECT 1 FROM meeting_attendee a WHERE a.meeting_id = m.id AND a.person_id = $4))
     AND ($8::timestamptz IS NULL OR m.start_time >= $8) AND ($9::timestamptz IS NULL OR m.start_time < $9)`,
)}
  UNION ALL ${branch(
    'segment',
    `SELECT 'segment' AS kind, s.id, m.id AS meeting_id, s.start_ms, s.text AS body, ts_rank(s.text_search, query.q) AS rank
   FROM transcript_segment s
   JOIN transcription t ON t.id = s.transcription_id
   JOIN meeting m ON m.id = t.meeting_id, query
   WHERE s.user_id = $1 AND s.text_search @@ query.q AND m.user_id = $1 AND m.deleted_at IS NULL
     AND ($3::uuid IS NULL OR m.id = $3)
     AND ($4::uuid IS NULL OR s.person_id = $4)
     AND ($8::timestamptz IS NULL OR m.start_time >= $8) AND ($9::timestamptz IS NULL OR m.start_time < $9)`,
  )}
  UNION ALL ${branch(
    'talking_point',
    `SELECT 'talking_point' AS kind, p.id, m.id AS meeting_id, NULL::numeric AS start_ms, p.content AS body, ts_rank(p.content_search, query.q) AS rank
   FROM talking_point p
   JOIN meeting m ON m.id = p.meeting_id, query
   WHERE m.user_id = $1 AND m.deleted_at IS NULL AND p.deleted_at IS NULL AND p.content_search @@ query.q
     AND ($3::uuid IS NULL OR m.id = $3)
     AND ($4::uuid IS NULL OR EXISTS (SELECT 1 FROM meeting_attendee a WHERE a.meeting_id = m.id AND a.person_id = $4))
     AND ($8::timestamptz IS NULL OR m.start_time >= $8) AND ($9::timestamptz IS NULL OR m.start_time < $9)`,
  )}
  UNION ALL ${branch(
    'note',
    // A note about a meeting belongs to it (hidden with it, dated by its start_time); other
    // notes are dated by their created_at.
    `SELECT 'note' AS kind, n.id, nm.id AS meeting_id, NULL::numeric AS start_ms, n.content AS body, ts_rank(n.content_search, query.q) AS rank
   FROM note n
   LEFT JOIN meeting nm ON n.subject_type = 'MEETING' AND nm.id = n.subject_id AND nm.user_id = $1, query
   WHERE n.user_id = $1 AND n.content_search @@ query.q
     AND (n.subject_type IS DISTINCT FROM 'MEETING' OR (nm.id IS NOT NULL AND nm.deleted_at IS NULL))
     AND ($3::uuid IS NULL OR nm.id = $3)
     AND ($4::uuid IS NULL OR (n.subject_type = 'PERSON' AND n.subject_id = $4))
     AND ($8::timestamptz IS NULL OR COALESCE(nm.start_time, n.created_at) >= $8)
     AND ($9::timestamptz IS NULL OR COALESCE(nm.start_time, n.created_at) < $9)`,
  )}
)
SELECT top.kind, top.id, top.meeting_id, top.start_ms, top.rank,
       ts_headline('${SEARCH_CONFIG}', translate(top.body, E'\\x02\\x03', ''), query.q, $11) AS snippet
FROM (SELECT * FROM hits ORDER BY rank DESC, kind, id LIMIT $10) top, query
ORDER BY top.rank DESC, top.kind, top.id`;

interface Row {
  kind: SearchKind;
  id: string;
  meeting_id: string | null;
  start_ms: number | null;
  rank: number;
  snippet: string;
}

/** The caller's items matching `f.q`, best first. A query without lexemes (only stop words or punctuation) matches nothing. */
export async function search(q: Queryable, userId: string, f: SearchFilter): Promise<Page<SearchHit>> {
  const cursor = decodeSearchCursor(f.cursor);
  const { rows } = await q.query<Row>('search', SEARCH_SQL, [
    userId,
    f.q,
    f.meeting_id ?? null,
    f.person_id ?? null,
    cursor?.[0] ?? null,
    cursor?.[1] ?? null,
    cursor?.[2] ?? null,
    f.from ?? null,
    f.to ?? null,
    f.limit + 1,
    HEADLINE_OPTIONS,
  ]);
  const hits: SearchHit[] = rows.map((r) => ({
    kind: r.kind,
    id: r.id,
    meeting_id: r.meeting_id,
    snippet: toHtml(r.snippet),
    rank: r.rank,
    ...(r.kind === 'segment' ? { start_ms: r.start_ms! } : {}),
  }));
  return toPage(hits, f.limit, (h) => [h.rank, h.kind, h.id]);
}
