// Chat messages live under their thread: /threads/{id}/messages.
import type { OpenAPIHono } from '@hono/zod-openapi';
import { notFound } from '@mi/lib/errors';
import { getThread, listMessages } from '@mi/lib/repositories/threads';
import { addMessage, deleteMessage } from '@mi/lib/use-cases/threads';
import { actorOf } from '../../actor';
import { commit } from '../../commit';
import type { AppEnv } from '../../env';
import { IdParam, jsonBody, jsonResponse, notFoundResponse, op, page, PageQuery, z } from '../../openapi';
import { ChatMessageSchema, CreateMessageBody, MessageParams } from './schema';

const create = op({
  method: 'post',
  path: '/threads/{id}/messages',
  operationId: 'createChatMessage',
  tags: ['threads'],
  summary: 'Append a message to a thread',
  description: 'Broadcasts EntityChanged { entity: chat_message, action: created }.',
  auth: ['bearer'],
  idempotent: true,
  request: { params: IdParam, ...jsonBody(CreateMessageBody) },
  responses: { 201: jsonResponse(ChatMessageSchema, 'the created message'), 404: notFoundResponse('thread') },
});

const list = op({
  method: 'get',
  path: '/threads/{id}/messages',
  operationId: 'listChatMessages',
  tags: ['threads'],
  summary: "A thread's messages, oldest first (soft-deleted ones are not listed)",
  description: "Pages through a thread's messages, oldest first; soft-deleted messages are not listed.",
  auth: ['bearer'],
  request: { params: IdParam, query: z.object(PageQuery) },
  responses: {
    200: jsonResponse(page(ChatMessageSchema, 'ChatMessagePage'), 'a page of messages'),
    404: notFoundResponse('thread'),
  },
});

const remove = op({
  method: 'delete',
  path: '/threads/{id}/messages/{messageId}',
  operationId: 'deleteChatMessage',
  tags: ['threads'],
  summary: 'Soft-delete a message',
  description: 'Broadcasts EntityChanged { entity: chat_message, action: deleted }.',
  auth: ['bearer'],
  request: { params: MessageParams },
  responses: { 204: { description: 'deleted' }, 404: notFoundResponse('message') },
});

export function registerMessages(app: OpenAPIHono<AppEnv>) {
  app.openapi(create, (c) => {
    const { id } = c.req.valid('param');
    const body = c.req.valid('json');
    return commit(c, 201, addMessage, { threadId: id, body });
  });

  app.openapi(list, async (c) => {
    const { id } = c.req.valid('param');
    const { db } = c.var.deps;
    if (!(await getThread(db, actorOf(c), id))) throw notFound('thread');
    const result = await listMessages(db, actorOf(c), id, c.req.valid('query'));
    return c.json(result, 200);
  });

  app.openapi(remove, (c) => {
    const { id, messageId } = c.req.valid('param');
    return commit(c, 204, deleteMessage, { threadId: id, messageId });
  });
}
