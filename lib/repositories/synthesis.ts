// The AI synthesis of a meeting (summary, key_points, headline) and its topics. The ML
// service replaces them wholesale after post-meeting processing, in one transaction.
import { randomUUID } from 'node:crypto';
import type { Queryable } from '../db/pool';
import { assertSegmentsOfMeeting } from './transcript-segments';
import type { Actor } from '../domain/actor';
import { createdKey, decodeCreatedCursor, toCreatedPage, type Page } from '../domain/pagination';

export interface TopicInput {
  name: string;
  summary: string;
  is_final?: boolean;
  segment_ids?: string[];
}

export interface SynthesisInput {
  summary: string;
  key_points: unknown;
  headline?: string | null;
  topics?: TopicInput[];
}

export interface Topic {
  id: string;
  meeting_id: string;
  name: string;
  summary: string;
  is_final: boolean;
  created_at: string;
  updated_at: string;
  segment_ids: string[];
}

/** Writes the synthesis onto a meeting the caller has already checked (and locked). */
export async function replaceSynthesis(tx: Queryable, meetingId: string, input: SynthesisInput): Promise<void> {
  await tx.query(
    'meeting.set_synthesis',
    `UPDATE meeting SET summary = $2, key_points = $3, headline = CASE WHEN $4::boolean THEN $5 ELSE headline END WHERE id = $1`,
    [
      meetingId,
      input.summary,
      JSON.stringify(input.key_points ?? null),
      input.headline !== undefined,
      input.headline ?? null,
    ],
  );
  if (input.topics) await replaceTopics(tx, meetingId, input.topics);
}

async function replaceTopics(tx: Queryable, meetingId: string, topics: TopicInput[]): Promise<void> {
  for (const [i, t] of topics.entries())
    await assertSegmentsOfMeeting(tx, meetingId, t.segment_ids ?? [], `topics.${i}.segment_ids`);
  // Talking points keep living; their topic_id becomes empty through the foreign key.
  await tx.query('topic.delete_of_meeting', 'DELETE FROM topic WHERE meeting_id = $1', [meetingId]);
  if (!topics.length) return;
  const records = topics.map((t, i) => ({
    id: randomUUID(),
    ord: i,
    name: t.name,
    summary: t.summary,
    is_final: t.is_final ?? false,
  }));
  // Reads list topics by created_at; one microsecond per position keeps the order they were sent in.
  await tx.query(
    'topic.insert_bulk',
    `INSERT INTO topic (id, meeting_id, name, summary, is_final, created_at, updated_at)
     SELECT r.id, $1, r.name, r.summary, r.is_final, now() + r.ord * interval '1 microsecond', now()
     FROM json_to_recordset($2::json) AS r(id uuid, ord int, name text, summary text, is_final boolean)`,
    [meetingId, JSON.stringify(records)],
  );
  const links = topics.flatMap((t, i) =>
    [...new Set(t.segment_ids ?? [])].map((segment_id) => ({ topic_id: records[i].id, segment_id })),
  );
  if (links.length) {
    await tx.query(
      'topic_segment.insert_bulk',
      `INSERT INTO topic_segment (topic_id, segment_id) SELECT r.topic_id, r.segment_id FROM json_to_recordset($1::json) AS r(topic_id uuid, segment_id uuid)`,
      [JSON.stringify(links)],
    );
  }
}

/** The meeting's topics with their segment ids, in the order the synthesis gave them. */
export async function listTopics(
  q: Queryable,
  actor: Actor,
  meetingId: string,
  p: { limit: number; cursor?: string },
): Promise<Page<Topic>> {
  const [afterAt, afterId] = decodeCreatedCursor(p.cursor);
  const { rows } = await q.query<Topic & { page_key: string }>(
    'topic.list',
    `SELECT t.id, t.meeting_id, t.name, t.summary, t.is_final, t.created_at, t.updated_at,
       ARRAY(SELECT ts.segment_id FROM topic_segment ts WHERE ts.topic_id = t.id ORDER BY ts.created_at, ts.segment_id) AS segment_ids,
       ${createdKey('t.')}
     FROM topic t JOIN meeting m ON m.id = t.meeting_id
     WHERE t.meeting_id = $1 AND ($2::uuid IS NULL OR m.user_id = $2) AND m.deleted_at IS NULL
       AND ($3::timestamptz IS NULL OR (t.created_at, t.id) > ($3::timestamptz, $4::uuid))
     ORDER BY t.created_at, t.id LIMIT $5`,
    [meetingId, actor.userId, afterAt, afterId, p.limit + 1],
  );
  return toCreatedPage(rows, p.limit);
}
