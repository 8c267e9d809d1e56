// GET /meetings/{id}/recording/takes and the audio of one take: GET /meetings/{id}/audio-url?audio_version=N
// (signed storage link and the proxy link, which signs the version) for any finalized take; 404 for an
// unknown take or another user's meeting, 422 for a take that is not finalized yet.
import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runSweep } from '../../functions/sweep';
import { startApi, type ApiHarness } from '../harness';
import { createTake, stopTake, storeLiveSegment, type Take } from '../recording-fixtures';

let api: ApiHarness;
let alice: string;
let bob: string;
let meetingId: string;
let v1: Take;
let v2: Take;
let v3: Take;
let v4: Take;
const audio: Record<number, Buffer> = {};

beforeAll(async () => {
  api = await startApi();
  alice = await api.token('takes-alice');
  bob = await api.token('takes-bob');
  // v1: finalized, complete; v2: finalized with frames 5..9 missing (degraded); v3: finalized with
  // no frame; v4: stopped, waiting for gap uploads (not finalized).
  v1 = await createTake(api, alice);
  meetingId = v1.meetingId;
  audio[1] = Buffer.concat([await storeLiveSegment(api, v1, 0, 9), await storeLiveSegment(api, v1, 10, 14)]);
  await stopTake(api, v1);
  await runSweep(api.sweeper);
  v2 = await createTake(api, alice, { meetingId });
  audio[2] = Buffer.concat([await storeLiveSegment(api, v2, 0, 4), await storeLiveSegment(api, v2, 10, 12)]);
  await stopTake(api, v2, 0); // deadline passed at once: finalized with the gap
  await runSweep(api.sweeper);
  v3 = await createTake(api, alice, { meetingId });
  await stopTake(api, v3);
  await runSweep(api.sweeper);
  v4 = await createTake(api, alice, { meetingId });
  await storeLiveSegment(api, v4, 0, 2);
  await storeLiveSegment(api, v4, 6, 7);
  await stopTake(api, v4);
}, 60_000);
afterAll(() => api?.close());

const local = (proxyUrl: string) => {
  const u = new URL(proxyUrl);
  return `${api.url}${u.pathname}${u.search}`;
};

/** The WAV data after the 44-byte header of a composed PCM take. */
const pcmOf = (wav: Buffer) => wav.subarray(44);

describe('GET /meetings/{id}/recording/takes', () => {
  it('should list every take oldest first with state, stop_reason, frames stored, is_degraded and finalized_at', async () => {
    const res = await api.request('GET', `/meetings/${meetingId}/recording/takes`, { token: alice });
    expect(res.status, res.text).toBe(200);
    expect(res.body.next_cursor).toBeNull();
    const items = res.body.items;
    expect(items.map((t) => [t.audio_version, t.state, t.stop_reason, t.frames_stored, t.is_degraded])).toEqual([
      [1, 'finalized', 'user', 15, false],
      [2, 'finalized', 'user', 8, true],
      [3, 'finalized', 'user', 0, false],
      [4, 'stopped', 'user', 5, false],
    ]);
    for (const t of items.slice(0, 3)) expect(Date.parse(t.finalized_at!)).toBeGreaterThan(0);
    expect(items[3].finalized_at).toBeNull();
    expect(items[0]).toMatchObject({ encoding: 'pcm_s16le', transcription_id: v1.transcriptionId, bytes_stored: 1500 });
  });

  it('should page with limit and cursor', async () => {
    const first = await api.request('GET', `/meetings/${meetingId}/recording/takes?limit=3`, { token: alice });
    expect(first.body.items.map((t) => t.audio_version)).toEqual([1, 2, 3]);
    const second = await api.request(
      'GET',
      `/meetings/${meetingId}/recording/takes?limit=3&cursor=${first.body.next_cursor}`,
      { token: alice },
    );
    expect(second.body.items.map((t) => t.audio_version)).toEqual([4]);
    expect(second.body.next_cursor).toBeNull();
    const bad = await api.request('GET', `/meetings/${meetingId}/recording/takes?cursor=WyJ4Il0`, { token: alice });
    expect(bad.status).toBe(400);
  });

  it("should answer 404 for another user's meeting and an unknown one, and an empty list for a meeting without takes", async () => {
    expect((await api.request('GET', `/meetings/${meetingId}/recording/takes`, { token: bob })).status).toBe(404);
    expect(
      (await api.request('GET', '/meetings/00000000-0000-4000-8000-000000000000/recording/takes', { token: alice }))
        .status,
    ).toBe(404);
    const empty = await api.meeting(alice, 'recording');
    const res = await api.request('GET', `/meetings/${empty}/recording/takes`, { token: alice });
    expect(res.body).toEqual({ items: [], next_cursor: null });
  });
});

