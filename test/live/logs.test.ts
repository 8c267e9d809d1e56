// The live path in the logs: each connection's lifecycle (opened, hello, closed) and each take's
// (started, stop requested, stopped, resumed, finalized) at info, with the connection, meeting,
// audio_version, request and trace ids a person follows it by.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { runSweep } from '../../functions/sweep';
import { createMeeting, fileEnv, openTestDatabase, startInstance, TestClient, token, type Instance } from './helpers';
import type { OpenedDatabase } from '@mi/lib/db/open';

type Line = Record<string, unknown>;
const lines: Line[] = [];
let database: OpenedDatabase;
let core: Instance;

beforeAll(async () => {
  database = await openTestDatabase();
  core = await startInstance(
    database,
    { ...fileEnv(), LOG_LEVEL: 'info', RECORDING_GAP_UPLOAD_DEADLINE_SECONDS: '0' },
    { logDestination: { write: (l) => void lines.push(JSON.parse(l)) } },
  );
});
afterAll(async () => {
  await core?.close();
  await database?.close();
});

const find = (message: string, fields: Line = {}) =>
  lines.find((l) => l.message === message && Object.entries(fields).every(([k, v]) => l[k] === v));

it('should log a connection and its take from open to finalize with their ids', async () => {
  const alice = await token(core.config, 'log-alice');
  const meetingId = await createMeeting(core, alice);
  const traceId = '0af7651916cd43dd8448eb211c80319c';
  const client = await TestClient.open(core.wsUrl, {
    'x-request-id': 'ws-req-42',
    traceparent: `00-${traceId}-b7ad6b7169203331-01`,
  });
  client.send({ type: 'hello', token: alice, client_id: client.clientId, last_seq: 0 });
  const { connection_id: connectionId } = await client.waitFor({ type: 'ready' });
  const ids = { connection_id: connectionId, request_id: 'ws-req-42', trace_id: traceId };

  expect(find('connection opened', ids)).toBeDefined();
  expect(find('hello', { ...ids, client_id: client.clientId, last_seq: 0 })).toMatchObject({
    severity: 'INFO',
    user_id: expect.any(String),
  });
  await client.start(meetingId);
  client.frame(0);
  await client.acked(meetingId, 0);
  expect(find('take started', { ...ids, meeting_id: meetingId, audio_version: 1 })).toBeDefined();
  await client.stop(meetingId);
  expect(find('take stop requested', { ...ids, meeting_id: meetingId, audio_version: 1 })).toBeDefined();
  expect(
    find('take stopped', { meeting_id: meetingId, audio_version: 1, reason: 'user', trace_id: traceId }),
  ).toMatchObject({ highest_contiguous_sequence: 0 });

  // Another connection resumes nothing (the take is stopped) but a second take resumes on a new one.
  await client.start(meetingId);
  client.close();
  await client.closed;
  await expect.poll(() => find('connection closed', { ...ids, code: 1005 })).toBeDefined();
  const again = await TestClient.connect(core.wsUrl, alice);
  await again.resume(meetingId, 2);
  const againId = again.messages.find((m) => m.type === 'ready')?.connection_id;
  expect(againId).toEqual(expect.any(String));
  expect(
    find('take resumed', { connection_id: againId, meeting_id: meetingId, audio_version: 2, same_instance: true }),
  ).toBeDefined();
  await again.stop(meetingId);
  again.close();

  await runSweep(core.rt);
  expect(find('take finalized', { meeting_id: meetingId, audio_version: 1, trace_id: traceId })).toBeDefined();
});
