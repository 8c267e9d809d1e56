// Meeting attendees: which of the meeting owner's people attended. The caller checks the
// meeting is visible (getMeeting) and the person is the owner's (ownsPerson) first.
import type { Queryable } from '../db/pool';
import { decodeCursor, toPage, type Page } from '../domain/pagination';
import { BRIEF_COLUMNS, type PersonBrief } from './people';

const P_COLUMNS = BRIEF_COLUMNS.split(', ')
  .map((c) => `p.${c}`)
  .join(', ');

/** The meeting's attendees by display_name. */
export async function listAttendees(
  q: Queryable,
  meetingId: string,
  f: { limit: number; cursor?: string },
): Promise<Page<PersonBrief>> {
  const after = decodeCursor(f.cursor, 2);
  const { rows } = await q.query<PersonBrief>(
    'attendee.list',
    `SELECT ${P_COLUMNS} FROM meeting_attendee a JOIN person p ON p.id = a.person_id
     WHERE a.meeting_id = $1 AND ($2::text IS NULL OR (p.display_name, p.id) > ($2::text, $3::uuid))
     ORDER BY p.display_name, p.id LIMIT $4`,
    [meetingId, after?.[0] ?? null, after?.[1] ?? null, f.limit + 1],
  );
  return toPage(rows, f.limit, (p) => [p.display_name, p.id]);
}

/** Adds the attendee; false when it was already there. */
export async function addAttendee(q: Queryable, meetingId: string, personId: string): Promise<boolean> {
  const { rowCount } = await q.query(
    'attendee.add',
    'INSERT INTO meeting_attendee (meeting_id, person_id) VALUES ($1, $2) ON CONFLICT DO NOTHING',
    [meetingId, personId],
  );
  return rowCount === 1;
}

/** Removes the attendee; false when it was not there. */
export async function removeAttendee(q: Queryable, meetingId: string, personId: string): Promise<boolean> {
  const { rowCount } = await q.query(
    'attendee.remove',
    'DELETE FROM meeting_attendee WHERE meeting_id = $1 AND person_id = $2',
    [meetingId, personId],
  );
  return rowCount === 1;
}
