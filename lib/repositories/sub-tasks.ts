// Legacy sub_tasks repository. A sub-task has no user_id: it is scoped through its task
// (the actor's, not soft-deleted), so a hidden task hides its sub-tasks too.
import { patchSet } from '../db/params';
import type { Queryable } from '../db/pool';
import type { Actor } from '../domain/actor';
import { createdKey, decodeCreatedCursor, toCreatedPage, type Page } from '../domain/pagination';
import { assertOwnedRefs, type TaskStatus } from './tasks';

export interface SubTask {
  id: string;
  task_id: string;
  content: string;
  status: TaskStatus;
  assigned_to: string | null;
  due_date: string | null;
  created_at: string;
  updated_at: string;
}

/** A sub-task with the owner and meeting of its task (for events). */
export interface OwnedSubTask {
  sub_task: SubTask;
  user_id: string;
  meeting_id: string | null;
}

export interface SubTaskInput {
  content: string;
  status?: TaskStatus;
  assigned_to?: string | null;
  due_date?: string | null;
}

export type SubTaskPatch = Partial<SubTaskInput>;

const COLUMNS = 's.id, s.task_id, s.content, s.status, s.assigned_to, s.due_date, s.created_at, s.updated_at';
const PATCHABLE = ['content', 'status', 'assigned_to', 'due_date'] as const;
const VISIBLE_TASK = 't.id = s.task_id AND ($2::uuid IS NULL OR t.user_id = $2) AND t.deleted_at IS NULL';

type Row = SubTask & { owner_id: string; owner_meeting_id: string | null };
const owned = ({ owner_id, owner_meeting_id, ...sub_task }: Row): OwnedSubTask => ({
  sub_task,
  user_id: owner_id,
  meeting_id: owner_meeting_id,
});

/** Call after checking the task is the user's (getTask). */
export async function createSubTask(
  q: Queryable,
  userId: string,
  taskId: string,
  input: SubTaskInput,
): Promise<SubTask> {
  await assertOwnedRefs(q, userId, [{ field: 'assigned_to', kind: 'person', id: input.assigned_to }]);
  const { rows } = await q.query<SubTask>(
    'sub_task.create',
    `INSERT INTO sub_task AS s (task_id, content, status, assigned_to, due_date)
     VALUES ($1, $2, COALESCE($3, 'pending'), $4, $5) RETURNING ${COLUMNS}`,
    [taskId, input.content, input.status ?? null, input.assigned_to ?? null, input.due_date ?? null],
  );
  return rows[0];
}

export async function getSubTask(
  q: Queryable,
  actor: Actor,
  id: string,
  opts: { forUpdate?: boolean } = {},
): Promise<OwnedSubTask | null> {
  // Locked with its task held too: a task's soft delete committing meanwhile hides the sub-task
  // (read again after the wait), so a write through it finds nothing.
  // guard: sub-task-task-share-lock | remove:  FOR SHARE OF t | test: test/concurrency/row-locks.test.ts :: PATCH of a sub-task whose task's delete commits
  const { rows } = await q.query<Row>(
    'sub_task.get',
    `SELECT ${COLUMNS}, t.user_id AS owner_id, t.meeting_id AS owner_meeting_id
     FROM sub_task s JOIN task t ON ${VISIBLE_TASK} WHERE s.id = $1${opts.forUpdate ? ' FOR UPDATE OF s FOR SHARE OF t' : ''}`,
    [id, actor.userId],
  );
  return rows[0] ? owned(rows[0]) : null;
}

/** Sub-tasks of a visible task, oldest first. */
export async function listSubTasks(
  q: Queryable,
  actor: Actor,
  taskId: string,
  f: { limit: number; cursor?: string },
): Promise<Page<SubTask>> {
  const [afterAt, afterId] = decodeCreatedCursor(f.cursor);
  const { rows } = await q.query<SubTask & { page_key: string }>(
    'sub_task.list',
    `SELECT ${COLUMNS}, ${createdKey('s.')} FROM sub_task s JOIN task t ON ${VISIBLE_TASK}
     WHERE s.task_id = $1 AND ($3::timestamptz IS NULL OR (s.created_at, s.id) > ($3::timestamptz, $4::uuid))
     ORDER BY s.created_at, s.id LIMIT $5`,
    [taskId, actor.userId, afterAt, afterId, f.limit + 1],
  );
  return toCreatedPage(rows, f.limit);
}

export async function updateSubTask(
  q: Queryable,
  actor: Actor,
  id: string,
  patch: SubTaskPatch,
): Promise<OwnedSubTask | null> {
  // guard: sub-task-update-lock | remove: { forUpdate: true } | test: test/concurrency/row-locks.test.ts :: PATCH of a sub-task whose delete commits
  const current = await getSubTask(q, actor, id, { forUpdate: true });
  if (!current) return null;
  await assertOwnedRefs(q, current.user_id, [{ field: 'assigned_to', kind: 'person', id: patch.assigned_to }]);
  const params: unknown[] = [id];
  const set = patchSet(patch, PATCHABLE, params);
  if (!set) return current;
  const { rows } = await q.query<SubTask>(
    'sub_task.update',
    `UPDATE sub_task AS s SET ${set}, updated_at = now() WHERE s.id = $1 RETURNING ${COLUMNS}`,
    params,
  );
  return { ...current, sub_task: rows[0] };
}

/** Hard delete (sub_task has no deleted_at). */
export async function deleteSubTask(q: Queryable, actor: Actor, id: string): Promise<OwnedSubTask | null> {
  // Through the locked read: a task's soft delete committing meanwhile hides the sub-task, so nothing is deleted.
  // guard: sub-task-delete-task-lock | remove: , { forUpdate: true } | test: test/concurrency/row-locks.test.ts :: DELETE of a sub-task whose task's delete commits
  const found = await getSubTask(q, actor, id, { forUpdate: true });
  if (!found) return null;
  await q.query('sub_task.delete', 'DELETE FROM sub_task WHERE id = $1', [id]);
  return found;
}
