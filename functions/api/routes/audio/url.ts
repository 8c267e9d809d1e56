import type { OpenAPIHono } from '@hono/zod-openapi';
import { audioProxyUrl } from '@mi/lib/audio/playback-links';
import { DomainError, notFound } from '@mi/lib/errors';
import { getAudioFile } from '@mi/lib/repositories/audio';
import { getMeeting } from '@mi/lib/repositories/meetings';
import { getRecording } from '@mi/lib/repositories/recordings';
import { finalizedAudioPath } from '@mi/lib/repositories/takes';
import { actorOf } from '../../actor';
import type { AppEnv } from '../../env';
import { IdParam, jsonResponse, op, problemResponse, z } from '../../openapi';
import { AudioVersionQuery } from '../recording/schema';
import { AudioUrlSchema } from './schema';

/** 422 naming audio_version: the take exists but has no composed audio yet. */
export const takeNotFinalized = (v: number) =>
  new DomainError(
    'unprocessable',
    `audio_version ${v} is not finalized yet; its audio is playable once it is (see GET /meetings/{id}/recording/takes)`,
    [{ path: 'audio_version', message: 'the take is not finalized' }],
  );

const route = op({
  method: 'get',
  path: '/meetings/{id}/audio-url',
  operationId: 'getMeetingAudioUrl',
  tags: ['audio'],
  summary: 'Short-lived playback links of the meeting audio',
  description:
    '`url` is a signed object-storage link valid for RECORDING_AUDIO_URL_TTL_SECONDS; `proxy_url` is the per-user signed link to ' +
    'GET /meetings/{id}/audio with the same expiry. Answered with `Cache-Control: private, no-store`. ' +
    "Without `audio_version`: the meeting's audio (an upload, or the latest finalized take). With `audio_version=N`: that take's " +
    'composed audio, for any finalized take (the proxy link then carries `audio_version` under its signature). ' +
    'An unknown take answers 404; a take that is not finalized yet answers 422 naming `audio_version`. ' +
    "The service token (the ML batch pass reading a finalized take, or an upload without `audio_version`) is answered like the owner, its proxy link the owner's.",
  auth: ['bearer', 'service'],
  request: {
    params: IdParam,
    query: z.object({
      audio_version: AudioVersionQuery.optional().openapi({
        description: 'a finalized take (default: the latest finalized take)',
      }),
    }),
  },
  responses: {
    200: {
      ...jsonResponse(AudioUrlSchema, 'the links'),
      headers: { 'Cache-Control': { schema: { type: 'string', example: 'private, no-store' } } },
    },
    404: problemResponse('meeting not found, no such take, or no audio (distinct `detail`)'),
    422: problemResponse('`audio_version` names a take that is not finalized yet (or is not a positive integer)'),
    503: problemResponse('object storage cannot sign a link now; retry after `Retry-After` seconds'),
  },
});

export function registerAudioUrl(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, async (c) => {
    const { db, store, config } = c.var.deps;
    const { id } = c.req.valid('param');
    const meeting = await getMeeting(db, actorOf(c), id);
    if (!meeting) throw notFound('meeting');
    const { audio_version: version } = c.req.valid('query');
    let path: string;
    if (version === undefined) {
      const audio = await getAudioFile(db, id);
      if (!audio) throw new DomainError('not_found', 'meeting has no audio');
      path = audio.storage_path;
    } else {
      const take = finalizedAudioPath(await getRecording(db, id, version));
      if ('missing' in take) throw take.missing === 'take' ? notFound('recording') : takeNotFinalized(version);
      // A take finalized with no frame stored has no audio.
      if (!(await store.stat(take.path)))
        throw new DomainError('not_found', `audio_version ${version} has no audio (no frame was stored)`);
      path = take.path;
    }
    const { url, expiresAt } = await store.signedReadUrl(path, config.RECORDING_AUDIO_URL_TTL_SECONDS);
    const exp = Math.floor(expiresAt.getTime() / 1000);
    c.header('Cache-Control', 'private, no-store');
    return c.json(
      {
        url,
        expires_at: expiresAt.toISOString(),
        proxy_url: audioProxyUrl(
          config.PUBLIC_BASE_URL,
          config.AUDIO_URL_SIGNING_KEY,
          id,
          meeting.user_id,
          exp,
          version,
        ),
      },
      200,
    );
  });
}
