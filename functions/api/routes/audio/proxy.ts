import { Readable } from 'node:stream';
import { UUID_PATTERN } from '@mi/lib/async';
import { createRoute, type OpenAPIHono } from '@hono/zod-openapi';
import { verifyAudioLink } from '@mi/lib/audio/playback-links';
import { DomainError } from '@mi/lib/errors';
import { getAudioFile } from '@mi/lib/repositories/audio';
import { getMeeting } from '@mi/lib/repositories/meetings';
import { getRecording } from '@mi/lib/repositories/recordings';
import { finalizedAudioPath } from '@mi/lib/repositories/takes';
import type { AppEnv } from '../../env';
import { IdParam, problemResponse, z } from '../../openapi';
import { sendProblem } from '@mi/lib/errors/problem';
import { parseRange } from './range';
import { binaryContent } from './schema';

const AUDIO_TYPES = ['audio/wav', 'audio/webm', 'audio/*'];

// No security scheme: the signed query is the credential (a per-user capability).
const route = createRoute({
  method: 'get',
  path: '/meetings/{id}/audio',
  operationId: 'streamMeetingAudio',
  tags: ['audio'],
  summary: 'Stream the meeting audio through a per-user signed link (from proxy_url), with Range support',
  description:
    'Needs no other credential. `sig` is base64url HMAC-SHA256 with AUDIO_URL_SIGNING_KEY over "{meeting_id}:{user_id}:{exp}", ' +
    'or, for a link to one take (`audio_version` present), over "{meeting_id}:{user_id}:{exp}:{audio_version}". ' +
    'A bad, expired, other-meeting or other-user signature answers 403. Supports a single `Range: bytes=` range (206, 416).',
  security: [],
  request: {
    params: IdParam,
    query: z.object({
      uid: z.string().optional().openapi({ description: 'user id the link was made for' }),
      exp: z.string().optional().openapi({ description: 'expiry, unix seconds' }),
      audio_version: z
        .string()
        .optional()
        .openapi({ description: 'the take the link plays (signed with it); absent: the meeting audio' }),
      sig: z.string().optional().openapi({ description: 'base64url HMAC-SHA256' }),
    }),
  },
  responses: {
    200: { description: 'the whole audio', content: binaryContent(AUDIO_TYPES) },
    206: { description: 'the requested byte range (Content-Range)', content: binaryContent(AUDIO_TYPES) },
    403: problemResponse('bad, expired, other-meeting or other-user signature'),
    404: problemResponse('meeting has no audio, or the take has none (it was not finalized, or stored no frame)'),
    416: problemResponse('range not satisfiable (Content-Range: bytes */size)'),
    503: problemResponse('object storage is unavailable; nothing was changed, retry after `Retry-After` seconds'),
  },
});

const forbidden = () =>
  new DomainError('forbidden', 'this playback link is not valid (bad signature, expired, or not for this meeting)');

export function registerAudioProxy(app: OpenAPIHono<AppEnv>) {
  app.openapi(route, async (c) => {
    const { store, config } = c.var.deps;
    const { id } = c.req.valid('param');
    const { uid, exp, sig, audio_version: v } = c.req.valid('query');
    if (!uid || !UUID_PATTERN.test(uid) || !exp || !/^\d{1,12}$/.test(exp) || !sig || sig.length > 100)
      throw forbidden();
    // No link is ever made with another form of the version, so another form cannot be signed.
    if (v !== undefined && !/^[1-9]\d{0,9}$/.test(v)) throw forbidden();
    const audioVersion = v === undefined ? undefined : Number(v);
    if (!verifyAudioLink(config.AUDIO_URL_SIGNING_KEY, id, { uid, exp: Number(exp), sig, audioVersion }))
      throw forbidden();
    // The link speaks for its user (no bearer here): the database sees that user's rows (issue 38).
    const db = c.var.deps.db.as({ userId: uid });
    // A genuine link of a user who does not own the meeting (or a deleted one) grants nothing.
    if (!(await getMeeting(db, { userId: uid }, id))) throw forbidden();
    let path: string | null;
    if (audioVersion === undefined) path = (await getAudioFile(db, id))?.storage_path ?? null;
    else {
      const take = finalizedAudioPath(await getRecording(db, id, audioVersion));
      path = 'path' in take ? take.path : null;
    }
    const object = path && (await store.stat(path));
    if (!path || !object)
      throw new DomainError(
        'not_found',
        audioVersion === undefined ? 'meeting has no audio' : `audio_version ${audioVersion} has no audio`,
      );

    const headers: Record<string, string> = {
      'Content-Type': object.contentType ?? 'application/octet-stream',
      'Accept-Ranges': 'bytes',
      'Cache-Control': 'private, no-store',
      ETag: `"${object.generation}"`,
    };
    const range = parseRange(c.req.header('range'), object.size);
    if (range.kind === 'unsatisfiable') {
      const err = new DomainError('out_of_range', `the audio has ${object.size} bytes`);
      return sendProblem(c, err, { 'Content-Range': `bytes */${object.size}` });
    }
    if (object.size === 0) return c.body(null, 200, { ...headers, 'Content-Length': '0' });
    const [start, end] = range.kind === 'partial' ? [range.start, range.end] : [0, object.size - 1];
    const stream = await store.read(path, { start, end });
    const body = Readable.toWeb(stream as Readable) as ReadableStream;
    headers['Content-Length'] = String(end - start + 1);
    if (range.kind === 'partial') headers['Content-Range'] = `bytes ${start}-${end}/${object.size}`;
    return c.body(body, range.kind === 'partial' ? 206 : 200, headers);
  });
}
