import { Timestamp, Uuid, z } from '../../openapi';

export const AssignLabelBody = z
  .object({
    speaker_label: z.string().min(1).max(200).openapi({ example: 'SPEAKER_0' }),
    person_id: Uuid.openapi({ description: 'one of your people' }),
  })
  .strict()
  .openapi('AssignSpeakerLabel');

export const AssignLabelResult = z
  .object({
    updated_count: z
      .number()
      .int()
      .openapi({ description: 'segments of the meeting with this label, all now attributed to the person' }),
  })
  .openapi('SpeakerLabelAssigned');

export const SpeakerLabelSchema = z
  .object({
    meeting_id: Uuid,
    speaker_label: z.string(),
    person_id: Uuid.nullable().openapi({ description: 'the person the label is assigned to; null when unassigned' }),
    segment_count: z.number().int().openapi({ description: "the meeting's segments with this label" }),
    created_at: Timestamp.nullable().openapi({ description: 'of the assignment; null when unassigned' }),
    updated_at: Timestamp.nullable().openapi({ description: 'of the assignment; null when unassigned' }),
    suggestions: z
      .array(
        z.object({
          person_id: Uuid,
          display_name: z.string(),
          similarity: z
            .number()
            .openapi({ description: "cosine similarity of the person's voice_vector to the label's voice" }),
        }),
      )
      .max(3)
      .openapi({
        description:
          'unassigned labels: up to 3 of your people whose voice is closest, best first; [] for an assigned label',
      }),
  })
  .openapi('SpeakerLabel');

export const LabelParams = z.object({
  id: Uuid.openapi({ param: { name: 'id', in: 'path' } }),
  speaker_label: z
    .string()
    .min(1)
    .max(200)
    .openapi({
      param: { name: 'speaker_label', in: 'path' },
      example: 'SPEAKER_0',
      description: 'the label as assigned (URL-encoded)',
    }),
});
