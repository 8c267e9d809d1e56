// Tasks (the user's and the ML service's system tasks of a meeting) and their sub-tasks.
import { SERVICE } from '../domain/actor';
import { getMeeting } from '../repositories/meetings';
import * as subTasks from '../repositories/sub-tasks';
import type { SubTask } from '../repositories/sub-tasks';
import {
  createSystemTasks as insertSystemTasks,
  softDeleteSystemTasks,
  type SystemTaskInput,
} from '../repositories/system-tasks';
import * as tasks from '../repositories/tasks';
import type { Task } from '../repositories/tasks';
import { notFound } from '../errors';
import { changed } from '../events/catalogue';
import { checkPrecondition, userOf, type Precondition, type UseCase } from './use-case';

export const createTask: UseCase<tasks.TaskInput, Task> = async (ctx, body) => {
  const userId = userOf(ctx);
  const task = await tasks.createTask(ctx.tx, userId, body, 'user');
  ctx.emit(userId, changed('task', 'created', task.id, task.meeting_id));
  return task;
};

export const updateTask: UseCase<{ id: string; patch: tasks.TaskPatch; precondition?: Precondition }, Task> = async (
  ctx,
  { id, patch, precondition },
) => {
  // guard: task-patch-if-match-lock | remove: , { forUpdate: true } | test: test/concurrency/if-match.test.ts :: If-Match PATCH of a 'task'
  await checkPrecondition(precondition, () => tasks.getTask(ctx.tx, ctx.actor, id, { forUpdate: true }));
  const task = await tasks.updateTask(ctx.tx, ctx.actor, id, patch);
  if (!task) throw notFound('task');
  ctx.emit(task.user_id, changed('task', 'updated', task.id, task.meeting_id));
  return task;
};

/** Soft-deletes the task (and what the domain deletes with it), one event each. */
export const deleteTask: UseCase<{ id: string; precondition?: Precondition }, void> = async (
  ctx,
  { id, precondition },
) => {
  // guard: task-delete-if-match-lock | remove: , { forUpdate: true } | test: test/concurrency/if-match.test.ts :: If-Match DELETE of a 'task'
  await checkPrecondition(precondition, () => tasks.getTask(ctx.tx, ctx.actor, id, { forUpdate: true }));
  const deleted = await tasks.softDeleteTask(ctx.tx, ctx.actor, id);
  if (!deleted.length) throw notFound('task');
  for (const t of deleted) ctx.emit(t.user_id, changed('task', 'deleted', t.id, t.meeting_id));
};

/** The ML service's tasks of any user's meeting. */
export const createSystemTasks: UseCase<{ meetingId: string; tasks: SystemTaskInput[] }, { items: Task[] }> = async (
  ctx,
  input,
) => {
  const meeting = await getMeeting(ctx.tx, SERVICE, input.meetingId);
  if (!meeting) throw notFound('meeting');
  const items = await insertSystemTasks(ctx.tx, meeting, input.tasks);
  for (const t of items) ctx.emit(meeting.user_id, changed('task', 'created', t.id, input.meetingId));
  return { items };
};

export const deleteSystemTasks: UseCase<{ meetingId: string }, void> = async (ctx, { meetingId }) => {
  const meeting = await getMeeting(ctx.tx, SERVICE, meetingId);
  if (!meeting) throw notFound('meeting');
  for (const taskId of await softDeleteSystemTasks(ctx.tx, meetingId))
    ctx.emit(meeting.user_id, changed('task', 'deleted', taskId, meetingId));
};

export const createSubTask: UseCase<{ taskId: string; body: subTasks.SubTaskInput }, SubTask> = async (
  ctx,
  { taskId, body },
) => {
  // Locked so the task cannot be deleted between the check and the insert.
  // guard: sub-task-create-task-lock | remove: , { forUpdate: true } | test: test/concurrency/row-locks.test.ts :: a sub-task of a task whose delete commits
  const task = await tasks.getTask(ctx.tx, ctx.actor, taskId, { forUpdate: true });
  if (!task) throw notFound('task');
  const sub = await subTasks.createSubTask(ctx.tx, task.user_id, task.id, body);
  ctx.emit(task.user_id, changed('sub_task', 'created', sub.id, task.meeting_id));
  return sub;
};

export const updateSubTask: UseCase<{ id: string; patch: subTasks.SubTaskPatch }, SubTask> = async (
  ctx,
  { id, patch },
) => {
  const found = await subTasks.updateSubTask(ctx.tx, ctx.actor, id, patch);
  if (!found) throw notFound('sub-task');
  ctx.emit(found.user_id, changed('sub_task', 'updated', id, found.meeting_id));
  return found.sub_task;
};

export const deleteSubTask: UseCase<{ id: string }, void> = async (ctx, { id }) => {
  const found = await subTasks.deleteSubTask(ctx.tx, ctx.actor, id);
  if (!found) throw notFound('sub-task');
  ctx.emit(found.user_id, changed('sub_task', 'deleted', id, found.meeting_id));
};
