import type { OpenAPIHono } from '@hono/zod-openapi';
import { createSystemTasks } from '@mi/lib/use-cases/tasks';
import { fencedBy } from '@mi/lib/use-cases/batch-claims';
import { commit } from '../../commit';
import { mlClaimOf } from '../../ml-claim';
import type { AppEnv } from '../../env';
import { IdParam, jsonBody, jsonResponse, notFoundResponse, op } from '../../openapi';
import { CreateSystemTasksBody, SystemTaskList } from './schema';

const route = op({
  method: 'post',
  path: '/meetings/{id}/tasks',
  operationId: 'createSystemTasks',
  tags: ['tasks'],
  summary: "Create system-generated tasks of a meeting, owned by the meeting's user (ML service)",
  description: 'Broadcasts EntityChanged { entity: task, action: created } per task.',
  auth: ['service'],
  idempotent: true,
  mlClaim: true,
  request: { params: IdParam, ...jsonBody(CreateSystemTasksBody) },
  responses: {
    201: jsonResponse(SystemTaskList, 'the created tasks, in request order'),
    404: notFoundResponse('meeting'),
  },
});

export function registerCreateSystemTasks(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, (c) => {
    const { id } = c.req.valid('param');
    const { tasks } = c.req.valid('json');
    return commit(c, 201, fencedBy(mlClaimOf(c), { meetingId: id }, createSystemTasks), { meetingId: id, tasks });
  });
}
