import { Json, Timestamp, Uuid, z } from '../../openapi';

export const SubjectType = z.enum(['PERSON', 'MEETING']).openapi('SubjectType');

export const NoteSchema = z
  .object({
    id: Uuid,
    user_id: Uuid,
    content: z.string(),
    subject_type: SubjectType.nullable(),
    subject_id: Uuid.nullable().openapi({ description: 'the person or meeting the note is about' }),
    tags: Json.nullable(),
    created_at: Timestamp,
    updated_at: Timestamp,
  })
  .openapi('Note', {
    example: {
      id: '9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d',
      user_id: '0f8fad5b-d9cb-469f-a165-70867728950e',
      content: 'Prefers async updates',
      subject_type: 'PERSON',
      subject_id: '2c4e6a8b-0d1f-4a3c-9e5b-7d9f1b3d5f70',
      tags: ['preferences'],
      created_at: '2026-11-22T09:00:00.000Z',
      updated_at: '2026-11-22T09:00:00.000Z',
    },
  });

const content = z.string().trim().min(1).max(100_000);
const subject = {
  subject_type: SubjectType.nullable().optional(),
  subject_id: Uuid.nullable().optional().openapi({ description: "the caller's person (PERSON) or meeting (MEETING)" }),
};
const bothOrNeither = {
  message: 'subject_type and subject_id go together: give both or neither',
  path: ['subject_id'],
};

export const CreateNoteBody = z
  .object({ content, ...subject, tags: Json.optional() })
  .strict()
  .refine((b) => (b.subject_type == null) === (b.subject_id == null), bothOrNeither)
  .openapi('CreateNote');

export const PatchNoteBody = z
  .object({ content: content.optional(), ...subject, tags: Json.optional() })
  .strict()
  .refine((b) => Object.keys(b).length > 0, 'at least one field is required')
  .refine(
    (b) => 'subject_type' in b === 'subject_id' in b && (b.subject_type == null) === (b.subject_id == null),
    bothOrNeither,
  )
  .openapi('PatchNote');
