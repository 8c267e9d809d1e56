// AI threads and their chat messages: every query tenant-scoped through the Actor (messages
// through their thread); soft-deleted threads hide their messages, soft-deleted rows are hidden.
import { jsonParam } from '../db/params';
import type { Queryable } from '../db/pool';
import type { Actor } from '../domain/actor';
import { subjectRef, type SubjectType } from './notes';
import { createdKey, decodeCreatedCursor, toCreatedPage, type Page } from '../domain/pagination';
import { assertOwnedRefs } from './tasks';

export type ContextType = SubjectType;
export type ChatRole = 'user' | 'assistant' | 'system' | 'tool';

export interface AiThread {
  id: string;
  user_id: string;
  context_type: ContextType | null;
  context_id: string | null;
  deleted_at: string | null;
  created_at: string;
}

export interface ChatMessage {
  id: string;
  thread_id: string;
  role: ChatRole;
  content: string;
  tool_calls: unknown;
  deleted_at: string | null;
  created_at: string;
}

export interface ThreadInput {
  context_type?: ContextType | null;
  context_id?: string | null;
}

export interface MessageInput {
  role: ChatRole;
  content: string;
  tool_calls?: unknown;
}

const THREAD_COLUMNS = 'id, user_id, context_type, context_id, deleted_at, created_at';
const MESSAGE_COLUMNS = 'm.id, m.thread_id, m.role, m.content, m.tool_calls, m.deleted_at, m.created_at';
const VISIBLE = '($2::uuid IS NULL OR user_id = $2) AND deleted_at IS NULL';

export async function createThread(q: Queryable, userId: string, input: ThreadInput): Promise<AiThread> {
  await assertOwnedRefs(q, userId, subjectRef('context_id', input.context_type, input.context_id));
  const { rows } = await q.query<AiThread>(
    'ai_thread.create',
    `INSERT INTO ai_thread (user_id, context_type, context_id) VALUES ($1, $2, $3) RETURNING ${THREAD_COLUMNS}`,
    [userId, input.context_type ?? null, input.context_id ?? null],
  );
  return rows[0];
}

export async function getThread(q: Queryable, actor: Actor, id: string): Promise<AiThread | null> {
  const { rows } = await q.query<AiThread>(
    'ai_thread.get',
    `SELECT ${THREAD_COLUMNS} FROM ai_thread WHERE id = $1 AND ${VISIBLE}`,
    [id, actor.userId],
  );
  return rows[0] ?? null;
}

export interface ThreadFilter {
  limit: number;
  cursor?: string;
  context_type?: ContextType;
  context_id?: string;
}

/** The user's live threads, newest first. */
export async function listThreads(q: Queryable, userId: string, f: ThreadFilter): Promise<Page<AiThread>> {
  const [afterAt, afterId] = decodeCreatedCursor(f.cursor);
  const { rows } = await q.query<AiThread & { page_key: string }>(
    'ai_thread.list',
    `SELECT ${THREAD_COLUMNS}, ${createdKey()} FROM ai_thread
     WHERE user_id = $1 AND deleted_at IS NULL
       AND ($2::text IS NULL OR context_type = $2)
       AND ($3::uuid IS NULL OR context_id = $3)
       AND ($4::timestamptz IS NULL OR (created_at, id) < ($4::timestamptz, $5::uuid))
     ORDER BY created_at DESC, id DESC LIMIT $6`,
    [userId, f.context_type ?? null, f.context_id ?? null, afterAt, afterId, f.limit + 1],
  );
  return toCreatedPage(rows, f.limit);
}

export async function softDeleteThread(q: Queryable, actor: Actor, id: string): Promise<AiThread | null> {
  const { rows } = await q.query<AiThread>(
    'ai_thread.soft_delete',
    `UPDATE ai_thread SET deleted_at = now() WHERE id = $1 AND ${VISIBLE} RETURNING ${THREAD_COLUMNS}`,
    [id, actor.userId],
  );
  return rows[0] ?? null;
}

/** Call after checking the thread is visible (getThread). */
export async function addMessage(q: Queryable, threadId: string, input: MessageInput): Promise<ChatMessage> {
  // Messages are listed by created_at, so it must grow within a thread even when the clock is
  // coarse (PGlite ticks in milliseconds) or steps back: at least 1 µs after the latest message.
  const { rows } = await q.query<ChatMessage>(
    'chat_message.create',
    `INSERT INTO chat_message AS m (thread_id, role, content, tool_calls, created_at)
     VALUES ($1, $2, $3, $4, GREATEST(clock_timestamp(),
       (SELECT max(created_at) + interval '1 microsecond' FROM chat_message WHERE thread_id = $1)))
     RETURNING ${MESSAGE_COLUMNS}`,
    [threadId, input.role, input.content, jsonParam(input.tool_calls)],
  );
  return rows[0];
}

/** Live messages of a visible thread, oldest first (exact creation order). */
export async function listMessages(
  q: Queryable,
  actor: Actor,
  threadId: string,
  f: { limit: number; cursor?: string },
): Promise<Page<ChatMessage>> {
  const [afterAt, afterId] = decodeCreatedCursor(f.cursor);
  const { rows } = await q.query<ChatMessage & { page_key: string }>(
    'chat_message.list',
    `SELECT ${MESSAGE_COLUMNS}, ${createdKey('m.')} FROM chat_message m
     JOIN ai_thread t ON t.id = m.thread_id AND ($2::uuid IS NULL OR t.user_id = $2) AND t.deleted_at IS NULL
     WHERE m.thread_id = $1 AND m.deleted_at IS NULL
       AND ($3::timestamptz IS NULL OR (m.created_at, m.id) > ($3::timestamptz, $4::uuid))
     ORDER BY m.created_at, m.id LIMIT $5`,
    [threadId, actor.userId, afterAt, afterId, f.limit + 1],
  );
  return toCreatedPage(rows, f.limit);
}

export async function softDeleteMessage(
  q: Queryable,
  actor: Actor,
  threadId: string,
  id: string,
): Promise<ChatMessage | null> {
  const { rows } = await q.query<ChatMessage>(
    'chat_message.soft_delete',
    `UPDATE chat_message m SET deleted_at = now()
     FROM ai_thread t
     WHERE m.id = $1 AND m.thread_id = $3 AND m.deleted_at IS NULL
       AND t.id = m.thread_id AND ($2::uuid IS NULL OR t.user_id = $2) AND t.deleted_at IS NULL
     RETURNING ${MESSAGE_COLUMNS}`,
    [id, actor.userId, threadId],
  );
  return rows[0] ?? null;
}
