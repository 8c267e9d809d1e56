import type { OpenAPIHono } from '@hono/zod-openapi';
import { notFound } from '@mi/lib/errors';
import { SERVICE } from '@mi/lib/domain/actor';
import { getMeeting } from '@mi/lib/domain/meetings';
import { createSystemTasks } from '@mi/lib/domain/system-tasks';
import { commit } from '../../commit';
import type { AppEnv } from '../../env';
import { IdParam, jsonBody, jsonResponse, notFoundResponse, op } from '../../openapi';
import { CreateSystemTasksBody, SystemTaskList } from './schema';
import { changed } from '@mi/lib/event-catalogue';

const route = op({
  method: 'post',
  path: '/meetings/{id}/tasks',
  operationId: 'createSystemTasks',
  tags: ['tasks'],
  summary: "Create system-generated tasks of a meeting, owned by the meeting's user (ML service)",
  description: 'Broadcasts EntityChanged { entity: task, action: created } per task.',
  auth: ['service'],
  idempotent: true,
  request: { params: IdParam, ...jsonBody(CreateSystemTasksBody) },
  responses: { 201: jsonResponse(SystemTaskList, 'the created tasks, in request order'), 404: notFoundResponse('meeting') },
});

export function registerCreateSystemTasks(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, (c) => {
    const { id } = c.req.valid('param');
    const { tasks } = c.req.valid('json');
    return commit(c, 201, async (tx, emit) => {
      const meeting = await getMeeting(tx, SERVICE, id);
      if (!meeting) throw notFound('meeting');
      const items = await createSystemTasks(tx, meeting, tasks);
      for (const t of items) emit(meeting.user_id, changed('task', 'created', t.id, id));
      return { items };
    });
  });
}
