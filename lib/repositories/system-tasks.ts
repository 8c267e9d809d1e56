// Tasks the ML service extracts from a meeting (source `system`), owned by the meeting's user.
// Re-extraction soft-deletes the previous system tasks; user tasks are never touched here.
import { randomUUID } from 'node:crypto';
import type { Queryable } from '../db/pool';
import { assertPeopleOf } from './transcript-segments';
import type { Task } from './tasks';

export interface SystemTaskInput {
  content: string;
  due_date?: string | null;
  assigned_to?: string | null;
}

const COLUMNS =
  'id, user_id, content, status, source, due_date, assigned_to, meeting_id, parent_task_id, deleted_at, created_at, updated_at';

/** Creates system tasks of a meeting for its owner; assigned_to must be the owner's person (422). Returns them in input order. */
export async function createSystemTasks(
  tx: Queryable,
  meeting: { id: string; user_id: string },
  tasks: SystemTaskInput[],
): Promise<Task[]> {
  await assertPeopleOf(
    tx,
    meeting.user_id,
    tasks.map((t) => t.assigned_to),
    'assigned_to',
  );
  if (!tasks.length) return [];
  const records = tasks.map((t) => ({
    id: randomUUID(),
    content: t.content,
    due_date: t.due_date ?? null,
    assigned_to: t.assigned_to ?? null,
  }));
  const { rows } = await tx.query<Task>(
    'task.create_system_bulk',
    `INSERT INTO task (id, user_id, content, source, due_date, assigned_to, meeting_id)
     SELECT r.id, $1, r.content, 'system', r.due_date, r.assigned_to, $2
     FROM json_to_recordset($3::json) AS r(id uuid, content text, due_date date, assigned_to uuid)
     RETURNING ${COLUMNS}`,
    [meeting.user_id, meeting.id, JSON.stringify(records)],
  );
  const byId = new Map(rows.map((r) => [r.id, r]));
  return records.map((r) => byId.get(r.id)!);
}

/** Soft-deletes the meeting's live system tasks; returns their ids. */
export async function softDeleteSystemTasks(tx: Queryable, meetingId: string): Promise<string[]> {
  const { rows } = await tx.query<{ id: string }>(
    'task.soft_delete_system_of_meeting',
    `UPDATE task SET deleted_at = now(), updated_at = now()
     WHERE meeting_id = $1 AND source = 'system' AND deleted_at IS NULL RETURNING id`,
    [meetingId],
  );
  return rows.map((r) => r.id);
}
