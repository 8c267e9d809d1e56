import type { OpenAPIHono } from '@hono/zod-openapi';
import { audioProxyUrl } from '@mi/lib/audio-links';
import { DomainError, notFound } from '@mi/lib/errors';
import { getAudioFile } from '@mi/lib/domain/audio';
import { getMeeting } from '@mi/lib/domain/meetings';
import { userIdOf } from '../../actor';
import type { AppEnv } from '../../env';
import { IdParam, jsonResponse, op, problemResponse } from '../../openapi';
import { AudioUrlSchema } from './schema';

const route = op({
  method: 'get',
  path: '/meetings/{id}/audio-url',
  operationId: 'getMeetingAudioUrl',
  tags: ['audio'],
  summary: 'Short-lived playback links of the meeting audio',
  description:
    '`url` is a signed object-storage link valid for RECORDING_AUDIO_URL_TTL_SECONDS; `proxy_url` is the per-user signed link to ' +
    'GET /meetings/{id}/audio with the same expiry. Answered with `Cache-Control: private, no-store`.',
  auth: ['bearer'],
  request: { params: IdParam },
  responses: {
    200: {
      ...jsonResponse(AudioUrlSchema, 'the links'),
      headers: { 'Cache-Control': { schema: { type: 'string', example: 'private, no-store' } } },
    },
    404: problemResponse('meeting not found, or meeting has no audio (distinct `detail`)'),
  },
});

export function registerAudioUrl(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, async (c) => {
    const { db, store, config } = c.var.deps;
    const userId = userIdOf(c);
    const { id } = c.req.valid('param');
    if (!(await getMeeting(db, { userId }, id))) throw notFound('meeting');
    const audio = await getAudioFile(db, id);
    if (!audio) throw new DomainError('not_found', 'meeting has no audio');
    const { url, expiresAt } = await store.signedReadUrl(audio.storage_path, config.RECORDING_AUDIO_URL_TTL_SECONDS);
    const exp = Math.floor(expiresAt.getTime() / 1000);
    c.header('Cache-Control', 'private, no-store');
    return c.json({ url, expires_at: expiresAt.toISOString(), proxy_url: audioProxyUrl(config.PUBLIC_BASE_URL, config.AUDIO_URL_SIGNING_KEY, id, userId, exp) }, 200);
  });
}
