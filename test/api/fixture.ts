// Two users, each with a person and a meeting, for the tests of user-owned records that check
// one user cannot reach the other's.
import type { ApiHarness } from '../harness';

type Body = Record<string, unknown>;

export interface TwoUsers {
  alice: string;
  bob: string;
  aliceId: string;
  bobId: string;
  alicePerson: string;
  bobPerson: string;
  aliceMeeting: string;
  bobMeeting: string;
  /**
   * Swaps ALICE_PERSON, ALICE_MEETING, BOB_PERSON, BOB_MEETING (and any `extra` names) in a body's
   * values for the real ids: describe.each tables are built before beforeAll creates them.
   */
  resolve(body: Body, extra?: Record<string, string>): Body;
}

export async function twoUsers(api: ApiHarness): Promise<TwoUsers> {
  const alice = await api.token('alice');
  const bob = await api.token('bob');
  const aliceId = await api.userId(alice);
  const bobId = await api.userId(bob);
  const alicePerson = await api.person(aliceId, 'Dana');
  const bobPerson = await api.person(bobId, 'Eve');
  const aliceMeeting = await api.meeting(alice);
  const bobMeeting = await api.meeting(bob);
  const ids: Record<string, string> = {
    ALICE_PERSON: alicePerson,
    ALICE_MEETING: aliceMeeting,
    BOB_PERSON: bobPerson,
    BOB_MEETING: bobMeeting,
  };
  return {
    alice,
    bob,
    aliceId,
    bobId,
    alicePerson,
    bobPerson,
    aliceMeeting,
    bobMeeting,
    resolve: (body, extra = {}) =>
      Object.fromEntries(
        Object.entries(body).map(([k, v]) => [k, typeof v === 'string' ? ({ ...ids, ...extra }[v] ?? v) : v]),
      ),
  };
}
