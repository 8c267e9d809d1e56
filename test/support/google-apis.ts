// Local stand-ins of the two Google APIs the operations script calls (a service we do not own),
// over the REST transport their Node clients speak with `fallback: true`: Cloud Run Admin v2
// (services) and Cloud Scheduler v1 (jobs: get, run). Running a job calls its target the way the
// scheduler would and records the attempt's time and outcome on the job.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface StandInService {
  uri: string;
  latestReadyRevision: string;
  latestCreatedRevision: string;
  ready: boolean;
}
export interface StandInJob {
  /** What the scheduler's HTTP target answers: its status code. */
  target: () => Promise<number>;
  lastAttemptTime?: Date;
  status?: { code: number; message: string };
}

// google.rpc.Code of an HTTP target's failure, as Cloud Scheduler reports it.
const rpcCodeOf = (http: number) =>
  http < 300 ? 0 : http === 401 ? 16 : http === 403 ? 7 : http === 404 ? 5 : http >= 500 ? 13 : 9;

export async function startGoogleApis(opts: {
  project: string;
  region: string;
  services: Record<string, StandInService>;
  jobs: Record<string, StandInJob>;
}) {
  const base = `projects/${opts.project}/locations/${opts.region}`;
  const server: Server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    const notFound = (what: string) =>
      send(404, { error: { code: 404, message: `${what} not found`, status: 'NOT_FOUND' } });
    const svc = new RegExp(`^/v2/${base}/services/([^/]+)$`).exec(path);
    if (req.method === 'GET' && svc) {
      const s = opts.services[svc[1]];
      if (!s) return notFound(`service ${svc[1]}`);
      const rev = (r: string) => `${base}/services/${svc[1]}/revisions/${r}`;
      return send(200, {
        name: `${base}/services/${svc[1]}`,
        uri: s.uri,
        latestReadyRevision: rev(s.latestReadyRevision),
        latestCreatedRevision: rev(s.latestCreatedRevision),
        terminalCondition: {
          type: 'Ready',
          state: s.ready ? 'CONDITION_SUCCEEDED' : 'CONDITION_FAILED',
          message: s.ready ? '' : 'revision failed its startup probe',
        },
      });
    }
    const job = new RegExp(`^/v1/${base}/jobs/([^/:]+)(:run)?$`).exec(path);
    const j = job && opts.jobs[job[1]];
    if (job && !j) return notFound(`job ${job[1]}`);
    const jobBody = () => ({
      name: `${base}/jobs/${job![1]}`,
      state: 'ENABLED',
      ...(j!.lastAttemptTime && { lastAttemptTime: j!.lastAttemptTime.toISOString() }),
      ...(j!.status && { status: j!.status }),
    });
    if (req.method === 'GET' && job && !job[2]) return send(200, jobBody());
    if (req.method === 'POST' && job?.[2]) {
      send(200, jobBody());
      // The attempt runs after the answer, as the scheduler's does; its outcome lands on the job.
      const attempted = new Date(Math.max(Date.now(), (j!.lastAttemptTime?.getTime() ?? 0) + 1000));
      void j!.target().then(
        (status) =>
          Object.assign(j!, {
            lastAttemptTime: attempted,
            status: { code: rpcCodeOf(status), message: status < 300 ? '' : `HTTP ${status}` },
          }),
        (err: Error) => Object.assign(j!, { lastAttemptTime: attempted, status: { code: 14, message: err.message } }),
      );
      return;
    }
    return notFound(req.url ?? '');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
