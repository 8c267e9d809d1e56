import type { OpenAPIHono } from '@hono/zod-openapi';
import { notFound } from '@mi/lib/errors';
import { SERVICE } from '@mi/lib/domain/actor';
import { getMeeting } from '@mi/lib/domain/meetings';
import { softDeleteSystemTasks } from '@mi/lib/domain/system-tasks';
import { commit } from '../../commit';
import type { AppEnv } from '../../env';
import { IdParam, notFoundResponse, op } from '../../openapi';
import { DeleteSystemTasksQuery } from './schema';
import { changed } from '@mi/lib/event-catalogue';

const route = op({
  method: 'delete',
  path: '/meetings/{id}/tasks',
  operationId: 'deleteSystemTasks',
  tags: ['tasks'],
  summary: "Soft-delete all system-generated tasks of the meeting (before re-extraction); user tasks stay",
  description: 'Broadcasts EntityChanged { entity: task, action: deleted } per task. Any source other than system is 422.',
  auth: ['service'],
  request: { params: IdParam, query: DeleteSystemTasksQuery },
  responses: { 204: { description: 'deleted' }, 404: notFoundResponse('meeting') },
});

export function registerDeleteSystemTasks(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, (c) => {
    const { id } = c.req.valid('param');
    return commit(c, 204, async (tx, emit) => {
      const meeting = await getMeeting(tx, SERVICE, id);
      if (!meeting) throw notFound('meeting');
      for (const taskId of await softDeleteSystemTasks(tx, id)) {
        emit(meeting.user_id, changed('task', 'deleted', taskId, id));
      }
    });
  });
}
