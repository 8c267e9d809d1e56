import { Timestamp, Uuid, z } from '../../openapi';

export const AudioFileSchema = z
  .object({
    meeting_id: Uuid,
    storage_path: z.string(),
    content_type: z.string(),
    byte_count: z.number().int(),
    created_at: Timestamp,
  })
  .openapi('MeetingAudioFile');

export const AudioUrlSchema = z
  .object({
    url: z
      .string()
      .url()
      .openapi({ description: 'short-lived signed object-storage link (RECORDING_AUDIO_URL_TTL_SECONDS)' }),
    expires_at: Timestamp,
    proxy_url: z
      .string()
      .url()
      .openapi({ description: 'per-user signed link to GET /meetings/{id}/audio, valid until expires_at' }),
  })
  .openapi('AudioUrl');

export const binaryContent = (types: string[]) =>
  Object.fromEntries(types.map((t) => [t, { schema: z.string().openapi({ type: 'string', format: 'binary' }) }]));
