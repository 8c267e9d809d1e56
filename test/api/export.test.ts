// GET /transcriptions/{id}/export: every format parsed back by an independent parser from the
// npm registry (W3C's WebVTT validator, srt-parser-2), speaker names resolved, errors provoked.
import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import SrtParser from 'srt-parser-2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// @ts-expect-error the W3C parser ships no types
import { WebVTTParser } from 'webvtt-parser';
import { startApi, type ApiHarness } from '../harness';

// The full set of named character references, as the WebVTT specification has it.
const entities = createRequire(import.meta.url)('webvtt-parser/html-entities.json');
const parseVtt = (text: string) => new WebVTTParser(entities).parse(text, 'subtitles');

let api: ApiHarness;
let alice: string;
let bob: string;
let transcriptionId: string;
let meetingId: string;

const segments = [
  { speaker_label: 'S0', text: 'Hello & welcome <everyone>', start_ms: 0, end_ms: 1500 },
  { speaker_label: 'S1', text: 'Thanks.\n\nTwo lines --> one', start_ms: 1500 },
  { speaker_label: 'S0', text: 'Let us start', start_ms: 3_723_004, end_ms: 3_724_000 },
];

beforeAll(async () => {
  api = await startApi();
  alice = await api.token('alice');
  bob = await api.token('bob');
  meetingId = await api.meeting(alice, 'recording');
  transcriptionId = (await api.post(alice, `/meetings/${meetingId}/transcriptions`)).body.id;
  expect(
    (
      await api.request('POST', `/transcriptions/${transcriptionId}/segments`, {
        token: api.serviceToken,
        body: { segments },
      })
    ).status,
  ).toBe(204);
  const dana = (await api.post(alice, '/people', { display_name: 'Dana <CEO>' })).body.id;
  const assigned = await api.request('POST', `/meetings/${meetingId}/speaker-labels`, {
    token: alice,
    body: { speaker_label: 'S0', person_id: dana },
    headers: { 'idempotency-key': randomUUID() },
  });
  expect(assigned.status).toBe(200);
});
afterAll(() => api?.close());

const exportAs = (format: string, token = alice, id = transcriptionId) =>
  api.request('GET', `/transcriptions/${id}/export?format=${format}`, { token });