describe('GET /meetings/{id}/audio-url?audio_version=N', () => {
  it("should serve each finalized take's own audio through the signed URL and the proxy link", async () => {
    for (const v of [1, 2]) {
      const links = await api.request('GET', `/meetings/${meetingId}/audio-url?audio_version=${v}`, { token: alice });
      expect(links.status, links.text).toBe(200);
      const direct = Buffer.from(await (await fetch(links.body.url)).arrayBuffer());
      expect(pcmOf(direct).equals(audio[v]), `v${v} direct`).toBe(true);
      expect(new URL(links.body.proxy_url).searchParams.get('audio_version')).toBe(String(v));
      const proxied = await fetch(local(links.body.proxy_url));
      expect(proxied.status).toBe(200);
      expect(pcmOf(Buffer.from(await proxied.arrayBuffer())).equals(audio[v]), `v${v} proxied`).toBe(true);
    }
  });

  it('should default to the latest finalized take with audio (as before: no audio_version in the link)', async () => {
    const links = await api.request('GET', `/meetings/${meetingId}/audio-url`, { token: alice });
    expect(links.status).toBe(200);
    expect(new URL(links.body.proxy_url).searchParams.has('audio_version')).toBe(false);
    const bytes = Buffer.from(await (await fetch(local(links.body.proxy_url))).arrayBuffer());
    expect(pcmOf(bytes).equals(audio[2])).toBe(true);
  });

  it('should answer 422 for a take not finalized yet, 404 for an unknown take, a take with no audio, or another user', async () => {
    const notFinal = await api.request('GET', `/meetings/${meetingId}/audio-url?audio_version=4`, { token: alice });
    expect(notFinal.status).toBe(422);
    expect(notFinal.headers.get('content-type')).toContain('application/problem+json');
    expect(notFinal.body.errors).toEqual([expect.objectContaining({ path: 'audio_version' })]);
    for (const v of ['5', '2147483648', '9007199254740991']) {
      const res = await api.request('GET', `/meetings/${meetingId}/audio-url?audio_version=${v}`, { token: alice });
      expect(res.status, v).toBe(404);
      expect(res.body.detail).toBe('recording not found');
    }
    const silent = await api.request('GET', `/meetings/${meetingId}/audio-url?audio_version=3`, { token: alice });
    expect(silent.status).toBe(404);
    expect(silent.body.detail).toMatch(/no audio/);
    expect((await api.request('GET', `/meetings/${meetingId}/audio-url?audio_version=1`, { token: bob })).status).toBe(
      404,
    );
    for (const v of ['0', '-1', 'x', '1.5'])
      expect(
        (await api.request('GET', `/meetings/${meetingId}/audio-url?audio_version=${v}`, { token: alice })).status,
        v,
      ).toBe(422);
  });

  it('should refuse a proxy link whose audio_version was changed, added or removed without re-signing (403)', async () => {
    const links = await api.request('GET', `/meetings/${meetingId}/audio-url?audio_version=1`, { token: alice });
    const u = new URL(local(links.body.proxy_url));
    const variants: Record<string, (q: URLSearchParams) => void> = {
      'version changed': (q) => q.set('audio_version', '2'),
      'version removed': (q) => q.delete('audio_version'),
      'version as 01': (q) => q.set('audio_version', '01'),
    };
    for (const [label, change] of Object.entries(variants)) {
      const q = new URLSearchParams(u.search);
      change(q);
      expect((await fetch(`${api.url}${u.pathname}?${q}`)).status, label).toBe(403);
    }
    // A meeting-audio link (signed without a version) does not play a take when one is added.
    const plain = new URL(
      local((await api.request('GET', `/meetings/${meetingId}/audio-url`, { token: alice })).body.proxy_url),
    );
    plain.searchParams.set('audio_version', '1');
    expect((await fetch(plain)).status).toBe(403);
    // A correctly signed link to a take that is not finalized has nothing to play.
    const me = await api.userId(alice);
    const exp = Math.floor(Date.now() / 1000) + 600;
    const sig = createHmac('sha256', api.config.AUDIO_URL_SIGNING_KEY)
      .update(`${meetingId}:${me}:${exp}:4`)
      .digest('base64url');
    expect(
      (await fetch(`${api.url}/meetings/${meetingId}/audio?uid=${me}&exp=${exp}&audio_version=4&sig=${sig}`)).status,
    ).toBe(404);
  });
});
