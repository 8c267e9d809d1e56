// The primary of a multi-worker live service: Node runs JavaScript on one core per process, so
// server.ts forks LIVE_WORKERS workers (instance.ts), which share the port through node:cluster
// (the primary accepts and hands connections out round-robin). Each worker is a full live
// instance: its own instance id, subscription, presence and leases, so takes move between
// workers exactly as between Cloud Run instances. The primary holds no session state.
import cluster, { type Worker } from 'node:cluster';
import type { Logger } from '@mi/lib/telemetry/log';
import { EXIT_DEADLINE_MS } from './instance';

/** A worker that dies is replaced, but a crash loop ends the instance (Cloud Run starts another). */
const MAX_RESTARTS = 5;
const RESTART_WINDOW_MS = 60_000;

export function runPrimary(workers: number, log: Logger): void {
  const alive = new Set<Worker>(); // cluster.workers keeps a dead worker until its IPC channel closes
  const listening = new Set<Worker>();
  cluster.on('listening', (worker) => listening.add(worker));
  const restarts: number[] = [];
  let stopping = false;
  let failed = false;

  const fork = () => {
    const worker = cluster.fork();
    alive.add(worker);
    log.info({ pid: worker.process.pid }, 'live worker forked');
  };
  for (let i = 0; i < workers; i++) fork();
  log.info({ workers, pid: process.pid }, 'live primary started');

  cluster.on('exit', (worker, code, signal) => {
    alive.delete(worker);
    if (stopping) {
      // A worker the signal found still starting held nothing to drain; any other must exit 0
      // (not, e.g., killed at its own deadline).
      if (code !== 0 && !(signal === 'SIGTERM' && !listening.has(worker))) failed = true;
      listening.delete(worker);
      if (alive.size === 0) process.exit(failed ? 1 : 0);
      return;
    }
    listening.delete(worker);
    const now = Date.now();
    restarts.push(now);
    while (restarts[0] < now - RESTART_WINDOW_MS) restarts.shift();
    if (restarts.length > MAX_RESTARTS) {
      log.error(
        { pid: worker.process.pid, code, signal, restarts: restarts.length },
        'live workers keep dying; stopping the instance',
      );
      failed = true;
      return stop('crash loop');
    }
    log.error({ pid: worker.process.pid, code, signal }, 'live worker died; starting another');
    fork();
  });

  /** Every worker drains itself (flush, 1012, release) on SIGTERM; the primary waits at most 8 s. */
  function stop(reason: string): void {
    if (stopping) return;
    stopping = true;
    log.info({ reason }, 'stopping live workers');
    if (alive.size === 0) process.exit(1);
    for (const w of alive) w.process.kill('SIGTERM');
    setTimeout(() => {
      log.error({ left: alive.size }, 'live workers did not stop in time; killing them');
      for (const w of alive) w.process.kill('SIGKILL');
      process.exit(1);
    }, EXIT_DEADLINE_MS).unref();
  }
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}
