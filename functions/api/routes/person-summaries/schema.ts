import { Json, Timestamp, Uuid, z } from '../../openapi';

export const PersonSummarySchema = z
  .object({
    id: Uuid,
    person_id: Uuid,
    author_id: Uuid,
    summary: z.string(),
    context: Json.nullable(),
    created_at: Timestamp,
    updated_at: Timestamp,
  })
  .openapi('PersonSummary', {
    example: {
      id: '9a1c2b3d-4e5f-4a6b-8c7d-0e1f2a3b4c5d',
      person_id: '3f2b8c1e-5a4d-4e7b-9c0a-1d2e3f4a5b6c',
      author_id: '0f8fad5b-d9cb-469f-a165-70867728950e',
      summary: 'Leads the platform team; prefers async updates.',
      context: { meeting_id: '7b0a3c52-1f0e-4f6e-9d53-0c6a1d1f2b7e' },
      created_at: '2026-11-22T09:00:00.000Z',
      updated_at: '2026-11-22T09:00:00.000Z',
    },
  });

const summary = z.string().trim().min(1).max(20_000);

export const CreateSummaryBody = z
  .object({ summary, context: Json.optional() })
  .strict()
  .openapi('CreatePersonSummary');

export const PatchSummaryBody = z
  .object({ summary: summary.optional(), context: Json.optional() })
  .strict()
  .refine((b) => Object.keys(b).length > 0, 'at least one field is required')
  .openapi('PatchPersonSummary');
