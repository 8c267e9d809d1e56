// Every stored object of a meeting lives under one of these prefixes: live segments
// (recordings/{id}/{v}/), gap uploads and composed take audio (recordings/{id}/v{v}/), uploads
// (uploads/{id}/). Erasure and purge delete by prefix, so an object no row references (left by
// a writer that died before its row committed) goes too.
import type { ObjectStore } from '../adapters/storage';

export const meetingObjectPrefixes = (meetingId: string): string[] => [
  `recordings/${meetingId}/`,
  `uploads/${meetingId}/`,
];

/** Objects deleted at once per meeting. */
const DELETE_PARALLELISM = 16;

/** Deletes every object of the meeting; returns how many were deleted. Idempotent. */
export async function removeMeetingObjects(store: ObjectStore, meetingId: string): Promise<number> {
  let removed = 0;
  for (const prefix of meetingObjectPrefixes(meetingId)) {
    const objects = await store.list(prefix);
    for (let i = 0; i < objects.length; i += DELETE_PARALLELISM) {
      await Promise.all(objects.slice(i, i + DELETE_PARALLELISM).map((o) => store.delete(o.name)));
    }
    removed += objects.length;
  }
  return removed;
}
