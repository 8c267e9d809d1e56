// The live WebSocket service: attaches to any HTTP server's `upgrade` for /ws (the local stack's
// one port, or the Cloud Run entry in server.ts). Per instance: its place in the event fan-out
// (lib/fanout: a Pub/Sub topic of its own, addressed by presence), Firestore presence of its
// connections, and the recordings it owns (sessions.ts). Its own events reach its own
// connections in-process and go out only to the other instances holding their user.
import { settleWithin } from '@mi/lib/async';
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer } from 'ws';
import { createCoordination, type Coordination } from '@mi/lib/adapters/coordination';
import { OWNER_HEARTBEAT_SECONDS } from '@mi/lib/repositories/recordings';
import { erasedUsers } from '@mi/lib/repositories/erasure';
import { findOrCreateUser } from '@mi/lib/repositories/users';
import { createEventPublisher, latestSeqs, outboxBacklog, type StoredEvent } from '@mi/lib/events/outbox';
import type { BusMessage } from '@mi/lib/adapters/bus';
import { InstancePresence } from '@mi/lib/fanout/routes';
import { closeInstanceTopic, openInstanceTopic } from '@mi/lib/fanout/liveness';
import type { Runtime } from '@mi/lib/adapters/runtime';
import { Connection, type ConnectionHost } from './connection';
import { EventStream } from './event-stream';
import { toWsError } from './ws-errors';
import { CloseCode, FRAME_HEADER_BYTES, traceOf, type ClientCommand, type HelloMessage } from './protocol';
import { traceIdOf } from '@mi/lib/telemetry/trace-context';
import type { Recorder } from './recorder';
import { instruments, watchOutbox } from '@mi/lib/telemetry/metrics';
import { ADVISED_RECONNECT_GRACE_SECONDS, Sessions } from './sessions';

/** A caller's X-Request-Id is kept when it is this (hono/request-id's rule on the REST API). */
const REQUEST_ID = /^[\w\-=]{1,255}$/;

export interface LiveServiceOptions {
  /** Names this instance in leases, presence and its subscription; unique per process. */
  instanceId?: string;
  /** Default: config.ML_SERVICE_URL. */
  mlUrl?: string;
  /** Default: Firestore (the emulator when FIRESTORE_EMULATOR_HOST is set), collections `live_*`. */
  coordination?: Coordination;
  /** The instance document's lifetime (its liveness, its leases' and presence's), and its heartbeat (tests shorten them). */
  leaseTtlMs?: number;
  heartbeatMs?: number;
  /** How often connections are caught up from the outbox (CATCH_UP_MS; a test turns it off to see the bus alone). */
  catchUpMs?: number;
}

export interface LiveService {
  readonly instanceId: string;
  /** For `upgrade` requests on /ws. */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void;
  /** Subscribes to the events topic; connections are accepted from then on. */
  start(): Promise<void>;
  /** Flushes every buffer, advises clients to reconnect (1012), releases leases, presence and the subscription. */
  shutdown(reason?: 'shutdown'): Promise<void>;
  /** true between start() and shutdown(): what /healthz reports. */
  readonly accepting: boolean;
  /** Takes owned by this instance, by lease key. */
  readonly recorders: ReadonlyMap<string, Recorder>;
  /** Counters of the event fan-out since start (bench:fanout, /healthz). */
  readonly fanout: FanoutCounters;
  /** Firestore documents this instance wrote since start, in all and by its heartbeats (bench:live, /healthz). */
  readonly firestoreWrites: { total: number; heartbeat: number };
}

export interface FanoutCounters {
  /** Messages this instance's subscription received. */
  busMessages: number;
  /** Of them, events (not presence notices). */
  busEvents: number;
  /** Of them, events of a user with no connection here (wasted deliveries). */
  busMessagesUnheld: number;
  /** Events this instance produced (its takes'). */
  eventsProduced: number;
}

const LIFETIME_FLUSH_MS = 2_000;
/** Shutdown must end within Cloud Run's 10 s (server.ts exits at 8 s). */
const SHUTDOWN_FLUSH_MS = 3_000;
const SHUTDOWN_RELEASE_MS = 2_500;
/**
 * Pub/Sub can lose messages for an instance (a subscription recreated after the emulator or the
 * subscription itself was gone, retention exceeded): this often each instance reads its users'
 * latest seqs in one query and fills what its connections lack from the outbox.
 */
