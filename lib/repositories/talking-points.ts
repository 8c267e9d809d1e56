// Talking points (live insights from the ML service) with their linked segments.
// Scoped through the meeting; soft-deleted talking points and meetings are hidden.
import type { Queryable } from '../db/pool';
import { assertSegmentsOfMeeting } from './transcript-segments';
import { unprocessable } from '../errors';
import type { Actor } from '../domain/actor';
import { createdKey, decodeCreatedCursor, toCreatedPage, type Page } from '../domain/pagination';

export interface TalkingPoint {
  id: string;
  meeting_id: string;
  topic_id: string | null;
  content: string;
  is_final: boolean;
  created_at: string;
  deleted_at: string | null;
  segment_ids: string[];
}

export interface TalkingPointInput {
  content: string;
  topic_id?: string | null;
  is_final?: boolean;
  segment_ids?: string[];
}

const COLUMNS = `p.id, p.meeting_id, p.topic_id, p.content, p.is_final, p.created_at, p.deleted_at,
  ARRAY(SELECT ps.segment_id FROM talking_point_segment ps WHERE ps.talking_point_id = p.id ORDER BY ps.segment_id) AS segment_ids`;

/** Creates a talking point of a meeting the caller has already checked; topic_id must be that meeting's topic. */
export async function createTalkingPoint(
  tx: Queryable,
  meetingId: string,
  input: TalkingPointInput,
): Promise<TalkingPoint> {
  if (input.topic_id) {
    const { rows } = await tx.query('topic.of_meeting', 'SELECT 1 FROM topic WHERE id = $1 AND meeting_id = $2', [
      input.topic_id,
      meetingId,
    ]);
    if (!rows.length)
      throw unprocessable('topic_id does not exist in this meeting', [
        { path: 'topic_id', message: 'not a topic of this meeting' },
      ]);
  }
  await assertSegmentsOfMeeting(tx, meetingId, input.segment_ids ?? [], 'segment_ids');
  const { rows } = await tx.query<{ id: string }>(
    'talking_point.create',
    'INSERT INTO talking_point (meeting_id, topic_id, content, is_final) VALUES ($1, $2, $3, $4) RETURNING id',
    [meetingId, input.topic_id ?? null, input.content, input.is_final ?? false],
  );
  const id = rows[0].id;
  if (input.segment_ids?.length) {
    await tx.query(
      'talking_point.link_segments',
      'INSERT INTO talking_point_segment (talking_point_id, segment_id) SELECT DISTINCT $1::uuid, unnest($2::uuid[])',
      [id, input.segment_ids],
    );
  }
  const { rows: created } = await tx.query<TalkingPoint>(
    'talking_point.get',
    `SELECT ${COLUMNS} FROM talking_point p WHERE p.id = $1`,
    [id],
  );
  return created[0];
}

/** The meeting's live talking points, oldest first. */
export async function listTalkingPoints(
  q: Queryable,
  actor: Actor,
  meetingId: string,
  p: { limit: number; cursor?: string },
): Promise<Page<TalkingPoint>> {
  const [afterAt, afterId] = decodeCreatedCursor(p.cursor);
  const { rows } = await q.query<TalkingPoint & { page_key: string }>(
    'talking_point.list',
    `SELECT ${COLUMNS}, ${createdKey('p.')} FROM talking_point p JOIN meeting m ON m.id = p.meeting_id
     WHERE p.meeting_id = $1 AND ($2::uuid IS NULL OR m.user_id = $2) AND m.deleted_at IS NULL AND p.deleted_at IS NULL
       AND ($3::timestamptz IS NULL OR (p.created_at, p.id) > ($3::timestamptz, $4::uuid))
     ORDER BY p.created_at, p.id LIMIT $5`,
    [meetingId, actor.userId, afterAt, afterId, p.limit + 1],
  );
  return toCreatedPage(rows, p.limit);
}

/** Soft-deletes a talking point the actor may see; returns it with its meeting's owner, or null. */
export async function softDeleteTalkingPoint(
  q: Queryable,
  actor: Actor,
  id: string,
): Promise<{ id: string; meeting_id: string; user_id: string } | null> {
  const { rows } = await q.query<{ id: string; meeting_id: string; user_id: string }>(
    'talking_point.soft_delete',
    `UPDATE talking_point p SET deleted_at = now() FROM meeting m
     WHERE p.id = $1 AND m.id = p.meeting_id AND ($2::uuid IS NULL OR m.user_id = $2) AND m.deleted_at IS NULL AND p.deleted_at IS NULL
     RETURNING p.id, p.meeting_id, m.user_id`,
    [id, actor.userId],
  );
  return rows[0] ?? null;
}
