// POST /people/{id}/merge (decisions.md section 7, "People and speakers"): two people of a user
// who are one. Everything of the other person moves to the kept one in the caller's transaction,
// then the other is deleted.
import type { Queryable } from '../db/pool';
import { notFound, unprocessable } from '../errors';
import { getPerson, lockSpeakerIdentity, type Person } from './people';
import { moveVoiceSamples } from './voice-samples';

export interface MergeResult {
  person: Person;
  /** The user's own person was the merged one: app_user.person_id now names the kept person. */
  ownPersonMoved: boolean;
}

/** A statement; `$3` (the user) only where the table is scoped by user rather than by a person key. */
type Move = [name: string, sql: string];

// What refers to a person, each moved by one statement ($1 the kept person, $2 the other, $3 the
// user). First who speaks: segments and label assignments (then the voice samples follow them).
const ATTRIBUTIONS: Move[] = [
  ['person_merge.segments', 'UPDATE transcript_segment SET person_id = $1 WHERE person_id = $2'],
  ['person_merge.labels', 'UPDATE meeting_speaker_label SET person_id = $1, updated_at = now() WHERE person_id = $2'],
];

// Then what is about the person. Attendance is copied where the kept person is not an attendee
// yet; the other's rows go with it.
const REFERENCES: Move[] = [
  ['person_merge.tasks', 'UPDATE task SET assigned_to = $1, updated_at = now() WHERE assigned_to = $2'],
  ['person_merge.sub_tasks', 'UPDATE sub_task SET assigned_to = $1, updated_at = now() WHERE assigned_to = $2'],
  ['person_merge.summaries', 'UPDATE person_summary SET person_id = $1, updated_at = now() WHERE person_id = $2'],
  [
    'person_merge.notes',
    `UPDATE note SET subject_id = $1, updated_at = now()
     WHERE user_id = $3 AND subject_type = 'PERSON' AND subject_id = $2`,
  ],
  [
    'person_merge.threads',
    `UPDATE ai_thread SET context_id = $1 WHERE user_id = $3 AND context_type = 'PERSON' AND context_id = $2`,
  ],
  [
    'person_merge.attendance',
    `INSERT INTO meeting_attendee (meeting_id, person_id)
     SELECT meeting_id, $1 FROM meeting_attendee WHERE person_id = $2 ON CONFLICT DO NOTHING`,
  ],
  // Later writes naming the other person follow it here; earlier merges into it follow too (flat chains).
  ['person_merge.chain', 'UPDATE person_merge SET person_id = $1 WHERE person_id = $2'],
  [
    'person_merge.record',
    'INSERT INTO person_merge (merged_id, person_id, user_id) VALUES ($2, $1, $3) ON CONFLICT (merged_id) DO NOTHING',
  ],
  // The kept person's empty contact fields take the other's values; its own values win.
  [
    'person_merge.fields',
    `UPDATE person p SET full_name = coalesce(p.full_name, o.full_name), title = coalesce(p.title, o.title),
       role = coalesce(p.role, o.role), email = coalesce(p.email, o.email), company = coalesce(p.company, o.company),
       tags = coalesce(p.tags, o.tags), updated_at = now()
     FROM person o WHERE p.id = $1 AND o.id = $2 AND p.user_id = $3`,
  ],
];

/**
 * Moves everything of `otherId` to `keepId` and deletes `otherId`. 422 when they are the same
 * person, 404 when either is not one of the user's people.
 */
export async function mergePeople(
  tx: Queryable,
  userId: string,
  keepId: string,
  otherId: string,
): Promise<MergeResult> {
  if (keepId === otherId) {
    const why = { path: 'person_id', message: 'must name another person' };
    throw unprocessable('a person cannot be merged into itself', [why]);
  }
  // The speaker-identity lock orders a merge and an assignment (else each holds rows the other needs).
  // guard: merge-speaker-identity-lock | remove: await lockSpeakerIdentity(tx, userId); | test: test/concurrency/speaker-identity.test.ts :: should not deadlock when a merge and an assignment
  await lockSpeakerIdentity(tx, userId);
  // Both people locked before anything moves, so a writer that attributes to the other person (the
  // ML service's segments) commits before we read, or fails on the deleted person; never commits a
  // sample in between that the delete would drop.
  // guard: merge-people-lock | remove:  FOR UPDATE | test: test/concurrency/speaker-identity.test.ts :: should lose no sample appended for the other person
  const { rows } = await tx.query<{ id: string }>(
    'person_merge.lock',
    'SELECT id FROM person WHERE id = ANY($1::uuid[]) AND user_id = $2 ORDER BY id FOR UPDATE',
    [[keepId, otherId], userId],
  );
  if (rows.length < 2) throw notFound('person');
  const move = async (moves: Move[]) => {
    for (const [name, sql] of moves) {
      await tx.query(name, sql, sql.includes('$3') ? [keepId, otherId, userId] : [keepId, otherId]);
    }
  };
  await move(ATTRIBUTIONS);
  await moveVoiceSamples(tx, otherId, keepId);
  await move(REFERENCES);
  const { rowCount } = await tx.query(
    'person_merge.own_person',
    'UPDATE app_user SET person_id = $1, updated_at = now() WHERE person_id = $2',
    [keepId, otherId],
  );
  await tx.query('person_merge.delete', 'DELETE FROM person WHERE id = $1', [otherId]);
  return { person: (await getPerson(tx, { userId }, keepId))!, ownPersonMoved: (rowCount ?? 0) > 0 };
}