const CATCH_UP_MS = 5_000;

export function createLiveService(rt: Runtime, opts: LiveServiceOptions = {}): LiveService {
  rt = { ...rt, db: rt.db.as({ service: 'live' }) }; // every user's rows, declared (issue 38)
  const { config, log } = rt;
  const instanceId = opts.instanceId ?? `live-${randomUUID()}`;
  const coordination =
    opts.coordination ??
    createCoordination({
      projectId: config.GOOGLE_CLOUD_PROJECT,
      emulatorHost: config.FIRESTORE_EMULATOR_HOST,
      collectionPrefix: 'live_',
    });
  const wss = new WebSocketServer({
    noServer: true,
    clientTracking: false,
    perMessageDeflate: false,
    // Somewhat oversize frames get an `error` and the connection stays; far larger ones are cut (1009).
    maxPayload: Math.max(1024 * 1024, 4 * (config.LIVE_MAX_FRAME_BYTES + FRAME_HEADER_BYTES)),
  });
  const connections = new Set<Connection>();
  const byUser = new Map<string, Set<Connection>>();
  let state: 'new' | 'running' | 'stopping' | 'stopped' = 'new';
  let subscription: { close(): Promise<void> } | null = null;
  let unwatchOutbox = () => {};
  let catchUpTimer: NodeJS.Timeout | null = null;
  let stopped: Promise<void> | null = null;

  const localConnections = (userId: string) => byUser.get(userId)?.size ?? 0;
  const topic = config.PUBSUB_TOPIC_EVENTS;
  const fanout: FanoutCounters = { busMessages: 0, busEvents: 0, busMessagesUnheld: 0, eventsProduced: 0 };
  const presence = new InstancePresence({ self: instanceId, registry: coordination, bus: rt.bus, topic, log });
  const events = createEventPublisher({ db: rt.db, bus: rt.bus, topic, log, routes: presence.routes });
  const leaseTtlMs = opts.leaseTtlMs ?? config.LIVE_INSTANCE_TTL_SECONDS * 1000;

  function deliverLocal(e: StoredEvent): void {
    for (const conn of byUser.get(e.user_id) ?? []) conn.stream?.push(e);
  }

  const sessions = new Sessions({
    rt,
    coordination,
    instanceId,
    mlUrl: opts.mlUrl ?? config.ML_SERVICE_URL,
    leaseTtlMs,
    // The instance's document lapses unless renewed at least three times in its lifetime.
    heartbeatMs: Math.min(opts.heartbeatMs ?? OWNER_HEARTBEAT_SECONDS * 1000, leaseTtlMs / 3),
    // Our own events reach our connections at once, and go out only to the other instances holding their user.
    dispatch(produced) {
      for (const e of produced) deliverLocal(e);
      fanout.eventsProduced += produced.length;
      void events.publish(produced);
    },
    localConnections,
    countPresence: (userId) => coordination.countPresence(userId),
  });

  function onBusMessage(m: BusMessage): void {
    fanout.busMessages++;
    const notice = presence.received(m);
    if (notice === 'ignored') return;
    if (notice) {
      if (notice.online === true) sessions.userOnline(notice.user_id);
      else if (notice.online === false) sessions.userOffline(notice.user_id, Number(notice.min_grace_seconds) || 0);
      return;
    }
    const data = m.data as Partial<StoredEvent>;
    if (typeof data.user_id !== 'string' || typeof data.seq !== 'number' || typeof data.body?.type !== 'string') {
      log.warn({ message_id: m.id }, 'ignoring a malformed event message');
      return;
    }
    fanout.busEvents++;
    if (!byUser.has(data.user_id)) fanout.busMessagesUnheld++;
    deliverLocal(data as StoredEvent);
  }

  async function catchUp(): Promise<void> {
    if (!byUser.size) return;
    // An erased account's connections close wherever they are: every instance asks the database.
    for (const userId of await erasedUsers(rt.db, [...byUser.keys()]).catch(() => [])) {
      for (const conn of byUser.get(userId) ?? []) conn.close(CloseCode.accountErased, 'the account was erased');
    }
    const latest = await latestSeqs(rt.db, [...byUser.keys()]).catch(() => null);
    for (const [userId, seq] of latest ?? []) for (const conn of byUser.get(userId) ?? []) conn.stream?.catchUp(seq);
  }

  const host: ConnectionHost = {
    config,
    log,

    async hello(conn: Connection, hello: HelloMessage) {
      let userId: string;
      try {
        const credential = await rt.auth.verify(hello.token);
        if (credential.scheme !== 'bearer') return conn.close(CloseCode.unauthorized, 'user credentials required');
        userId = (await findOrCreateUser(rt.db, credential.claims)).id;
      } catch (err) {
        const refused = toWsError(err);
        if (refused && 'close' in refused) return conn.close(refused.close, refused.reason);
        throw err;
      }
      const elsewhere = await coordination.countPresence(userId).catch(() => 0);
      if (Math.max(localConnections(userId), elsewhere) >= config.LIVE_MAX_CONNECTIONS_PER_USER) {
        return conn.close(
          CloseCode.tooManyConnections,
          `at most ${config.LIVE_MAX_CONNECTIONS_PER_USER} connections per user`,
        );
      }
      if (!conn.open) return;
      // Presence first: a publisher that commits after the replay's starting point reads presence
      // after this write, so it addresses this instance (the replay covers what came before).
      // guard: hello-presence-before-replay | remove: await | test: test/live/hello-presence.test.ts :: committed between
      await presence.join(userId, conn.id);
      if (!conn.open) return void presence.leave(userId, conn.id);
      conn.userId = userId;
      conn.clientId = hello.client_id;
      const helloTrace = traceOf(hello);
      conn.trace = helloTrace ?? conn.trace;
      conn.log = conn.log.child({ user_id: userId, ...(helloTrace && { trace_id: traceIdOf(helloTrace) }) });
      conn.log.info({ client_id: hello.client_id, last_seq: hello.last_seq ?? null }, 'hello');
      conn.ready = true;
      conn.stream = new EventStream(rt.db, userId, hello.client_id, conn, log, config.LIVE_REPLAY_MAX_EVENTS);
      if (!byUser.has(userId)) byUser.set(userId, new Set());
      byUser.get(userId)!.add(conn);
      // `ready` once the starting point is fixed (decisions.md section 8): an event committed after
      // the client has it lies after that point, so the stream delivers it (events pushed meanwhile wait).
      // guard: ready-after-starting-point | remove: await | test: test/live/ready.test.ts :: while its starting point
      await conn.stream.start(hello.last_seq);
      if (!conn.open) return; // closed meanwhile: closed() let go of it
      conn.send({ type: 'ready', connection_id: conn.id });
      conn.stream.open();
      sessions.userOnline(userId);
      await presence.announce(userId);
    },

    async command(conn: Connection, cmd: ClientCommand) {
      switch (cmd.type) {
        case 'StartRecordingCommand':
          return sessions.start(conn, cmd);
        case 'ResumeRecordingCommand':
          return sessions.resume(conn, cmd);
        case 'StopRecordingCommand':
          return sessions.stop(conn, cmd);
      }
    },

    frame: (conn, data) => sessions.frame(conn, data),

    async lifetimeReached(conn: Connection) {
      if (!conn.open) return;
      const r = conn.recorder;
      if (r) {
        r.note('reconnect_advised', { reason: 'lifetime', connection_id: conn.id });
        await r.flushAll(LIFETIME_FLUSH_MS);
      }
      conn.advise('lifetime');
    },

    closed(conn: Connection) {
      if (connections.delete(conn)) instruments().wsConnections.add(-1);
      sessions.connectionClosed(conn);
      const userId = conn.userId;
      if (!userId) return;
      const mine = byUser.get(userId);
      mine?.delete(conn);
      if (mine?.size === 0) byUser.delete(userId);
      if (state !== 'running') return; // shutdown removes presence itself and leaves stops to the takeover
      void (async () => {
        const remaining = await presence.leave(userId, conn.id);
        if (localConnections(userId) > 0) return;
        // Unknown, or connected elsewhere: heartbeats re-check.
        if (remaining !== 0) return void presence.letGo(userId, null);
        const minGrace = conn.advised ? ADVISED_RECONNECT_GRACE_SECONDS : 0;
        sessions.userOffline(userId, minGrace);
        await presence.letGo(userId, false, minGrace);
      })();
    },
  };

  return {
    instanceId,
    get accepting() {
      return state === 'running';
    },
    recorders: sessions.recorders,
    fanout,
    get firestoreWrites() {
      return { total: coordination.writes, heartbeat: coordination.heartbeatWrites };
    },

    handleUpgrade(req, socket, head) {
      if (state !== 'running') {
        socket.end('HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
        return;
      }
      wss.handleUpgrade(req, socket, head, (ws) => {
        if (state !== 'running') return void ws.close(CloseCode.reconnect, 'server shutting down');
        const conn = new Connection(ws, host);
        conn.trace = traceOf({ traceparent: req.headers.traceparent, tracestate: req.headers.tracestate });
        // The caller's X-Request-Id when well-formed (as the REST API takes it), else a new one.
        const sent = req.headers['x-request-id'];
        const requestId = typeof sent === 'string' && REQUEST_ID.test(sent) ? sent : randomUUID();
        conn.log = conn.log.child({ request_id: requestId, ...(conn.trace && { trace_id: traceIdOf(conn.trace) }) });
        conn.log.info({ instance: instanceId }, 'connection opened');
        connections.add(conn);
        instruments().wsConnections.add(1);
      });
    },

    async start() {
      if (state !== 'new') return;
      // Marked alive (the first heartbeat) before its topic exists: the sweep deletes unmarked instances' topics.
      subscription = await openInstanceTopic(rt, instanceId, () => sessions.beat(), onBusMessage);
      sessions.startHeartbeat();
      // What the bus did not bring (a topic the sweep took, a subscription being recreated) comes from the outbox.
      // guard: live-catch-up-fills-bus-gaps | remove: void catchUp(); | test: test/live/sweep-order.test.ts :: mark itself again
      catchUpTimer = setInterval(() => {
        void catchUp();
        presence.prune();
      }, opts.catchUpMs ?? CATCH_UP_MS);
      // The live service always runs (min instances ≥ 1, CPU always allocated): it reports the outbox metrics.
      unwatchOutbox = watchOutbox(() => outboxBacklog(rt.db));
      state = 'running';
      log.info({ instance: instanceId }, 'live service started');
    },

    shutdown() {
      stopped ??= (async () => {
        const wasRunning = state === 'running';
        state = 'stopping';
        // A beat under way finishes first: its Firestore transaction must not outlive the client.
        const beat = sessions.stopHeartbeat();
        if (catchUpTimer) clearInterval(catchUpTimer);
        unwatchOutbox();
        if (wasRunning) {
          const takes = sessions.recorders.size;
          log.info({ instance: instanceId, connections: connections.size, takes }, 'live service shutting down');
          const present = [...connections].filter((c) => c.userId).map((c) => ({ userId: c.userId!, id: c.id }));
          await sessions.flushAll(SHUTDOWN_FLUSH_MS);
          for (const conn of connections) {
            conn.recorder?.note('reconnect_advised', { reason: 'shutdown', connection_id: conn.id });
            conn.advise('shutdown');
          }
          // Frames that came in between are written here too; then each take waits for a resume.
          await sessions.releaseAll(SHUTDOWN_RELEASE_MS);
          await Promise.allSettled(present.map((c) => settleWithin(presence.leave(c.userId, c.id), 1_000)));
          // The instances sharing our users stop addressing us (their routes would learn it within REFRESH_MS).
          const users = [...new Set(present.map((c) => c.userId))];
          await settleWithin(Promise.all(users.map((u) => presence.letGo(u, null))), 1_000);
        }
        // A beat under way ends first: a mark it writes after the unmark would keep a deleted topic's instance alive.
        await settleWithin(beat, 2_000);
        await closeInstanceTopic(rt, coordination, instanceId, subscription);
        if (!opts.coordination) await settleWithin(coordination.close(), 1_000);
        wss.close();
        state = 'stopped';
      })();
      return stopped;
    },
  };
}
