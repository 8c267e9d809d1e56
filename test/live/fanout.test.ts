// Targeted delivery across three live instances on one database and one set of emulators: an
// event reaches only the instances holding a connection of its user (Pub/Sub, each instance's own
// topic); the producing instance delivers to its own connections in-process and publishes nothing
// when no other instance holds the user; a tab that moves to another instance misses nothing and
// its events follow it there over the bus. Broadcast (the design before) fails these.
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { until } from '../support/poll';
import { TestClient, createMeeting, range, token, useInstances, type Instance, type Message } from './helpers';

const live = useInstances(['a', 'b', 'c'].map((n) => ({ instanceId: `fanout-${n}` })));
let a: Instance;
let b: Instance;
let c: Instance;
beforeAll(() => void ([a, b, c] = live.instances));

const busMessages = () => [a, b, c].map((i) => i.live.fanout.busMessages);
const seqsOf = (client: TestClient) =>
  client.messages.filter((m: Message) => typeof m.seq === 'number').map((m) => m.seq as number);

async function userId(instance: Instance, userToken: string): Promise<string> {
  const res = await fetch(`${instance.url}/me`, { headers: { authorization: `Bearer ${userToken}` } });
  return ((await res.json()) as { id: string }).id;
}

describe('targeted fan-out', () => {
  it("should bring a user's events to the instances holding the user and send none to an instance without them", async () => {
    const u = await token(a.config, 'fanout-u');
    const recorder = await TestClient.connect(a.wsUrl, u);
    const viewer = await TestClient.connect(b.wsUrl, u);
    const other = await TestClient.connect(c.wsUrl, await token(a.config, 'fanout-other'));

    const meetingId = await createMeeting(c, u); // a REST change made through an instance that does not hold the user
    await recorder.waitFor({ type: 'EntityChanged', id: meetingId });
    await viewer.waitFor({ type: 'EntityChanged', id: meetingId });
    await recorder.start(meetingId);
    for (const seq of range(0, 49)) recorder.frame(seq);
    expect(await viewer.acked(meetingId, 49)).toMatchObject({ type: 'AudioStoredProgressEvent', frames_stored: 50 });
    await recorder.stop(meetingId);
    await viewer.waitFor({ type: 'EntityChanged', entity: 'recording', action: 'updated' });

    expect(c.live.fanout.busMessages).toBe(0);
    expect(b.live.fanout.busMessagesUnheld).toBe(0);
    expect(seqsOf(other)).toEqual([]);
    for (const client of [recorder, viewer, other]) client.close();
  });

  it('should publish nothing when only the producing instance holds the user, and still mark the events published', async () => {
    const w = await token(c.config, 'fanout-w');
    const wId = await userId(c, w);
    // On c, which held nobody in the test before: a and b may still get that test's last messages.
    const recorder = await TestClient.connect(c.wsUrl, w);
    // Events only: a presence notice of another test's users may still reach c.
    const before = c.live.fanout.busEvents;
    // A REST change, as a function makes it: it reaches c over the bus (presence names c), and it
    // is the only event of this test that may; counted once it is in, however late it comes.
    const meetingId = await createMeeting(c, w);
    await vi.waitFor(() => expect(c.live.fanout.busEvents).toBe(before + 1), { timeout: 20_000 });
    const viewer = await TestClient.connect(c.wsUrl, w);

    await recorder.start(meetingId);
    for (const seq of range(0, 49)) recorder.frame(seq);
    await viewer.acked(meetingId, 49);
    await recorder.stop(meetingId);
    await viewer.waitFor({ type: 'EntityChanged', entity: 'recording', action: 'updated' });
    expect(seqsOf(viewer).length).toBeGreaterThanOrEqual(3);

    await vi.waitFor(async () => {
      const { rows } = await c.rt.db.query<{ n: number }>(
        'test.unpublished',
        'SELECT count(*)::int AS n FROM event_outbox WHERE user_id = $1 AND published_at IS NULL',
        [wId],
      );
      expect(rows[0].n).toBe(0);
    });
    // Under broadcast c would receive its own publishes; targeted, it publishes nothing.
    expect(c.live.fanout.busEvents).toBe(before + 1);
    recorder.close();
    viewer.close();
  });

  it('should bring a tab that moves to another instance every event once, in order, and keep it live there over the bus', async () => {
    const m = await token(a.config, 'fanout-m');
    const recorder = await TestClient.connect(a.wsUrl, m);
    const meetingId = await createMeeting(a, m);
    const tab = await TestClient.connect(a.wsUrl, m);
    await recorder.start(meetingId);
    for (const seq of range(0, 29)) recorder.frame(seq);
    await tab.acked(meetingId, 29);
    const lastSeq = Math.max(...seqsOf(tab));
    tab.close();
    await tab.closed;

    for (const seq of range(30, 59)) recorder.frame(seq); // while the tab is away
    await recorder.acked(meetingId, 59);
    const onB = busMessages()[1];
    const moved = await TestClient.connect(b.wsUrl, m, { lastSeq });
    for (const seq of range(60, 99)) recorder.frame(seq);
    await moved.acked(meetingId, 99);

    const seqs = seqsOf(moved);
    expect(seqs).toEqual(range(lastSeq + 1, seqs.at(-1)!));
    expect(moved.ofType('AudioStoredProgressEvent').some((p) => p.highest_contiguous_sequence === 59)).toBe(true);
    // A addresses B once B's presence notice (itself a bus message, so its moment varies with the
    // machine's load) has reached it: more frames until A's events arrive over the bus.
    let next = 100;
    await until('A addresses B over the bus', async () => {
      if (busMessages()[1] > onB) return true;
      for (const seq of range(next, next + 9)) recorder.frame(seq);
      await moved.acked(meetingId, next + 9);
      next += 10;
      return busMessages()[1] > onB;
    });
    expect(seqsOf(moved)).toEqual(range(lastSeq + 1, seqsOf(moved).at(-1)!));
    await recorder.stop(meetingId);
    recorder.close();
    moved.close();
  });
});
