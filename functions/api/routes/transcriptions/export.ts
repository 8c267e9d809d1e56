import type { OpenAPIHono } from '@hono/zod-openapi';
import { notFound } from '@mi/lib/errors';
import {
  EXPORT_CONTENT_TYPES,
  EXPORT_FORMATS,
  EXPORT_MAX_SEGMENTS,
  exportLines,
  formatTranscript,
} from '@mi/lib/repositories/transcript-export';
import { getTranscription } from '@mi/lib/repositories/transcriptions';
import { actorOf } from '../../actor';
import type { AppEnv } from '../../env';
import { IdParam, notFoundResponse, op, problemResponse, z } from '../../openapi';

const text = z.string();
const route = op({
  method: 'get',
  path: '/transcriptions/{id}/export',
  operationId: 'exportTranscription',
  tags: ['transcriptions'],
  summary: 'The transcript as a WebVTT, SRT, plain-text or JSON file',
  description:
    "Segments by start_ms, each with its speaker's name: the assigned person's display_name, else the speaker label. " +
    'WebVTT cues carry the name as a voice span (`<v Name>`), SRT and text lines as `Name: `. A segment without an end lasts until the next one starts. ' +
    'In every format names and texts are flattened to one line (control characters become one space, `-->` becomes `->`): one cue per segment. ' +
    `At most ${EXPORT_MAX_SEGMENTS} segments (413 beyond).`,
  auth: ['bearer'],
  request: {
    params: IdParam,
    query: z.object({
      format: z.enum(EXPORT_FORMATS).default('vtt').openapi({ description: 'file format (default vtt)' }),
    }),
  },
  responses: {
    200: {
      description: 'the file (Content-Disposition: attachment)',
      content: {
        'text/vtt': { schema: text },
        'application/x-subrip': { schema: text },
        'text/plain': { schema: text },
        'application/json': {
          schema: z.object({
            transcription_id: z.string(),
            meeting_id: z.string(),
            segments: z.array(
              z.object({
                start_ms: z.number(),
                end_ms: z.number(),
                speaker: z.string(),
                speaker_label: z.string().nullable(),
                person_id: z.string().nullable(),
                text: z.string(),
              }),
            ),
          }),
        },
      },
    },
    404: notFoundResponse('transcription'),
    413: problemResponse(`more than ${EXPORT_MAX_SEGMENTS} segments`),
  },
});

export function registerExportTranscription(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, async (c) => {
    const { db } = c.var.deps;
    const { id } = c.req.valid('param');
    const { format } = c.req.valid('query');
    const transcription = await getTranscription(db, actorOf(c), id);
    if (!transcription) throw notFound('transcription');
    const body = formatTranscript(format, await exportLines(db, id), {
      transcription_id: id,
      meeting_id: transcription.meeting_id,
    });
    // c.text with the format's own Content-Type (it replaces text/plain).
    return c.text(body, 200, {
      'content-type': EXPORT_CONTENT_TYPES[format],
      'content-disposition': `attachment; filename="transcript-${id}.${format}"`,
      // A transcript is personal: never sniffed into HTML by a browser, never kept by a shared cache.
      'x-content-type-options': 'nosniff',
      'cache-control': 'private, no-store',
    });
  });
}