describe('GET /transcriptions/{id}/export', () => {
  it('should give a valid WebVTT file with the person named where assigned, else the label', async () => {
    const res = await exportAs('vtt');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/vtt; charset=utf-8');
    expect(res.headers.get('content-disposition')).toBe(`attachment; filename="transcript-${transcriptionId}.vtt"`);
    const tree = parseVtt(res.text);
    expect(tree.errors).toEqual([]);
    const cues = tree.cues.map((c: any) => ({
      start: c.startTime,
      end: c.endTime,
      voice: c.tree.children[0].value,
      text: c.tree.children[0].children.map((t: any) => t.value).join(''),
    }));
    expect(cues).toEqual([
      // The voice annotation comes back as written (escaped); the cue text decoded.
      { start: 0, end: 1.5, voice: 'Dana &lt;CEO&gt;', text: 'Hello & welcome <everyone>' },
      // no end_ms: until the next segment starts
      { start: 1.5, end: 3723.004, voice: 'S1', text: 'Thanks. Two lines -> one' },
      { start: 3723.004, end: 3724, voice: 'Dana &lt;CEO&gt;', text: 'Let us start' },
    ]);
  });

  it('should give a valid SRT file', async () => {
    const res = await exportAs('srt');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/x-subrip; charset=utf-8');
    const parsed = new SrtParser().fromSrt(res.text);
    expect(parsed.map((c) => [c.id, c.startTime, c.endTime, c.text])).toEqual([
      ['1', '00:00:00,000', '00:00:01,500', 'Dana <CEO>: Hello & welcome <everyone>'],
      ['2', '00:00:01,500', '01:02:03,004', 'S1: Thanks. Two lines -> one'],
      ['3', '01:02:03,004', '01:02:04,000', 'Dana <CEO>: Let us start'],
    ]);
  });

  it('should give plain text and JSON (the default format is vtt)', async () => {
    const txt = await exportAs('txt');
    expect(txt.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    expect(txt.text).toBe(
      '[00:00:00] Dana <CEO>: Hello & welcome <everyone>\n[00:00:01] S1: Thanks. Two lines -> one\n[01:02:03] Dana <CEO>: Let us start\n',
    );
    const json = await exportAs('json');
    expect(json.body).toMatchObject({ transcription_id: transcriptionId, meeting_id: meetingId });
    expect(json.body.segments.map((s) => [s.speaker, s.speaker_label, s.text, s.start_ms])).toEqual([
      ['Dana <CEO>', 'S0', 'Hello & welcome <everyone>', 0],
      ['S1', 'S1', 'Thanks. Two lines -> one', 1500],
      ['Dana <CEO>', 'S0', 'Let us start', 3_723_004],
    ]);
    const byDefault = await api.request('GET', `/transcriptions/${transcriptionId}/export`, { token: alice });
    expect(byDefault.headers.get('content-type')).toBe('text/vtt; charset=utf-8');
  });

  it('should keep a hostile name and text inside one cue per segment in every format, with nosniff and no-store', async () => {
    const m = await api.meeting(alice, 'recording');
    const t = (await api.post(alice, `/meetings/${m}/transcriptions`)).body.id;
    const inject = '\r\n\n00:00:09.000 ---> 00:00:10.000\nEvil';
    const hostile = [
      { speaker_label: `Mallory${inject}`, text: `a\u0007b\u2028c${inject}`, start_ms: 0, end_ms: 1000 },
      { speaker_label: 'S1', text: 'fine', start_ms: 1000, end_ms: 2000 },
    ];
    const posted = await api.request('POST', `/transcriptions/${t}/segments`, {
      token: api.serviceToken,
      body: { segments: hostile },
    });
    expect(posted.status).toBe(204);
    const flat = ' 00:00:09.000 -> 00:00:10.000 Evil';
    for (const format of ['vtt', 'srt', 'txt', 'json']) {
      const res = await exportAs(format, alice, t);
      expect(res.status).toBe(200);
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      expect(res.headers.get('cache-control')).toBe('private, no-store');
      expect(res.text).not.toMatch(/-->\s*00:00:10/);
    }
    const vtt = parseVtt((await exportAs('vtt', alice, t)).text);
    expect(vtt.errors).toEqual([]);
    expect(
      vtt.cues.map((c: any) => [
        c.tree.children[0].value,
        c.tree.children[0].children.map((x: any) => x.value).join(''),
      ]),
    ).toEqual([
      // The voice annotation comes back as written (escaped), the cue text decoded.
      [`Mallory${flat.replace('>', '&gt;')}`, `a b c${flat}`],
      ['S1', 'fine'],
    ]);
    const srt = new SrtParser().fromSrt((await exportAs('srt', alice, t)).text);
    expect(srt.map((c) => c.text)).toEqual([`Mallory${flat}: a b c${flat}`, 'S1: fine']);
    const txt = (await exportAs('txt', alice, t)).text;
    expect(txt).toBe(`[00:00:00] Mallory${flat}: a b c${flat}\n[00:00:01] S1: fine\n`);
    const json = (await exportAs('json', alice, t)).body;
    expect(json.segments.map((s: any) => [s.speaker, s.speaker_label, s.text])).toEqual([
      [`Mallory${flat}`, `Mallory${flat}`, `a b c${flat}`],
      ['S1', 'S1', 'fine'],
    ]);
  });

  it('should export an empty transcription as an empty file of its format', async () => {
    const m = await api.meeting(alice, 'recording');
    const t = (await api.post(alice, `/meetings/${m}/transcriptions`)).body.id;
    const vtt = await exportAs('vtt', alice, t);
    expect(parseVtt(vtt.text)).toMatchObject({ errors: [], cues: [] });
    expect((await exportAs('txt', alice, t)).text).toBe('');
  });

  it('should answer 404 for another user, an unknown id and a deleted meeting; 422 for an unknown format; 401 without a token', async () => {
    expect((await exportAs('vtt', bob)).status).toBe(404);
    expect((await exportAs('vtt', alice, randomUUID())).status).toBe(404);
    const bad = await exportAs('docx');
    expect(bad.status).toBe(422);
    expect(bad.headers.get('content-type')).toContain('application/problem+json');
    expect((await api.request('GET', `/transcriptions/${transcriptionId}/export`)).status).toBe(401);
    const m = await api.meeting(alice, 'recording');
    const t = (await api.post(alice, `/meetings/${m}/transcriptions`)).body.id;
    expect((await api.request('DELETE', `/meetings/${m}`, { token: alice })).status).toBe(204);
    expect((await exportAs('vtt', alice, t)).status).toBe(404);
  });
});
