// What the kit checks on the live segments an ML posted: times that run forwards, no segment
// posted twice under fresh ids (the frames a resume repeats), no overlap with the same speaker's
// previous segment. Each returns null when the segments keep the rule, else the offenders.
export interface LiveSegment {
  id: string;
  speaker_label: string | null;
  text: string;
  start_ms: number;
  end_ms: number;
}

const show = (s: LiveSegment) =>
  `${s.speaker_label ?? 'no speaker'} ${s.start_ms}–${s.end_ms} ms "${s.text.slice(0, 40)}"`;
const sameSpan = (a: LiveSegment, b: LiveSegment) =>
  a.speaker_label === b.speaker_label && a.start_ms === b.start_ms && a.end_ms === b.end_ms;

export function backwardsTimes(segments: LiveSegment[]): string | null {
  const bad = segments.filter((s) => !(s.start_ms >= 0 && s.end_ms >= s.start_ms));
  if (!bad.length) return null;
  return `${bad.length} segment(s) end before they start (or start before 0): ${bad.slice(0, 3).map(show).join('; ')}`;
}

export function duplicates(segments: LiveSegment[]): string | null {
  const pairs: string[] = [];
  segments.forEach((s, i) => {
    const first = segments.slice(0, i).find((t) => sameSpan(s, t) && t.text === s.text);
    if (first) pairs.push(`${show(s)} as ${first.id} and ${s.id}`);
  });
  if (!pairs.length) return null;
  return `${pairs.length} segment(s) posted twice with fresh ids: ${pairs.slice(0, 3).join('; ')}`;
}

export function sameSpeakerOverlaps(segments: LiveSegment[]): string | null {
  const bySpeaker = new Map<string | null, LiveSegment[]>();
  for (const s of segments) bySpeaker.set(s.speaker_label, [...(bySpeaker.get(s.speaker_label) ?? []), s]);
  const found: string[] = [];
  for (const list of bySpeaker.values()) {
    const sorted = [...list].sort((a, b) => a.start_ms - b.start_ms || a.end_ms - b.end_ms);
    sorted.forEach((s, i) => {
      // Exact repeats are the duplicates check's; a segment is compared with the earlier one
      // reaching furthest.
      const earlier = sorted.slice(0, i).filter((p) => !sameSpan(p, s));
      const previous = earlier.sort((a, b) => b.end_ms - a.end_ms)[0];
      if (previous && s.start_ms < previous.end_ms) found.push(`${show(s)} starts inside ${show(previous)}`);
    });
  }
  if (!found.length) return null;
  return `${found.length} segment(s) overlap the same speaker's previous segment: ${found.slice(0, 3).join('; ')}`;
}
