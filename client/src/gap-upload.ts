// Gap recovery after a stop (decisions.md 5.3): frames start..end of a take, concatenated in
// order, PUT with their SHA-256 as Content-Digest so the server can refuse a damaged body.
import { ok } from './problem.js';
import type { RestClient } from './rest.js';

export async function contentDigest(bytes: Uint8Array<ArrayBuffer>): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', bytes));
  let s = '';
  for (const b of digest) s += String.fromCharCode(b);
  return `sha-256=:${btoa(s)}:`;
}

/**
 * Uploads one contiguous run of frames: 201 stored, 200 the identical range was stored already.
 * Throws ApiProblem on a refusal (e.g. 410 past the deadline).
 */
export async function uploadGap(
  client: RestClient,
  meetingId: string,
  audioVersion: number,
  start: number,
  end: number,
  bytes: Uint8Array<ArrayBuffer>,
): Promise<{ status: number; result: { highest_contiguous_sequence: number; missing_ranges: number[][] } }> {
  const answer = await client.PUT('/meetings/{id}/recording/audio/{range}', {
    params: {
      path: { id: meetingId, range: `${start}-${end}` },
      query: { audio_version: audioVersion },
      header: { 'content-digest': await contentDigest(bytes) },
    },
    // The document types octet-stream as a string; the body goes out as raw bytes.
    body: bytes as unknown as string,
    bodySerializer: (b: unknown) => b as BodyInit,
    headers: { 'content-type': 'application/octet-stream' },
  });
  return { status: answer.response.status, result: ok(answer) };
}
