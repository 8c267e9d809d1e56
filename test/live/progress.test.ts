// The progress cadence (decisions.md section 7): while a take is open, an AudioStoredProgressEvent
// goes out as soon as RECORDING_PROGRESS_EVERY_FRAMES more frames are durable, and at least every
// RECORDING_PROGRESS_INTERVAL_SECONDS even when no new frame arrived (the cadence ticks twice per
// interval; the second tick after the last event asks for the next).
import { describe, expect, it } from 'vitest';
import { TestClient, createMeeting, range, token, useInstance, type Message } from './helpers';
import { until } from '../support/poll';

const progressOf = (client: TestClient, meetingId: string) =>
  client.ofType('AudioStoredProgressEvent').filter((m) => m.meeting_id === meetingId);

describe('progress by frames', () => {
  // Segments of 5 frames; the interval (60 s) never comes due within the test.
  const ctx = useInstance({
    RECORDING_SEGMENT_TARGET_MS: '500',
    RECORDING_PROGRESS_EVERY_FRAMES: '20',
    RECORDING_PROGRESS_INTERVAL_SECONDS: '60',
  });

  it('should send a progress event once RECORDING_PROGRESS_EVERY_FRAMES more frames are durable, long before the interval', async () => {
    const t = await token(ctx.instance.config, 'progress-frames');
    const meetingId = await createMeeting(ctx.instance, t);
    const client = await TestClient.connect(ctx.instance.wsUrl, t);
    await client.start(meetingId);
    // Whole segments only: no short run ends the stream, so the tail rule brings no event either.
    for (const seq of range(0, 99)) client.frame(seq);
    await client.acked(meetingId, 79, 20_000);
    const stored = progressOf(client, meetingId).map((m: Message) => m.frames_stored as number);
    expect(stored.length).toBeGreaterThanOrEqual(2);
    for (let i = 1; i < stored.length; i++) expect(stored[i] - stored[i - 1]).toBeGreaterThanOrEqual(20);
    await client.stop(meetingId);
    client.close();
  });
});

describe('progress by interval', () => {
  // Far more frames per event than the test sends: only the interval can bring more events.
  const ctx = useInstance({ RECORDING_PROGRESS_EVERY_FRAMES: '1000', RECORDING_PROGRESS_INTERVAL_SECONDS: '0.5' });

  it('should repeat the progress event every RECORDING_PROGRESS_INTERVAL_SECONDS while the take is open, with no new frame', async () => {
    const t = await token(ctx.instance.config, 'progress-interval');
    const meetingId = await createMeeting(ctx.instance, t);
    const client = await TestClient.connect(ctx.instance.wsUrl, t);
    await client.start(meetingId);
    for (const seq of range(0, 4)) client.frame(seq);
    await client.acked(meetingId, 4);
    const first = progressOf(client, meetingId).length;
    // Two more, for the same five frames: nothing arrived after them.
    await until('two more progress events', () => progressOf(client, meetingId).length >= first + 2);
    expect(
      progressOf(client, meetingId)
        .slice(first)
        .every((m) => m.frames_stored === 5 && m.highest_contiguous_sequence === 4),
    ).toBe(true);
    await client.stop(meetingId);
    client.close();
  });
});

describe('progress by the interval while idle', () => {
  // The interval's ticks are driven by hand: its timer (an hour) never fires within the test.
  const ctx = useInstance({ RECORDING_PROGRESS_EVERY_FRAMES: '1000', RECORDING_PROGRESS_INTERVAL_SECONDS: '3600' });

  it('should send one progress event every second tick (two per interval) after the last one, frames or none', async () => {
    const t = await token(ctx.instance.config, 'progress-ticks');
    const meetingId = await createMeeting(ctx.instance, t);
    const client = await TestClient.connect(ctx.instance.wsUrl, t);
    await client.start(meetingId);
    for (const seq of range(0, 4)) client.frame(seq);
    await client.acked(meetingId, 4); // the stream's tail: a progress event from frames
    const recorder = [...ctx.instance.live.recorders.values()].find((r) => r.take.meetingId === meetingId)!;
    await until('the frames progress done', () => !recorder.progressRequested);
    const first = progressOf(client, meetingId).length;
    // Once after the frames' event, then idle: each interval (two ticks) brings exactly one.
    for (let i = 1; i <= 3; i++) {
      recorder.progressTick();
      expect(recorder.progressRequested, `first tick of interval ${i}`).toBe(false);
      recorder.progressTick();
      expect(recorder.progressRequested, `second tick of interval ${i}`).toBe(true);
      await until(`the progress event of interval ${i}`, () => progressOf(client, meetingId).length === first + i);
      await until(`the progress of interval ${i} done`, () => !recorder.progressRequested);
    }
    expect(
      progressOf(client, meetingId)
        .slice(first)
        .map((m) => [m.frames_stored, m.highest_contiguous_sequence]),
    ).toEqual([
      [5, 4],
      [5, 4],
      [5, 4],
    ]);
    await client.stop(meetingId);
    client.close();
  });
});
