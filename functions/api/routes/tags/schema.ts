import { Timestamp, Uuid, z } from '../../openapi';

export const TagSchema = z
  .object({ id: Uuid, user_id: Uuid, name: z.string(), created_at: Timestamp, updated_at: Timestamp })
  .openapi('Tag', {
    example: {
      id: '5c6d7e8f-9a0b-4c1d-8e2f-3a4b5c6d7e8f',
      user_id: '0f8fad5b-d9cb-469f-a165-70867728950e',
      name: 'customer',
      created_at: '2026-11-22T09:00:00.000Z',
      updated_at: '2026-11-22T09:00:00.000Z',
    },
  });

export const TagBody = z
  .object({ name: z.string().trim().min(1).max(100) })
  .strict()
  .openapi('TagInput');
