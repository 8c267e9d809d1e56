// Where a take's objects live: live segments (recordings/{id}/{v}/), gap uploads and the composed
// audio (recordings/{id}/v{v}/). Every name is under meetingObjectPrefixes (meeting-objects.ts).
import { createHash } from 'node:crypto';
import type { Recording } from '../repositories/recordings';

const pad = (n: number) => String(n).padStart(10, '0');

/** Where the live service stores a take's segments (gap uploads: gapObjectName). */
export const segmentPrefix = (meetingId: string, audioVersion: number) => `recordings/${meetingId}/${audioVersion}/`;
export const segmentObjectName = (t: { meetingId: string; audioVersion: number }, start: number, end: number) =>
  `${segmentPrefix(t.meetingId, t.audioVersion)}${pad(start)}-${pad(end)}.seg`;

export const sha256Hex = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

/** Content-addressed, so two uploads of the same range with other bytes never share an object. */
export const gapPrefix = (meetingId: string, audioVersion: number) => `recordings/${meetingId}/v${audioVersion}/gaps/`;
export const gapObjectName = (meetingId: string, audioVersion: number, start: number, end: number, sha: string) =>
  `${gapPrefix(meetingId, audioVersion)}${start}-${end}-${sha.slice(0, 16)}`;

export const takePrefix = (meetingId: string, audioVersion: number) => `recordings/${meetingId}/v${audioVersion}/`;

/** Where a take's composed audio is (once it is finalized with at least one frame stored). */
export const takeAudioPath = (rec: Pick<Recording, 'meeting_id' | 'audio_version' | 'encoding'>) =>
  `${takePrefix(rec.meeting_id, rec.audio_version)}${rec.encoding === 'pcm_s16le' ? 'audio.wav' : 'audio.webm'}`;
