import { Json, Uuid, z } from '../../openapi';

const TopicInput = z
  .object({
    name: z.string().trim().min(1).max(500),
    summary: z.string().max(100_000),
    is_final: z.boolean().optional().openapi({ description: 'default false' }),
    segment_ids: z.array(Uuid).max(5000).optional(),
  })
  .strict()
  .openapi('TopicInput');

export const SynthesisBody = z
  .object({
    summary: z.string().max(100_000),
    key_points: Json.refine((v) => v !== undefined, 'required').openapi({ description: 'any JSON value' }),
    headline: z.string().max(1000).nullable().optional().openapi({ description: 'replaced only when given' }),
    topics: z
      .array(TopicInput)
      .max(500)
      .optional()
      .openapi({ description: "when given, replaces all of the meeting's topics" }),
  })
  .strict()
  .openapi('Synthesis', {
    example: {
      summary: 'The team agreed on the Q3 budget.',
      key_points: ['Budget approved', 'Hiring starts in May'],
      headline: 'Q3 budget approved',
      topics: [{ name: 'Budget', summary: 'Q3 numbers reviewed and approved', is_final: true, segment_ids: [] }],
    },
  });
