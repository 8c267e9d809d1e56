// Tasks repository: every query tenant-scoped through the Actor; soft-deleted rows hidden.
// Also holds the ownership check of referenced ids that tasks, notes and threads share.
import { patchSet } from '../db/params';
import type { Queryable } from '../db/pool';
import { unprocessable, type FieldError } from '../errors';
import type { Actor } from '../domain/actor';
import { createdKey, decodeCreatedCursor, toCreatedPage, type Page } from '../domain/pagination';

export type TaskStatus = 'pending' | 'completed';
export type TaskSource = 'user' | 'system';

export interface Task {
  id: string;
  user_id: string;
  content: string;
  status: TaskStatus;
  source: TaskSource;
  due_date: string | null;
  assigned_to: string | null;
  meeting_id: string | null;
  parent_task_id: string | null;
  deleted_at: string | null;
  created_at: string;
  updated_at: string;
}

export interface TaskInput {
  content: string;
  status?: TaskStatus;
  due_date?: string | null;
  assigned_to?: string | null;
  meeting_id?: string | null;
  parent_task_id?: string | null;
}

export type TaskPatch = Partial<TaskInput>;

const COLUMNS =
  'id, user_id, content, status, source, due_date, assigned_to, meeting_id, parent_task_id, deleted_at, created_at, updated_at';
const PATCHABLE = ['content', 'status', 'due_date', 'assigned_to', 'meeting_id', 'parent_task_id'] as const;
// Keyset on millisecond precision: the cursor is built from the JSON timestamp (ms), so the
// sort key must be exactly what the cursor can express, or rows inside one millisecond are skipped.

export type RefKind = 'person' | 'meeting' | 'task';
export interface Ref {
  field: string;
  kind: RefKind;
  id: string | null | undefined;
}

// FOR SHARE holds a soft-deletable target until commit: a concurrent soft delete either waits
// for this transaction or has committed first and the row no longer counts.
const REF_EXISTS: Record<RefKind, (p: string) => string> = {
  person: (p) => `EXISTS (SELECT 1 FROM person WHERE id = ${p} AND user_id = $1)`,
  // guard: task-ref-meeting-share | remove: FOR SHARE | test: test/concurrency/rest.test.ts :: naming a meeting whose delete commits
  meeting: (p) => `EXISTS (SELECT 1 FROM meeting WHERE id = ${p} AND user_id = $1 AND deleted_at IS NULL FOR SHARE)`,
  // guard: task-ref-parent-share | remove: FOR SHARE | test: test/concurrency/rest.test.ts :: subtask of a task whose delete commits
  task: (p) => `EXISTS (SELECT 1 FROM task WHERE id = ${p} AND user_id = $1 AND deleted_at IS NULL FOR SHARE)`,
};

/** 422 naming every field whose id is not a live record of `userId` (another user's id counts as missing). */
export async function assertOwnedRefs(q: Queryable, userId: string, refs: Ref[]): Promise<void> {
  const wanted = refs.filter((r): r is Ref & { id: string } => !!r.id);
  if (!wanted.length) return;
  const checks = wanted.map((r, i) => `${REF_EXISTS[r.kind](`$${i + 2}::uuid`)} AS r${i}`);
  const { rows } = await q.query<Record<string, boolean>>('refs.owned', `SELECT ${checks.join(', ')}`, [
    userId,
    ...wanted.map((r) => r.id),
  ]);
  const errors: FieldError[] = wanted
    .filter((_, i) => !rows[0][`r${i}`])
    .map((r) => ({ path: r.field, message: `${r.kind} does not exist` }));
  if (errors.length)
    throw unprocessable(`referenced records do not exist: ${errors.map((e) => e.path).join(', ')}`, errors);
}

const taskRefs = (p: TaskPatch): Ref[] => [
  { field: 'assigned_to', kind: 'person', id: p.assigned_to },
  { field: 'meeting_id', kind: 'meeting', id: p.meeting_id },
  { field: 'parent_task_id', kind: 'task', id: p.parent_task_id },
];

export async function createTask(
  q: Queryable,
  userId: string,
  input: TaskInput,
  source: TaskSource = 'user',
): Promise<Task> {
  await assertOwnedRefs(q, userId, taskRefs(input));
  const { rows } = await q.query<Task>(
    'task.create',
    `INSERT INTO task (user_id, content, status, source, due_date, assigned_to, meeting_id, parent_task_id)
     VALUES ($1, $2, COALESCE($3, 'pending'), $4, $5, $6, $7, $8) RETURNING ${COLUMNS}`,
    [
      userId,
      input.content,
      input.status ?? null,
      source,
      input.due_date ?? null,
      input.assigned_to ?? null,
      input.meeting_id ?? null,
      input.parent_task_id ?? null,
    ],
  );
  return rows[0];
}

/** The task if the actor may see it (not deleted); `forUpdate` locks it for the transaction. */
export async function getTask(
  q: Queryable,
  actor: Actor,
  id: string,
  opts: { forUpdate?: boolean } = {},
): Promise<Task | null> {
  const { rows } = await q.query<Task>(
    'task.get',
    `SELECT ${COLUMNS} FROM task WHERE id = $1 AND ($2::uuid IS NULL OR user_id = $2) AND deleted_at IS NULL${opts.forUpdate ? ' FOR UPDATE' : ''}`,
    [id, actor.userId],
  );
  return rows[0] ?? null;
}

