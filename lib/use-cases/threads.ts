// AI chat threads and their messages.
import { meetingOf } from '../repositories/notes';
import * as threads from '../repositories/threads';
import type { AiThread, ChatMessage } from '../repositories/threads';
import { notFound } from '../errors';
import { changed } from '../events/catalogue';
import { userOf, type UseCase } from './use-case';

export const createThread: UseCase<threads.ThreadInput, AiThread> = async (ctx, body) => {
  const userId = userOf(ctx);
  const thread = await threads.createThread(ctx.tx, userId, body);
  ctx.emit(userId, changed('ai_thread', 'created', thread.id, meetingOf(thread.context_type, thread.context_id)));
  return thread;
};

export const deleteThread: UseCase<{ id: string }, void> = async (ctx, { id }) => {
  const thread = await threads.softDeleteThread(ctx.tx, ctx.actor, id);
  if (!thread) throw notFound('thread');
  ctx.emit(thread.user_id, changed('ai_thread', 'deleted', id, meetingOf(thread.context_type, thread.context_id)));
};

export const addMessage: UseCase<{ threadId: string; body: threads.MessageInput }, ChatMessage> = async (
  ctx,
  { threadId, body },
) => {
  const thread = await threads.getThread(ctx.tx, ctx.actor, threadId);
  if (!thread) throw notFound('thread');
  const message = await threads.addMessage(ctx.tx, thread.id, body);
  ctx.emit(
    thread.user_id,
    changed('chat_message', 'created', message.id, meetingOf(thread.context_type, thread.context_id)),
  );
  return message;
};

export const deleteMessage: UseCase<{ threadId: string; messageId: string }, void> = async (
  ctx,
  { threadId, messageId },
) => {
  const thread = await threads.getThread(ctx.tx, ctx.actor, threadId);
  const message = thread && (await threads.softDeleteMessage(ctx.tx, ctx.actor, threadId, messageId));
  if (!thread || !message) throw notFound('message');
  ctx.emit(
    thread.user_id,
    changed('chat_message', 'deleted', messageId, meetingOf(thread.context_type, thread.context_id)),
  );
};
