import { Json, Timestamp, Uuid, z } from '../../openapi';
import { SubjectType } from '../notes/schema';

export const AiThreadSchema = z
  .object({
    id: Uuid,
    user_id: Uuid,
    context_type: SubjectType.nullable(),
    context_id: Uuid.nullable().openapi({ description: 'the person or meeting the thread is about' }),
    deleted_at: Timestamp.nullable(),
    created_at: Timestamp,
  })
  .openapi('AiThread', {
    example: {
      id: '4b3a2918-0f7e-4d6c-9b5a-4f3e2d1c0b9a',
      user_id: '0f8fad5b-d9cb-469f-a165-70867728950e',
      context_type: 'MEETING',
      context_id: '7b0a3c52-1f0e-4f6e-9d53-0c6a1d1f2b7e',
      deleted_at: null,
      created_at: '2026-11-22T09:00:00.000Z',
    },
  });

export const ChatRole = z.enum(['user', 'assistant', 'system', 'tool']).openapi('ChatRole');

export const ChatMessageSchema = z
  .object({
    id: Uuid,
    thread_id: Uuid,
    role: ChatRole,
    content: z.string(),
    tool_calls: Json.nullable(),
    deleted_at: Timestamp.nullable(),
    created_at: Timestamp,
  })
  .openapi('ChatMessage', {
    example: {
      id: '6e5d4c3b-2a19-4f08-8e7d-6c5b4a392817',
      thread_id: '4b3a2918-0f7e-4d6c-9b5a-4f3e2d1c0b9a',
      role: 'user',
      content: 'What did we decide about the launch date?',
      tool_calls: null,
      deleted_at: null,
      created_at: '2026-11-22T09:00:00.000Z',
    },
  });

export const CreateThreadBody = z
  .object({
    context_type: SubjectType.nullable().optional(),
    context_id: Uuid.nullable()
      .optional()
      .openapi({ description: "the caller's person (PERSON) or meeting (MEETING)" }),
  })
  .strict()
  .refine((b) => (b.context_type == null) === (b.context_id == null), {
    message: 'context_type and context_id go together: give both or neither',
    path: ['context_id'],
  })
  .openapi('CreateAiThread');

export const CreateMessageBody = z
  .object({
    role: ChatRole,
    // Empty content is legitimate for an assistant turn that only carries tool_calls.
    content: z.string().max(200_000),
    tool_calls: Json.optional(),
  })
  .strict()
  .openapi('CreateChatMessage');

export const MessageParams = z.object({
  id: Uuid.openapi({ param: { name: 'id', in: 'path' } }),
  messageId: Uuid.openapi({ param: { name: 'messageId', in: 'path' } }),
});