export interface TaskFilter {
  limit: number;
  cursor?: string;
  meeting_id?: string;
  status?: TaskStatus;
  assigned_to?: string;
  source?: TaskSource;
  parent_task_id?: string;
}

/** The user's live tasks, newest first. */
export async function listTasks(q: Queryable, userId: string, f: TaskFilter): Promise<Page<Task>> {
  const [afterAt, afterId] = decodeCreatedCursor(f.cursor);
  const { rows } = await q.query<Task & { page_key: string }>(
    'task.list',
    `SELECT ${COLUMNS}, ${createdKey()} FROM task
     WHERE user_id = $1 AND deleted_at IS NULL
       AND ($2::uuid IS NULL OR meeting_id = $2)
       AND ($3::text IS NULL OR status = $3)
       AND ($4::uuid IS NULL OR assigned_to = $4)
       AND ($5::task_source IS NULL OR source = $5)
       AND ($6::uuid IS NULL OR parent_task_id = $6)
       AND ($7::timestamptz IS NULL OR (created_at, id) < ($7::timestamptz, $8::uuid))
     ORDER BY created_at DESC, id DESC LIMIT $9`,
    [
      userId,
      f.meeting_id ?? null,
      f.status ?? null,
      f.assigned_to ?? null,
      f.source ?? null,
      f.parent_task_id ?? null,
      afterAt,
      afterId,
      f.limit + 1,
    ],
  );
  return toCreatedPage(rows, f.limit);
}

/** Refuses a parent that is the task itself or one of its descendants (422). */
async function assertNotOwnAncestor(q: Queryable, userId: string, id: string, parentId: string): Promise<void> {
  // Serialises re-parenting per user, so two concurrent moves cannot close a cycle between them.
  // guard: task-tree-advisory-lock | remove: await q.query('task.tree_lock', `SELECT pg_advisory_xact_lock(hashtext('task_tree:' || $1))`, [userId]); | test: test/concurrency/rest.test.ts :: would close a ring between them
  await q.query('task.tree_lock', `SELECT pg_advisory_xact_lock(hashtext('task_tree:' || $1))`, [userId]);
  const { rows } = await q.query<{ cycle: boolean }>(
    'task.ancestry',
    `WITH RECURSIVE up (id, parent_task_id) AS (
       SELECT id, parent_task_id FROM task WHERE id = $1 AND user_id = $3
       UNION
       SELECT t.id, t.parent_task_id FROM task t JOIN up ON t.id = up.parent_task_id WHERE t.user_id = $3
     ) SELECT EXISTS (SELECT 1 FROM up WHERE id = $2) AS cycle`,
    [parentId, id, userId],
  );
  if (rows[0].cycle) {
    throw unprocessable('a task cannot be its own ancestor', [
      { path: 'parent_task_id', message: 'is the task itself or one of its descendants' },
    ]);
  }
}

export async function updateTask(q: Queryable, actor: Actor, id: string, patch: TaskPatch): Promise<Task | null> {
  // Locked and read again after any concurrent delete commits: a deleted task is not updated (404).
  // guard: task-update-for-update | remove: { forUpdate: true } | test: test/concurrency/rest.test.ts :: PATCH racing a DELETE of a task
  const task = await getTask(q, actor, id, { forUpdate: true });
  if (!task) return null;
  await assertOwnedRefs(q, task.user_id, taskRefs(patch));
  if (patch.parent_task_id) await assertNotOwnAncestor(q, task.user_id, id, patch.parent_task_id);
  const params: unknown[] = [id];
  const set = patchSet(patch, PATCHABLE, params);
  if (!set) return task;
  const { rows } = await q.query<Task>(
    'task.update',
    `UPDATE task SET ${set}, updated_at = now() WHERE id = $1 RETURNING ${COLUMNS}`,
    params,
  );
  return rows[0];
}

/** Soft-deletes the task and its live descendants (children go with their parent); [] if not visible. */
export async function softDeleteTask(q: Queryable, actor: Actor, id: string): Promise<Task[]> {
  // Lock first, then collect the tree in a later statement, so a child committed while we waited is included.
  // guard: task-delete-tree-lock | remove: , { forUpdate: true } | test: test/concurrency/row-locks.test.ts :: child task whose creation commits while its parent
  if (!(await getTask(q, actor, id, { forUpdate: true }))) return [];
  const { rows } = await q.query<Task>(
    'task.soft_delete',
    `WITH RECURSIVE tree (id) AS (
       SELECT id FROM task WHERE id = $1 AND ($2::uuid IS NULL OR user_id = $2) AND deleted_at IS NULL
       UNION
       SELECT t.id FROM task t JOIN tree ON t.parent_task_id = tree.id WHERE t.deleted_at IS NULL
     )
     UPDATE task SET deleted_at = now(), updated_at = now() WHERE id IN (SELECT id FROM tree) RETURNING ${COLUMNS}`,
    [id, actor.userId],
  );
  return rows;
}
