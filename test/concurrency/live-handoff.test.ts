// Two live instances commit manifest rows of one take at the same time across a lease hand-off
// (a second tab resumes the take on B while A still holds frames and its own commits are in
// flight): on native PostgreSQL their group commits interleave. No range may be stored twice and
// no frame lost, round after round.
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { listManifest } from '@mi/lib/repositories/manifest';
import {
  TestClient,
  createMeeting,
  pcmFrame,
  range,
  storedAudio,
  token,
  useInstances,
  type Instance,
} from '../live/helpers';

const native = inject('database').kind === 'native';
if (!native)
  console.log(
    'test/concurrency/live-handoff skipped: PGlite runs one transaction at a time, so the commits cannot interleave',
  );

const live = useInstances(native ? [{ instanceId: 'instance-a' }, { instanceId: 'instance-b' }] : [], {
  RECORDING_SEGMENT_TARGET_MS: '300',
});
let a: Instance;
let b: Instance;
beforeAll(() => void ([a, b] = live.instances));

describe.skipIf(!native)('lease hand-off between two instances', () => {
  it('should store every frame exactly once when both instances commit the same take (5 rounds)', async () => {
    for (let round = 0; round < 5; round++) {
      const t = await token(a.config, `handoff-${round}`);
      const meetingId = await createMeeting(a, t);
      const onA = await TestClient.connect(a.wsUrl, t);
      await onA.start(meetingId);
      // A keeps receiving frames (and committing segments) while B takes the take over.
      for (const seq of range(0, 39)) onA.frame(seq);
      const onB = await TestClient.connect(b.wsUrl, t);
      const resumed = await onB.resume(meetingId, 1);
      for (const seq of range(40, 59)) onA.frame(seq); // late frames to A, refused or written before it lets go
      for (const seq of range(resumed.highest_contiguous_sequence + 1, 79)) onB.frame(seq);
      const stopped = await onB.stop(meetingId);
      // B was sent everything after what it reported on resume, as a client must.
      expect(stopped, `round ${round}`).toMatchObject({ highest_contiguous_sequence: 79, missing_ranges: [] });
      const rows = await listManifest(b.rt.db, meetingId, 1);
      const covered = rows.flatMap((r) => range(Number(r.start_sequence), Number(r.end_sequence)));
      expect(covered.length, `round ${round}: frames covered twice`).toBe(new Set(covered).size);
      const stored = await storedAudio(b, meetingId, 1);
      expect(stored.sequences, `round ${round}`).toEqual(range(0, 79));
      expect(stored.bytes.equals(Buffer.concat(range(0, 79).map(pcmFrame)))).toBe(true);
      onA.close();
      onB.close();
    }
  });
});
