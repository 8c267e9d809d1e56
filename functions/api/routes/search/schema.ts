import { SEARCH_KINDS, SEARCH_SORTS } from '@mi/lib/repositories/search';
import { PageQuery, Timestamp, Uuid, z } from '../../openapi';

export const SearchQuery = z.object({
  q: z
    .string()
    .trim()
    .min(1, 'must not be empty')
    .max(200)
    .openapi({
      description:
        "what to find, in web search syntax (websearch_to_tsquery, configuration 'english'): words (stemmed; stop words ignored), " +
        '"quoted phrases", `or`, `-excluded`. 1-200 characters after trimming; empty is 422. A query of only stop words or ' +
        'punctuation is valid and matches nothing.',
      example: 'budget',
    }),
  meeting_id: Uuid.optional().openapi({
    description:
      'only items of this meeting (its title, segments, talking points, notes about it); an id that is not one of your meetings matches nothing',
  }),
  person_id: Uuid.optional().openapi({
    description:
      "only this person's items: segments they speak, notes about them, and the titles and talking points of meetings they attend; an id that is not one of your people matches nothing",
  }),
  from: Timestamp.optional().openapi({
    description: "the meeting's start_time at or after (a note not about a meeting: its created_at)",
  }),
  to: Timestamp.optional().openapi({
    description: "the meeting's start_time before (a note not about a meeting: its created_at)",
  }),
  sort: z
    .enum(SEARCH_SORTS)
    .default('relevance')
    .openapi({
      description:
        'relevance (default): every match ranked, best first (rank descending, then kind, then id). recent: newest meeting first ' +
        '(start_time; a note not about a meeting: its created_at), then by position in the meeting: its title, its segments by start_ms, ' +
        'then its notes and talking points; then kind, then id',
    }),
  ...PageQuery,
});

export const SearchHitSchema = z
  .object({
    kind: z
      .enum(SEARCH_KINDS)
      .openapi({ description: 'segment (transcript segment), note, talking_point, or meeting (its title)' }),
    id: Uuid.openapi({ description: 'the id of the segment, note, talking point or meeting' }),
    meeting_id: Uuid.nullable().openapi({
      description: 'the meeting the item belongs to; null for a note not about a meeting',
    }),
    snippet: z.string().openapi({
      description:
        'the matching passage as HTML-escaped text, each match wrapped in <mark>…</mark>; up to two fragments joined by " … "',
      example: 'we agreed the <mark>budget</mark> for next quarter',
    }),
    rank: z.number().openapi({
      description:
        'ts_rank of the item for this query (higher is better); titles weigh most, then talking points, then segments and notes',
    }),
    start_time: Timestamp.openapi({
      description: "the start_time of the item's meeting; a note not about a meeting: its created_at",
    }),
    start_ms: z
      .number()
      .optional()
      .openapi({ description: 'segments only: where the segment starts in the recording' }),
  })
  .openapi('SearchHit');

export const SearchPage = z
  .object({ items: z.array(SearchHitSchema), next_cursor: z.string().nullable() })
  .openapi('SearchPage');
