import { Timestamp, Uuid, z } from '../../openapi';

export const AssignLabelBody = z
  .object({
    speaker_label: z.string().min(1).max(200).openapi({ example: 'SPEAKER_0' }),
    person_id: Uuid.openapi({ description: 'one of your people' }),
  })
  .strict()
  .openapi('AssignSpeakerLabel');

export const AssignLabelResult = z
  .object({ updated_count: z.number().int().openapi({ description: 'segments of the meeting with this label, all now attributed to the person' }) })
  .openapi('SpeakerLabelAssigned');

export const LabelAssignmentSchema = z
  .object({ meeting_id: Uuid, speaker_label: z.string(), person_id: Uuid, created_at: Timestamp, updated_at: Timestamp })
  .openapi('SpeakerLabelAssignment');

export const LabelParams = z.object({
  id: Uuid.openapi({ param: { name: 'id', in: 'path' } }),
  speaker_label: z
    .string()
    .min(1)
    .max(200)
    .openapi({ param: { name: 'speaker_label', in: 'path' }, example: 'SPEAKER_0', description: 'the label as assigned (URL-encoded)' }),
});
