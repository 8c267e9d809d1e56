import { Json, Timestamp, Uuid, Vector192, z } from '../../openapi';

const personFields = {
  id: Uuid,
  user_id: Uuid,
  display_name: z.string(),
  full_name: z.string().nullable(),
  title: z.string().nullable(),
  role: z.string().nullable(),
  email: z.string().nullable(),
  company: z.string().nullable(),
  tags: Json.nullable(),
  voice_model_status: z.enum(['untrained', 'training', 'ready']),
  voice_confidence: z
    .number()
    .nullable()
    .openapi({ description: 'mean cosine similarity of the embeddings that built voice_vector to it (0-1)' }),
  created_at: Timestamp,
  updated_at: Timestamp,
};

const example = {
  id: '3f2b8c1e-5a4d-4e7b-9c0a-1d2e3f4a5b6c',
  user_id: '0f8fad5b-d9cb-469f-a165-70867728950e',
  display_name: 'Ada',
  full_name: 'Ada Lovelace',
  title: 'Engineer',
  role: null,
  email: 'ada@example.com',
  company: 'Analytical Engines',
  tags: ['vip'],
  voice_model_status: 'untrained',
  voice_confidence: null,
  created_at: '2026-11-22T09:00:00.000Z',
  updated_at: '2026-11-22T09:00:00.000Z',
};

/** A person as lists and voice matches return it: everything but the voice_vector. */
export const PersonBriefSchema = z.object(personFields).openapi('PersonBrief', { example });

export const PersonSchema = z
  .object({
    ...personFields,
    voice_vector: Vector192.nullable().openapi({
      description:
        "speaker embedding (192 numbers): the L2-normalised sum of the person's voice samples (GET /people/{id}/voice-samples); null without samples",
    }),
  })
  .openapi('Person', { example: { ...example, voice_vector: null } });

const name = z.string().trim().min(1).max(200);
const optionalText = z.string().max(500).nullable().optional();

const userFields = {
  full_name: optionalText,
  title: optionalText,
  role: optionalText,
  email: z.string().max(320).nullable().optional(),
  company: optionalText,
  tags: Json.optional(),
};

export const CreatePersonBody = z
  .object({ display_name: name.openapi({ description: "unique among the caller's people" }), ...userFields })
  .strict()
  .openapi('CreatePerson');

export const PatchPersonBody = z
  .object({ display_name: name.optional(), ...userFields })
  .strict()
  .refine((b) => Object.keys(b).length > 0, 'at least one field is required')
  .openapi('PatchPerson', { description: 'voice fields are not writable' });

export const MergePersonBody = z
  .object({ person_id: Uuid.openapi({ description: 'the person merged into {id} and then deleted' }) })
  .strict()
  .openapi('MergePerson');

export const VoiceSampleSchema = z
  .object({
    meeting_id: Uuid,
    segment_id: Uuid.openapi({ description: 'the transcript segment whose feature_vector is the sample' }),
    speaker_label: z.string().nullable(),
    created_at: Timestamp.openapi({ description: 'when the segment became a sample of this person' }),
  })
  .openapi('VoiceSample');
