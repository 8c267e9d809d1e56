// Per-user playback links (GET /meetings/{id}/audio): an HMAC-SHA256 with AUDIO_URL_SIGNING_KEY
// over "{meeting_id}:{user_id}:{exp}", base64url, so a link is a capability of one user for one
// meeting until exp (unix seconds). A link to one take's audio (audio_version=N) signs
// "{meeting_id}:{user_id}:{exp}:{N}": the version cannot be changed, nor added to or taken off a
// link, without breaking its signature.
import { createHmac, timingSafeEqual } from 'node:crypto';

export interface AudioLinkParams {
  uid: string;
  exp: number;
  sig: string;
  /** The take the link plays; absent: the meeting's audio. */
  audioVersion?: number;
}

export function signAudioLink(
  key: string,
  meetingId: string,
  userId: string,
  exp: number,
  audioVersion?: number,
): string {
  const signed =
    audioVersion === undefined ? `${meetingId}:${userId}:${exp}` : `${meetingId}:${userId}:${exp}:${audioVersion}`;
  return createHmac('sha256', key).update(signed).digest('base64url');
}

export function audioProxyUrl(
  baseUrl: string,
  key: string,
  meetingId: string,
  userId: string,
  exp: number,
  audioVersion?: number,
): string {
  const q = new URLSearchParams({
    uid: userId,
    exp: String(exp),
    ...(audioVersion === undefined ? {} : { audio_version: String(audioVersion) }),
    sig: signAudioLink(key, meetingId, userId, exp, audioVersion),
  });
  return `${baseUrl.replace(/\/$/, '')}/meetings/${meetingId}/audio?${q}`;
}

/** True when sig is the link of (meetingId, uid, exp) and exp has not passed. */
export function verifyAudioLink(
  key: string,
  meetingId: string,
  p: AudioLinkParams,
  nowSeconds = Math.floor(Date.now() / 1000),
): boolean {
  const expected = Buffer.from(signAudioLink(key, meetingId, p.uid, p.exp, p.audioVersion));
  const given = Buffer.from(p.sig);
  // Compare in constant time (lengths first: timingSafeEqual needs equal lengths).
  const valid = given.length === expected.length && timingSafeEqual(given, expected);
  return valid && p.exp > nowSeconds;
}
