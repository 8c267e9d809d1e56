// Offline checks of the deployment: providers cannot be downloaded here, so instead of
// `terraform validate` the Terraform is parsed (@cdktf/hcl2json) and its wiring asserted, and
// cloudbuild.yaml and the live Dockerfile are checked for the structure deploys rely on.
import { beforeAll, describe, expect, it } from 'vitest';
import { parse as parseHcl } from '@cdktf/hcl2json';
import { parse as parseYaml } from 'yaml';
import { randomUUID } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../lib/config';
import { FUNCTION_PRELOAD_ENV, PRELOAD } from '../scripts/build';
import { buildDocument } from '../client/scripts/document';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const infra = join(root, 'infra');

type Obj = Record<string, any>;
/** Module directory (relative to infra/) → all its .tf files merged. */
const mods: Record<string, Obj> = {};
/** Raw text of every .tf file, by path relative to infra/. */
const texts: Record<string, string> = {};

function tfFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (name === '.terraform') return [];
    if (statSync(path).isDirectory()) return tfFiles(path);
    return name.endsWith('.tf') ? [path] : [];
  });
}

// hcl2json gives blocks as arrays and maps as objects: concatenate arrays, merge objects.
function merge(a: Obj, b: Obj): Obj {
  for (const [k, v] of Object.entries(b)) {
    if (Array.isArray(v)) a[k] = [...(a[k] ?? []), ...v];
    else if (v && typeof v === 'object') a[k] = merge(a[k] ?? {}, v);
    else a[k] = v;
  }
  return a;
}

const mod = (name: string) => mods[name] ?? expect.fail(`no Terraform in infra/${name}`);
const res = (m: string, type: string, name: string): Obj =>
  mod(m).resource?.[type]?.[name]?.[0] ?? expect.fail(`${m}: no ${type}.${name}`);
const locals = (m: string): Obj => Object.assign({}, ...(mod(m).locals ?? []));
const varDefault = (m: string, name: string) => mod(m).variable?.[name]?.[0]?.default;
const block = (b: Obj, ...path: string[]): Obj =>
  path.reduce((o, k) => o?.[k]?.[0] ?? expect.fail(`missing block ${path.join('.')}`), b);
/** A literal, or the default of the module variable it names (`${var.x}`). */
const value = (m: string, v: unknown) => {
  const ref = typeof v === 'string' && /^\$\{var\.(\w+)\}$/.exec(v);
  return ref ? varDefault(m, ref[1]) : v;
};
/** The Node major the functions run on (Terraform's runtime); every other deploy target must agree. */
const deployedNodeMajor = () => {
  const runtime: string = block(
    res('modules/services', 'google_cloudfunctions2_function', 'this'),
    'build_config',
  ).runtime;
  return Number(/^nodejs(\d+)$/.exec(runtime)?.[1] ?? expect.fail(`runtime ${runtime}`));
};
const allResources = () =>
  Object.entries(mods).flatMap(([m, j]) =>
    Object.entries(j.resource ?? {}).flatMap(([type, byName]) =>
      Object.entries(byName as Obj).map(([name, bodies]) => ({ m, type, name, body: (bodies as Obj[])[0] })),
    ),
  );

beforeAll(async () => {
  for (const file of tfFiles(infra)) {
    const rel = relative(infra, file);
    texts[rel] = readFileSync(file, 'utf8');
    const dir = dirname(rel);
    mods[dir] = merge(mods[dir] ?? {}, await parseHcl(rel, texts[rel]));
  }
});

describe('terraform', () => {
  const hasTerraform = spawnSync('terraform', ['version'], { stdio: 'ignore' }).status === 0;

  it.skipIf(!hasTerraform)('is formatted (terraform fmt -check)', () => {
    const r = spawnSync('terraform', ['fmt', '-check', '-recursive', 'infra'], { cwd: root, encoding: 'utf8' });
    expect(r.stdout, 'files needing terraform fmt').toBe('');
    expect(r.status).toBe(0);
  });

  it('wires every module from envs/dev, and every module exists', () => {
    const used = Object.values(mod('envs/dev').module as Obj).map((m) =>
      relative(infra, resolve(infra, 'envs/dev', m[0].source)),
    );
    const present = Object.keys(mods).filter((d) => d.startsWith('modules/'));
    expect(used.sort()).toEqual(present.sort());
  });

  it('tfvars example sets only declared variables, and every required one', async () => {
    const example = await parseHcl(
      'terraform.tfvars.example',
      readFileSync(join(infra, 'envs/dev/terraform.tfvars.example'), 'utf8'),
    );
    const declared = mod('envs/dev').variable as Obj;
    for (const name of Object.keys(example)) expect(Object.keys(declared)).toContain(name);
    const required = Object.keys(declared).filter((name) => !('default' in declared[name][0]));
    expect(Object.keys(example)).toEqual(expect.arrayContaining(required));
  });

  it('declares every kind of resource the deployment needs', () => {
    const types = new Set(allResources().map((r) => r.type));
    for (const t of [
      'google_project_service',
      'google_compute_network',
      'google_service_networking_connection',
      'google_vpc_access_connector',
      'google_sql_database_instance',
      'google_sql_database',
      'google_sql_user',
      'google_storage_bucket',
      'google_secret_manager_secret',
      'google_secret_manager_secret_iam_member',
      'google_cloud_run_v2_service',
      'google_cloudfunctions2_function',
      'google_pubsub_topic',
      'google_pubsub_subscription',
      'google_cloud_scheduler_job',
      'google_firestore_database',
      'google_firestore_field',
      'google_compute_region_network_endpoint_group',
      'google_compute_backend_service',
      'google_compute_url_map',
      'google_compute_managed_ssl_certificate',
      'google_compute_global_forwarding_rule',
      'google_service_account',
      'google_artifact_registry_repository',
    ])
      expect(types, t).toContain(t);
  });

  it('Cloud SQL: Postgres on a private network, backups with point-in-time recovery, TLS only', () => {
    const db = res('modules/database', 'google_sql_database_instance', 'this');
    expect(value('modules/database', db.database_version)).toMatch(/^POSTGRES_1[5-9]$/);
    const ip = block(db, 'settings', 'ip_configuration');
    expect(ip.private_network).toBe('${var.network_id}');
    expect(ip.ssl_mode).toBe('ENCRYPTED_ONLY');
    expect(ip.authorized_networks).toBeUndefined();
    const backup = block(db, 'settings', 'backup_configuration');
    expect(backup).toMatchObject({ enabled: true, point_in_time_recovery_enabled: true });
    res('modules/database', 'google_sql_database', 'app');
    res('modules/database', 'google_sql_user', 'owner');
  });

  it('audio bucket: uniform access, public access prevention, no versioning, lifecycle, CORS', () => {
    const b = res('modules/storage', 'google_storage_bucket', 'audio');
    expect(b).toMatchObject({ uniform_bucket_level_access: true, public_access_prevention: 'enforced' });
    expect(block(b, 'versioning').enabled).toBe(false);
    expect(b.lifecycle_rule?.length).toBeGreaterThan(0);
    expect(block(b, 'cors')).toMatchObject({ origin: '${var.app_origins}', method: ['GET', 'HEAD'] });
  });

  it('grants nothing to allUsers but Cloud Run invocation behind the load balancer', () => {
    const open = allResources().filter((r) => /allUsers|allAuthenticatedUsers/.test(JSON.stringify(r.body)));
    expect(open.length).toBeGreaterThan(0);
    // Besides: the load balancer's error page bucket, which holds one static document (the 429).
    const errorPage = open.filter((r) => r.type === 'google_storage_bucket_iam_member');
    expect(errorPage.map((r) => [r.m, r.name, r.body.role, r.body.bucket])).toEqual([
      ['modules/gateway', 'errors_public', 'roles/storage.objectViewer', '${google_storage_bucket.errors.name}'],
    ]);
    const objects = allResources().filter(
      (r) => r.type === 'google_storage_bucket_object' && r.body.bucket === '${google_storage_bucket.errors.name}',
    );
    expect(objects.map((r) => r.name)).toEqual(['too_many_requests']);
    for (const r of open.filter((r) => !errorPage.includes(r))) {
      expect(`${r.type}.${r.name}`).toMatch(/^google_cloud_run_v2_service_iam_member\./);
      expect(r.body.role).toBe('roles/run.invoker');
    }
    const live = res('modules/services', 'google_cloud_run_v2_service', 'live');
    expect(live.ingress).toBe('INGRESS_TRAFFIC_INTERNAL_LOAD_BALANCER');
    expect(locals('modules/services').functions.api.ingress).toBe('ALLOW_INTERNAL_AND_GCLB');
  });

  it('secrets: distinct, values outside Terraform, mounted into every unit', () => {
    const names: string[] = locals('modules/secrets').names;
    expect(new Set(names).size).toBe(names.length);
    const core = ['IDENTITY_SECRET_KEY', 'SERVICE_AUTH_TOKEN', 'AUDIO_URL_SIGNING_KEY'];
    const previous = 'SERVICE_AUTH_TOKEN_PREVIOUS';
    expect(names).toEqual(
      expect.arrayContaining([...core, previous, 'DATABASE_OWNER_URL', 'PROVIDER_A_API_KEY', 'PROVIDER_B_API_KEY']),
    );
    // Each credential variable is bound to its own secret: exactly the secrets the units may read,
    // the previous service token only while a rotation lasts (so no unit needs a version of it otherwise).
    expect(mod('envs/dev').module.services[0].secret_ids).toBe(
      '${{ for name in local.core_secrets : name => module.secrets.ids[name] }}',
    );
    expect(locals('envs/dev').core_secrets.replace(/\s+/g, ' ')).toBe(
      `\${concat( [${core.map((n) => `"${n}"`).join(', ')}], ` +
        `var.service_auth_token_rotation ? ["${previous}"] : [], )}`,
    );
    expect(varDefault('envs/dev', 'service_auth_token_rotation')).toBe(false);
    const accessors: string = mod('envs/dev').module.secrets[0].accessors;
    // The ML service checks the core's calls with both values while a rotation lasts.
    expect(accessors).toContain('secrets = ["SERVICE_AUTH_TOKEN", "SERVICE_AUTH_TOKEN_PREVIOUS", "PROVIDER_A_API_KEY"');
    for (const unit of ['api', 'sweep', 'live'])
      expect(accessors).toMatch(
        new RegExp(
          `\\b${unit}\\s*=\\s*\\{ member = module\\.iam\\.members\\.${unit}, secrets = local\\.core_secrets \\}`,
        ),
      );
    // The services mount var.secret_ids as secrets, in both functions and the live service.
    const fn = res('modules/services', 'google_cloudfunctions2_function', 'this');
    const fnSecrets = block(fn, 'service_config').dynamic.secret_environment_variables[0];
    expect(fnSecrets.for_each).toBe('${var.secret_ids}');
    expect(fnSecrets.content[0]).toMatchObject({
      key: '${secret_environment_variables.key}',
      secret: '${secret_environment_variables.value}',
    });
    const container = block(res('modules/services', 'google_cloud_run_v2_service', 'live'), 'template', 'containers');
    const secretEnv = container.dynamic.env.find((e: Obj) => e.for_each === '${var.secret_ids}');
    expect(block(secretEnv.content[0], 'value_source', 'secret_key_ref').secret).toBe('${env.value}');
    // The only credential Terraform writes is the generated DATABASE_OWNER_URL; the other version is the
    // collector's configuration (no credential: Cloud Run mounts sidecar files from Secret Manager only).
    const versions = allResources().filter((r) => r.type === 'google_secret_manager_secret_version');
    expect(versions.map((r) => [r.m, r.body.secret])).toEqual([
      ['modules/database', '${var.owner_url_secret_id}'],
      ['modules/services', '${google_secret_manager_secret.otel_collector_config[0].id}'],
    ]);
    expect(mod('envs/dev').module.database[0].owner_url_secret_id).toBe(
      '${module.secrets.resource_ids["DATABASE_OWNER_URL"]}',
    );
  });

  it('Cloud Run live: 3600 s timeout, affinity, warm instance, CPU always on, probes', () => {
    const live = res('modules/services', 'google_cloud_run_v2_service', 'live');
    const t = block(live, 'template');
    expect(t.timeout).toBe('3600s');
    expect(t.session_affinity).toBe(true);
    expect(value('modules/services', block(t, 'scaling').min_instance_count)).toBeGreaterThanOrEqual(1);
    expect(varDefault('envs/dev', 'live_min_instances')).toBeGreaterThanOrEqual(1);
    const c = block(t, 'containers');
    expect(block(c, 'resources').cpu_idle).toBe(false);
    expect(block(c, 'startup_probe', 'http_get').path).toBe('/readyz');
    expect(block(c, 'liveness_probe', 'http_get').path).toBe('/healthz');
    expect(block(live, 'lifecycle').ignore_changes).toContain('${template[0].containers[0].image}');
    // The server's reconnect advice comes before the platform's cut.
    expect(varDefault('modules/services', 'live_connection_lifetime_seconds')).toBeLessThan(3600);
  });

  it('Cloud Run live: one worker per vCPU, concurrency and memory per worker times the workers', () => {
    const live = res('modules/services', 'google_cloud_run_v2_service', 'live');
    const t = block(live, 'template');
    const c = block(t, 'containers');
    const cpu = varDefault('modules/services', 'live_cpu');
    expect(cpu).toBe(2);
    expect(block(c, 'resources').limits.cpu).toBe('${tostring(var.live_cpu)}');
    // server.ts forks LIVE_WORKERS processes: exactly one per vCPU, never the platform's guess.
    expect(c.env.find((e: Obj) => e.name === 'LIVE_WORKERS')?.value).toBe('${tostring(var.live_cpu)}');
    // 250 connections per worker: BENCHMARKS.md "Live", one process on one core held full
    // throughput at 200 recordings (ratio 1.00) and 0.99 at 500.
    expect(t.max_instance_request_concurrency).toBe('${local.live_concurrency}');
    expect(locals('modules/services').live_concurrency).toBe(
      '${min(1000, var.live_connections_per_cpu * var.live_cpu)}',
    );
    const perWorker = varDefault('modules/services', 'live_connections_per_cpu');
    expect(perWorker).toBe(250);
    expect(Math.min(1000, perWorker * cpu)).toBe(500);
    // About 1 GiB per worker (0.6-0.9 MiB per recording in the benchmark, plus the process itself).
    expect(Number(/^(\d+)Gi$/.exec(varDefault('modules/services', 'live_memory'))?.[1])).toBeGreaterThanOrEqual(cpu);
  });

  it('functions: targets api and sweep, concurrency above 1, VPC access', () => {
    const fns = locals('modules/services').functions;
    expect(Object.fromEntries(Object.entries(fns).map(([k, f]: [string, any]) => [k, f.entry_point]))).toEqual({
      api: 'api',
      sweep: 'sweep',
    });
    for (const f of Object.values(fns) as Obj[]) expect(value('modules/services', f.concurrency)).toBeGreaterThan(1);
    const fn = res('modules/services', 'google_cloudfunctions2_function', 'this');
    expect(fn.for_each).toBe('${local.functions}');
    expect(block(fn, 'build_config')).toMatchObject({
      runtime: `nodejs${deployedNodeMajor()}`,
      entry_point: '${each.value.entry_point}',
    });
    const sc = block(fn, 'service_config');
    expect(sc).toMatchObject({
      vpc_connector: '${var.vpc_connector_id}',
      max_instance_request_concurrency: '${each.value.concurrency}',
    });
    // No collector sidecar in a function: OTLP to the Telemetry API with the service account's
    // token, the preload through NODE_OPTIONS; export follows var.otel_enabled as the live service's does.
    const env: string = sc.environment_variables;
    expect(env).toMatch(/^\$\{merge\(local\.env, local\.function_telemetry_env, \{/);
    expect(env).not.toContain('OTEL_ENABLED');
    expect(env).toContain('OTEL_RESOURCE_ATTRIBUTES = "service.name=${each.key},cloud.region=${var.region}"');
    const telemetry = locals('modules/services').function_telemetry_env;
    expect(telemetry).toEqual({
      ...FUNCTION_PRELOAD_ENV,
      OTEL_EXPORTER_OTLP_ENDPOINT: 'https://telemetry.googleapis.com',
      OTEL_EXPORTER_OTLP_AUTH: 'google',
    });
    // As the code reads them.
    const config = loadConfig({
      APP_ENV: 'test',
      SERVICE_AUTH_TOKEN: 'x'.repeat(32),
      IDENTITY_SECRET_KEY: 'y'.repeat(32),
      ...telemetry,
      OTEL_RESOURCE_ATTRIBUTES: 'service.name=sweep,cloud.region=europe-west1',
    });
    expect(config).toMatchObject({
      OTEL_EXPORTER_OTLP_AUTH: 'google',
      OTEL_RESOURCE_ATTRIBUTES: { 'service.name': 'sweep', 'cloud.region': 'europe-west1' },
    });
  });

  it('observability: a collector sidecar in the live service, its config from Secret Manager', () => {
    const t = block(res('modules/services', 'google_cloud_run_v2_service', 'live'), 'template');
    const live = block(t, 'containers');
    expect(live.name).toBe('live');
    expect(live.depends_on).toBe('${var.otel_enabled ? ["otel-collector"] : []}');
    const sidecar = t.dynamic.containers[0];
    expect(sidecar.for_each).toBe('${var.otel_enabled ? [1] : []}');
    const c = sidecar.content[0];
    expect(c).toMatchObject({ name: 'otel-collector', image: '${var.otel_collector_image}' });
    expect(c.ports).toBeUndefined(); // only the live container takes requests
    expect(`${block(c, 'volume_mounts').mount_path}config.yaml`).toBe(c.args[0].replace('--config=', ''));
    expect(block(c, 'startup_probe', 'http_get').port).toBe(13133);
    const volume = t.dynamic.volumes[0].content[0];
    expect(volume.name).toBe(block(c, 'volume_mounts').name);
    expect(block(volume, 'secret').secret).toBe('${google_secret_manager_secret.otel_collector_config[0].secret_id}');
    expect(res('modules/services', 'google_secret_manager_secret_version', 'otel_collector_config').secret_data).toBe(
      '${file("${path.module}/otel-collector.yaml")}',
    );
    expect(
      res('modules/services', 'google_secret_manager_secret_iam_member', 'otel_collector_config_live').member,
    ).toBe('serviceAccount:${var.service_accounts.live}');
    // The services' endpoint default is the sidecar's receiver; it exports to GMP and Cloud Trace as the live account.
    expect(varDefault('modules/services', 'otel_endpoint')).toBe('http://localhost:4318');
    const config = parseYaml(readFileSync(join(infra, 'modules/services/otel-collector.yaml'), 'utf8'));
    expect(config.receivers.otlp.protocols.http.endpoint).toBe('localhost:4318');
    expect(config.service.pipelines.metrics.exporters).toEqual(['googlemanagedprometheus']);
    expect(config.service.pipelines.traces.exporters).toEqual(['googlecloud']);
    expect(config.extensions.health_check.endpoint).toMatch(/:13133$/);
    expect(locals('modules/iam').telemetry).toEqual(
      expect.arrayContaining(['roles/monitoring.metricWriter', 'roles/cloudtrace.agent']),
    );
    // The functions write to the Telemetry API themselves (the api is enabled, their accounts may write).
    expect(locals('modules/iam').otlp_writers).toEqual([
      'roles/telemetry.metricsWriter',
      'roles/telemetry.tracesWriter',
    ]);
    expect(locals('modules/iam').project_roles).toContain(
      'for unit in ["api", "sweep"] : [for role in local.otlp_writers',
    );
    expect(locals('modules/apis').services).toContain('telemetry.googleapis.com');
  });

  it('alerts: outbox lag and ack latency p99, on the names the code exports', () => {
    const metricsSource = readFileSync(join(root, 'lib/telemetry/metrics.ts'), 'utf8');
    // OTLP → Prometheus (googlemanagedprometheus): dots → underscores, the unit as a suffix.
    const promName = (otlp: string, unit: string) => {
      expect(metricsSource, `lib/telemetry/metrics.ts exports ${otlp}`).toContain(`'${otlp}'`);
      return `${otlp.replace(/\./g, '_')}_${unit}`;
    };
    const outbox = block(
      res('modules/services', 'google_monitoring_alert_policy', 'outbox_lag'),
      'conditions',
      'condition_prometheus_query_language',
    );
    expect(outbox.query).toBe(
      `max(${promName('outbox.oldest_unpublished_age', 'seconds')}) > \${var.outbox_lag_alert_seconds}`,
    );
    const ack = block(
      res('modules/services', 'google_monitoring_alert_policy', 'ack_latency'),
      'conditions',
      'condition_prometheus_query_language',
    );
    expect(ack.query).toContain(
      `histogram_quantile(0.99, sum by (le) (rate(${promName('live.ack.latency', 'milliseconds')}_bucket[5m])))`,
    );
    expect(ack.query).toMatch(/> \$\{var\.ack_latency_p99_alert_ms\}$/);
    for (const name of ['outbox_lag', 'ack_latency']) {
      const p = res('modules/services', 'google_monitoring_alert_policy', name);
      expect(p.notification_channels).toBe('${var.alert_notification_channels}');
      expect(block(p, 'documentation').content.length).toBeGreaterThan(20);
    }
    // The outbox is republished every minute; the p99 threshold sits above the progress interval (10 s) by design.
    expect(varDefault('modules/services', 'outbox_lag_alert_seconds')).toBeGreaterThanOrEqual(120);
    expect(varDefault('modules/services', 'ack_latency_p99_alert_ms')).toBeGreaterThan(10_000);
    expect(mod('envs/dev').module.services[0].alert_notification_channels).toBe('${var.alert_notification_channels}');
  });

  it('environment: every Limits variable that applies in the cloud, with the code defaults', () => {
    const l = locals('modules/services');
    const recording: Obj = l.recording_defaults;
    const defaults = loadConfig({
      APP_ENV: 'test',
      SERVICE_AUTH_TOKEN: 'x'.repeat(32),
      IDENTITY_SECRET_KEY: 'y'.repeat(32),
    }) as unknown as Obj;
    const readByCode = Object.keys(defaults).filter((k) => k.startsWith('RECORDING_'));
    expect(Object.keys(recording).sort()).toEqual(readByCode.sort());
    for (const [k, v] of Object.entries(recording)) expect(Number(v), k).toBe(defaults[k]);
    const env = l.all_env as string;
    for (const name of [
      'APP_ENV',
      'LOG_LEVEL',
      'OTEL_EXPORTER_OTLP_ENDPOINT',
      'STORAGE_BUCKET',
      'GOOGLE_CLOUD_PROJECT',
      'PUBSUB_TOPIC_EVENTS',
      'PUBSUB_TOPIC_RECORDING_FINALIZED',
      'ML_SERVICE_URL',
      'PUBLIC_BASE_URL',
      'IDENTITY_JWKS_URL',
      'IDENTITY_ISSUER',
      'LIVE_CONNECTION_LIFETIME_SECONDS',
    ])
      expect(env).toMatch(new RegExp(`\\b${name}\\s+=`));
    expect(JSON.stringify(mods)).not.toContain('PUBSUB_EMULATOR_HOST');
    expect(varDefault('modules/services', 'live_connection_lifetime_seconds')).toBe(
      defaults.LIVE_CONNECTION_LIFETIME_SECONDS,
    );
    expect(env).toMatch(/\bMEETING_PURGE_AFTER_DAYS\s+=/);
    // Webhooks: the pinned schedule and disabling period, as the code's defaults.
    const webhooks: Obj = l.webhooks;
    expect(Object.keys(webhooks).sort()).toEqual(
      Object.keys(defaults)
        .filter((k) => k.startsWith('WEBHOOK_'))
        .sort(),
    );
    expect(webhooks.WEBHOOK_RETRY_SCHEDULE_SECONDS.split(',').map(Number)).toEqual(
      defaults.WEBHOOK_RETRY_SCHEDULE_SECONDS,
    );
    expect(Number(webhooks.WEBHOOK_DISABLE_AFTER_SECONDS)).toBe(defaults.WEBHOOK_DISABLE_AFTER_SECONDS);
    expect(env).toContain('local.webhooks');
    expect(varDefault('modules/services', 'meeting_purge_after_days')).toBe(defaults.MEETING_PURGE_AFTER_DAYS);
  });

  it('Pub/Sub: both topics with retention, a dead-letter topic for the ML subscription', () => {
    const m = 'modules/pubsub';
    expect(varDefault(m, 'events_topic')).toBe('events');
    expect(varDefault(m, 'recording_finalized_topic')).toBe('recording.finalized');
    const topics = mod(m).resource.google_pubsub_topic as Obj;
    for (const [name, [t]] of Object.entries(topics)) expect(t.message_retention_duration, name).toMatch(/^\d+s$/);
    const dl = block(res(m, 'google_pubsub_subscription', 'ml_batch'), 'dead_letter_policy');
    expect(dl.dead_letter_topic).toBe('${google_pubsub_topic.recording_finalized_dead_letter.id}');
    expect(res(m, 'google_pubsub_topic_iam_member', 'dead_letter_publisher').member).toBe('${local.pubsub_agent}');
    expect(res(m, 'google_pubsub_subscription_iam_member', 'dead_letter_subscriber').member).toBe(
      '${local.pubsub_agent}',
    );
  });

  it('Scheduler: calls the sweep target with an OIDC token of its own account', () => {
    const job = res('modules/scheduler', 'google_cloud_scheduler_job', 'sweep');
    const target = block(job, 'http_target');
    expect(target.uri).toBe('${var.sweep_url}');
    expect(block(target, 'oidc_token')).toEqual({
      service_account_email: '${var.invoker_email}',
      audience: '${var.sweep_url}',
    });
    const wiring = mod('envs/dev').module.scheduler[0];
    expect(wiring).toMatchObject({
      sweep_url: '${module.services.sweep_url}',
      invoker_email: '${module.iam.emails.scheduler}',
    });
    expect(mod('modules/services').output.sweep_url[0].value).toBe(
      '${google_cloudfunctions2_function.this["sweep"].url}',
    );
    expect(locals('modules/services').functions.sweep.entry_point).toBe('sweep');
    expect(res('modules/services', 'google_cloud_run_v2_service_iam_member', 'sweep_invoker').member).toBe(
      '${var.scheduler_member}',
    );
    expect(mod('envs/dev').module.services[0].scheduler_member).toBe('${module.iam.members.scheduler}');
  });

  it('Firestore: native mode, TTL on expires_at of leases and instances, the instances indexed by user', () => {
    const m = 'modules/firestore';
    expect(res(m, 'google_firestore_database', 'this').type).toBe('FIRESTORE_NATIVE');
    const ttl = res(m, 'google_firestore_field', 'ttl');
    expect(ttl.ttl_config).toHaveLength(1);
    expect(ttl.for_each).toBe('${toset(var.ttl_collections)}');
    expect(varDefault(m, 'ttl_collections')).toEqual(['live_leases', 'live_instances']);
    expect(varDefault(m, 'ttl_field')).toBe('expires_at');
    // presenceInstances: users array-contains, expires_at > (lib/fanout/liveness.ts).
    const index = res(m, 'google_firestore_index', 'instances_by_user');
    expect(index.collection).toBe('${var.instances_collection}');
    expect(varDefault(m, 'instances_collection')).toBe('live_instances');
    expect(index.fields).toEqual([
      { field_path: 'users', array_config: 'CONTAINS' },
      { field_path: 'expires_at', order: 'ASCENDING' },
    ]);
  });

  it('load balancer: /ws to Cloud Run, everything else to the api function', () => {
    const m = 'modules/gateway';
    const map = res(m, 'google_compute_url_map', 'https');
    expect(map.default_service).toBe('${google_compute_backend_service.api.id}');
    const matcher = block(map, 'path_matcher');
    expect(matcher.default_service).toBe('${google_compute_backend_service.api.id}');
    expect(matcher.path_rule).toEqual([
      { paths: ['/ws', '/ws/*'], service: '${google_compute_backend_service.live.id}' },
    ]);
    expect(block(res(m, 'google_compute_backend_service', 'live'), 'backend').group).toBe(
      '${google_compute_region_network_endpoint_group.live.id}',
    );
    expect(block(res(m, 'google_compute_backend_service', 'api'), 'backend').group).toBe(
      '${google_compute_region_network_endpoint_group.api.id}',
    );
    expect(block(res(m, 'google_compute_region_network_endpoint_group', 'live'), 'cloud_run').service).toBe(
      '${var.live_service_name}',
    );
    expect(block(res(m, 'google_compute_region_network_endpoint_group', 'api'), 'cloud_function').function).toBe(
      '${var.api_function_name}',
    );
    expect(mod('envs/dev').module.gateway[0]).toMatchObject({
      api_function_name: '${module.services.api_function_name}',
      live_service_name: '${module.services.live_service_name}',
    });
  });

  it('IAM: no primitive roles, no authoritative bindings, one account per unit, signBlob on itself', () => {
    for (const [file, text] of Object.entries(texts))
      expect(text, file).not.toMatch(/roles\/(owner|editor|viewer)(?![\w.])/);
    const iam = allResources().filter((r) => /_iam_(member|binding|policy)$/.test(r.type));
    expect(iam.filter((r) => /_iam_(binding|policy)$/.test(r.type))).toEqual([]);
    const role = /: (roles\/[a-zA-Z.]+|\$\{each\.value\.role\}|\$\{google_project_iam_custom_role\.\w+\.id\})$/;
    for (const r of iam) expect(`${r.type}.${r.name}: ${r.body.role}`).toMatch(role);
    const projectRoles = JSON.stringify(locals('modules/iam').project_roles);
    expect(projectRoles).not.toMatch(/roles\/(owner|editor|viewer)\b/);
    expect(mod('envs/dev').module.services[0].service_accounts).toEqual({
      api: '${module.iam.emails.api}',
      sweep: '${module.iam.emails.sweep}',
      live: '${module.iam.emails.live}',
    });
    const signer = res('modules/iam', 'google_service_account_iam_member', 'self_signer');
    expect(signer).toMatchObject({
      role: 'roles/iam.serviceAccountTokenCreator',
      service_account_id: '${google_service_account.this[each.key].name}',
      member: '${google_service_account.this[each.key].member}',
    });
    expect(locals('modules/iam').signers).toEqual(expect.arrayContaining(['api', 'live']));
  });
});

// Issue 40 item 2: the database connection budget in one place (modules/connections, filled by
// envs/dev), its worst case against max_connections, and managed pooling where it cannot fit.
describe('database connection budget', () => {
  interface Unit {
    max_instances: number;
    processes: number;
    pool: number;
  }
  interface Pooling {
    enabled: boolean;
    max_pool_size: number;
  }
  /** modules/connections' arithmetic (the Terraform run below proves they agree). */
  const budget = (units: Record<string, Unit>, tier: string, pooling: Pooling) => {
    const clients = Object.values(units).reduce((n, u) => n + u.max_instances * u.processes * u.pool, 0);
    const vcpus = Number(/^db-(?:custom-|perf-optimized-N-)(\d+)/.exec(tier)?.[1] ?? expect.fail(`tier ${tier}`));
    const poolers = Math.max(1, Math.floor(vcpus / 4));
    const server = pooling.enabled ? poolers * Object.keys(units).length * pooling.max_pool_size : clients;
    return { clients, server };
  };
  /** envs/dev's inputs to the budget: its variables' defaults, overridden by a tfvars file's values. */
  const inputs = async (tfvars?: string) => {
    const given: Obj = tfvars ? await parseHcl(tfvars, readFileSync(join(infra, 'envs/dev', tfvars), 'utf8')) : {};
    // A misspelt name would leave the default in place: every name must be a declared variable.
    for (const name of Object.keys(given)) expect(Object.keys(mod('envs/dev').variable)).toContain(name);
    const v = (name: string) => (name in given ? given[name] : varDefault('envs/dev', name));
    // A literal, or `${var.x}` / `${var.x.y}`.
    const resolve = (x: unknown): any => {
      const ref = typeof x === 'string' && /^\$\{var\.(\w+)(?:\.(\w+))?\}$/.exec(x);
      if (!ref) return x;
      return ref[2] ? v(ref[1])[ref[2]] : v(ref[1]);
    };
    const wiring = mod('envs/dev').module.connections[0];
    const units: Record<string, Unit> = Object.fromEntries(
      Object.entries<Obj>(wiring.units).map(([unit, u]) => [
        unit,
        { max_instances: resolve(u.max_instances), processes: resolve(u.processes), pool: resolve(u.pool) },
      ]),
    );
    return {
      units,
      tier: resolve(wiring.tier) as string,
      maxConnections: resolve(wiring.max_connections) as number,
      pooling: resolve(wiring.pooling) as Pooling,
    };
  };
  const reserve = () => varDefault('modules/connections', 'reserve') as number;

  it("should take every unit's instance limit, processes and pool, and max_connections, from the one module", () => {
    const wiring = mod('envs/dev').module.connections[0];
    expect(Object.keys(wiring.units).sort()).toEqual(['api', 'live', 'sweep']);
    expect(wiring.units.live.processes).toBe('${var.live_cpu}');
    // The services and the database get their numbers only from it.
    const services = mod('envs/dev').module.services[0];
    expect(services.connections).toBe('${module.connections.units}');
    expect(services.live_cpu).toBe('${var.live_cpu}');
    const database = mod('envs/dev').module.database[0];
    expect(database).toMatchObject({
      max_connections: '${module.connections.max_connections}',
      pooling: '${module.connections.pooling}',
      tier: '${var.db_tier}',
    });
    expect(varDefault('modules/database', 'max_connections')).toBeUndefined();
    const flag = block(res('modules/database', 'google_sql_database_instance', 'this'), 'settings').database_flags;
    expect(flag).toContainEqual({ name: 'max_connections', value: '${tostring(var.max_connections)}' });
    // Instance limits and pools: no number of their own in the services module.
    const fn = block(res('modules/services', 'google_cloudfunctions2_function', 'this'), 'service_config');
    expect(fn.max_instance_count).toBe('${var.connections[each.key].max_instances}');
    expect(fn.environment_variables).toContain('DB_POOL_MAX              = tostring(var.connections[each.key].pool)');
    const live = block(res('modules/services', 'google_cloud_run_v2_service', 'live'), 'template');
    expect(block(live, 'scaling').max_instance_count).toBe('${var.connections.live.max_instances}');
    const env = block(live, 'containers').env as Obj[];
    expect(env.find((e) => e.name === 'DB_POOL_MAX')?.value).toBe('${tostring(var.connections.live.pool)}');
    // A pool per worker: the budget's live processes are LIVE_WORKERS.
    expect(env.find((e) => e.name === 'LIVE_WORKERS')?.value).toBe('${tostring(var.live_cpu)}');
    expect(mod('modules/services').variable.connections[0].validation[0].condition).toBe(
      '${var.connections.live.processes == var.live_cpu}',
    );
    for (const [file, text] of Object.entries(texts))
      expect(text, file).not.toMatch(/max_instance_count\s*=\s*\d|DB_POOL_MAX\s*=\s*"?\d|db_pool_max\s*=\s*\d/);
    // The arithmetic below is the module's.
    expect(locals('modules/connections')).toMatchObject({
      clients: '${{ for unit, u in var.units : unit => u.max_instances * u.processes * u.pool }}',
      poolers: '${max(1, floor(local.vcpus / 4))}',
      server_connections:
        '${var.pooling.enabled ? local.poolers * length(var.units) * var.pooling.max_pool_size : local.client_connections}',
    });
    expect(mod('modules/connections').output.max_connections[0].precondition[0].condition).toBe(
      '${local.server_connections + var.reserve <= var.max_connections}',
    );
  });

  it('should keep a reserve of 10 for administration: superuser slots, the migration step, operators', () => {
    // 3 superuser_reserved_connections + 2 for db:apply + 5 for operators (see the variable).
    expect(reserve()).toBe(10);
    expect(texts['modules/connections/variables.tf']).toMatch(/3: PostgreSQL's superuser_reserved_connections/);
  });

  it("should fit the dev environment's worst case, every unit at its instance limit, directly", async () => {
    const dev = await inputs();
    expect(dev.pooling.enabled).toBe(false);
    const { clients, server } = budget(dev.units, dev.tier, dev.pooling);
    // api 10 × 8, sweep 2 × 2, live 5 instances × 2 workers × 4.
    expect(clients).toBe(124);
    expect(server + reserve()).toBeLessThanOrEqual(dev.maxConnections);
  });

  it('should not fit 100,000 recordings (226 live instances × 10) directly under the largest tier, and fit with managed pooling', async () => {
    const fleet = await inputs('fleet-100k.tfvars');
    expect(fleet.units.live).toEqual({ max_instances: 226, processes: 1, pool: 10 });
    // The largest Enterprise Plus machine; 1,000 is Cloud SQL's default max_connections from 120 GB of memory.
    expect(fleet.tier).toBe('db-perf-optimized-N-128');
    expect(fleet.maxConnections).toBe(1000);
    const direct = budget(fleet.units, fleet.tier, { ...fleet.pooling, enabled: false });
    expect(direct.clients).toBe(3064);
    expect(direct.server + reserve()).toBeGreaterThan(fleet.maxConnections);
    expect(fleet.pooling.enabled).toBe(true);
    const pooled = budget(fleet.units, fleet.tier, fleet.pooling);
    // 32 poolers × 3 users × 10.
    expect(pooled.server).toBe(960);
    expect(pooled.server + reserve()).toBeLessThanOrEqual(fleet.maxConnections);
  });

  it('should pool in transaction mode on Enterprise Plus, the runtime units on the pooled port', () => {
    const db = res('modules/database', 'google_sql_database_instance', 'this');
    const settings = block(db, 'settings');
    expect(settings.edition).toBe('${startswith(var.tier, "db-perf-optimized-N-") ? "ENTERPRISE_PLUS" : "ENTERPRISE"}');
    const pool = settings.dynamic.connection_pool_config[0];
    expect(pool.for_each).toBe('${var.pooling.enabled ? [1] : []}');
    expect(pool.content[0].connection_pooling_enabled).toBe(true);
    expect(pool.content[0].flags).toEqual([
      { name: 'pool_mode', value: 'transaction' },
      { name: 'max_pool_size', value: '${tostring(var.pooling.max_pool_size)}' },
    ]);
    expect(locals('modules/database').port).toBe('${var.pooling.enabled ? 6432 : 5432}');
    expect(mod('modules/database').output.runtime_urls[0].value).toContain(':${local.port}/');
    // The migration step stays on a direct connection (the Auth Proxy to 5432).
    expect(res('modules/database', 'google_secret_manager_secret_version', 'owner_url').secret_data).toContain(
      ':5432/',
    );
  });

  const hasTerraform = spawnSync('terraform', ['version'], { stdio: 'ignore' }).status === 0;

  // The module itself, run by Terraform (it has no provider, so `terraform plan` runs offline).
  it.skipIf(!hasTerraform)('should be refused by terraform plan exactly when the budget does not fit', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mi-connections-'));
    try {
      for (const f of readdirSync(join(infra, 'modules/connections')))
        copyFileSync(join(infra, 'modules/connections', f), join(dir, f));
      const plan = (vars: Obj) => {
        writeFileSync(join(dir, 'terraform.tfvars.json'), JSON.stringify(vars));
        return spawnSync('terraform', ['plan', '-input=false', '-no-color', '-lock=false'], {
          cwd: dir,
          encoding: 'utf8',
        });
      };
      const dev = await inputs();
      const fleet = await inputs('fleet-100k.tfvars');
      const vars = (x: typeof dev, pooling = x.pooling) => ({
        units: x.units,
        tier: x.tier,
        max_connections: x.maxConnections,
        pooling,
      });
      const ok = plan(vars(dev));
      expect(ok.status, ok.stderr).toBe(0);
      expect(ok.stdout).toMatch(/server_connections\s*=\s*124\b/);
      const pooled = plan(vars(fleet));
      expect(pooled.status, pooled.stderr).toBe(0);
      expect(pooled.stdout).toMatch(/server_connections\s*=\s*960\b/);
      expect(pooled.stdout).toMatch(/client_connections\s*=\s*3064\b/);
      const direct = plan(vars(fleet, { ...fleet.pooling, enabled: false }));
      expect(direct.status).not.toBe(0);
      expect(direct.stderr).toMatch(/Connection budget: 3064 server connections/);
      // Pooling on an Enterprise tier is refused too.
      const enterprise = plan({ ...vars(dev), pooling: { enabled: true, max_pool_size: 10 } });
      expect(enterprise.status).not.toBe(0);
      expect(enterprise.stderr).toMatch(/needs a Cloud SQL Enterprise Plus tier/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

// Issue 38 item 2: the schema owner is the migration step's alone; each runtime unit logs in as
// its own service account (IAM database authentication), which db:apply grants its unit's role.
describe('database roles', () => {
  const units = ['api', 'live', 'sweep'];

  it('should make the built-in mi_owner the schema owner, its URL a secret only the deployer reads', () => {
    const owner = res('modules/database', 'google_sql_user', 'owner');
    expect(owner).toMatchObject({ name: '${var.owner_name}', password: '${random_password.owner.result}' });
    expect(owner.type).toBeUndefined(); // built-in
    expect(varDefault('modules/database', 'owner_name')).toBe('mi_owner');
    expect(res('modules/database', 'google_secret_manager_secret_version', 'owner_url').secret_data).toMatch(
      /^postgresql:\/\/\$\{google_sql_user\.owner\.name\}:\$\{random_password\.owner\.result\}@/,
    );
    // Who may read which secret (envs/dev): the owner URL is the deployer's only.
    const accessors: string = mod('envs/dev').module.secrets[0].accessors;
    const readers = [
      ...accessors.matchAll(
        /\b(\w+)\s*=\s*\{\s*member\s*=\s*[^\n]+?\s+secrets\s*=\s*(local\.core_secrets|\[[^\]]*\])/g,
      ),
    ];
    expect(readers.map((m) => m[1]).sort()).toEqual(['api', 'deployer', 'live', 'ml', 'sweep']);

    for (const [, unit, secrets] of readers) {
      const resolved = secrets.trim() === 'local.core_secrets' ? locals('envs/dev').core_secrets : secrets;
      if (unit === 'deployer') expect(resolved.trim()).toBe('["DATABASE_OWNER_URL"]');
      else expect(resolved, unit).not.toMatch(/DATABASE_/);
    }
    // The services module refuses a database credential among its secrets.
    const validations = mod('modules/services').variable.secret_ids[0].validation as Obj[];
    expect(validations.map((v) => v.condition)).toContainEqual(
      '${!contains(keys(var.secret_ids), "DATABASE_OWNER_URL") && !contains(keys(var.secret_ids), "DATABASE_URL")}',
    );
  });

  it('should give each runtime unit its own IAM database user, with the roles to log in', () => {
    const db = res('modules/database', 'google_sql_database_instance', 'this');
    expect(block(db, 'settings').database_flags).toContainEqual({ name: 'cloudsql.iam_authentication', value: 'on' });
    const user = res('modules/database', 'google_sql_user', 'runtime');
    expect(user).toMatchObject({
      for_each: '${local.runtime_logins}',
      name: '${each.value}',
      type: 'CLOUD_IAM_SERVICE_ACCOUNT',
    });
    expect(locals('modules/database').runtime_logins).toBe(
      '${{ for unit, email in var.runtime_accounts : unit => trimsuffix(email, ".gserviceaccount.com") }}',
    );
    expect(mod('envs/dev').module.database[0].runtime_accounts).toEqual(
      Object.fromEntries(units.map((u) => [u, `\${module.iam.emails.${u}}`])),
    );
    expect(locals('modules/iam').database_login).toEqual(['roles/cloudsql.instanceUser', 'roles/cloudsql.client']);
    expect(locals('modules/iam').project_roles).toContain(
      'for unit in ["api", "sweep", "live"] : [for role in local.database_login',
    );
  });

  it("should connect each unit as its own user, without a password, presenting its account's token", () => {
    const urls = mod('modules/database').output.runtime_urls[0].value as string;
    // The user is the IAM login (URL-encoded: it holds an @), and no password follows it.
    expect(urls).toContain(
      '"postgresql://${urlencode(u.name)}@${google_sql_database_instance.this.private_ip_address}',
    );
    expect(urls).toContain('for unit, u in google_sql_user.runtime');
    expect(mod('envs/dev').module.services[0].database_urls).toBe('${module.database.runtime_urls}');
    const fn = block(res('modules/services', 'google_cloudfunctions2_function', 'this'), 'service_config');
    expect(fn.environment_variables).toMatch(/DATABASE_URL\s+= var\.database_urls\[each\.key\]/);
    expect(fn.environment_variables).toMatch(/DB_IAM_AUTH\s+= "true"/);
    const env = block(res('modules/services', 'google_cloud_run_v2_service', 'live'), 'template', 'containers')
      .env as Obj[];
    expect(env).toContainEqual({ name: 'DATABASE_URL', value: '${var.database_urls.live}' });
    expect(env).toContainEqual({ name: 'DB_IAM_AUTH', value: 'true' });
    // The code reads both variables.
    const config = loadConfig({
      APP_ENV: 'test',
      SERVICE_AUTH_TOKEN: 'x'.repeat(32),
      IDENTITY_SECRET_KEY: 'y'.repeat(32),
      DB_IAM_AUTH: 'true',
    });
    expect(config.DB_IAM_AUTH).toBe(true);
  });

  it("should have the migration step apply the schema as the owner and grant each unit's role to its login", () => {
    const build = parseYaml(readFileSync(join(root, 'cloudbuild.yaml'), 'utf8'));
    expect(build.availableSecrets.secretManager).toEqual([
      { versionName: 'projects/$PROJECT_ID/secrets/DATABASE_OWNER_URL/versions/latest', env: 'DATABASE_OWNER_URL' },
    ]);
    const steps = build.steps as Obj[];
    const schemaSteps = steps.filter((s) => s.secretEnv);
    expect(schemaSteps.map((s) => s.id)).toEqual(['schema-apply', 'schema-finish']);
    for (const step of schemaSteps) {
      expect(step.env).toContain(
        'DB_RUNTIME_LOGINS=api=${_DB_LOGIN_API},live=${_DB_LOGIN_LIVE},sweep=${_DB_LOGIN_SWEEP}',
      );
      expect(step.args[0]).toBe('schema/cloud-apply.sh');
    }
    expect(readFileSync(join(root, 'schema/cloud-apply.sh'), 'utf8')).toMatch(/^npm run db:apply -- "\$@"$/m);
    const subs = String(mod('envs/dev').output.cloudbuild_substitutions[0].value);
    for (const u of units)
      expect(subs).toMatch(
        new RegExp(`_DB_LOGIN_${u.toUpperCase()}\\s*=\\s*module\\.database\\.runtime_logins\\.${u}\\b`),
      );
  });
});

describe('cloudbuild.yaml', () => {
  const build = parseYaml(readFileSync(join(root, 'cloudbuild.yaml'), 'utf8'));
  const steps: Obj[] = build.steps;
  const ids = steps.map((s) => s.id);

  /** Steps a step waits for, directly or not (no waitFor: every earlier step; ['-']: none). */
  function stepsBefore(id: string, seen = new Set<string>()): Set<string> {
    const i = ids.indexOf(id);
    const direct: string[] = steps[i].waitFor ?? ids.slice(0, i);
    for (const d of direct)
      if (d !== '-' && !seen.has(d)) {
        seen.add(d);
        stepsBefore(d, seen);
      }
    return seen;
  }

  it('names every step and waits only for steps that exist', () => {
    for (const s of steps) {
      expect(s.id, JSON.stringify(s)).toMatch(/^[a-z][a-z0-9-]*$/);
      expect(typeof s.name).toBe('string');
      for (const w of s.waitFor ?? []) if (w !== '-') expect(ids.slice(0, ids.indexOf(s.id))).toContain(w);
    }
    expect(new Set(ids).size).toBe(ids.length);
    for (const id of [
      'install',
      'typecheck',
      'test',
      'build',
      'image-build',
      'image-push',
      'schema-apply',
      'smoke-test',
    ])
      expect(ids).toContain(id);
  });

  it('touches the database and deploys only after typecheck and tests, smoke-tests last', () => {
    const deploys = ids.filter((id) => id.startsWith('deploy-'));
    expect(deploys.sort()).toEqual(['deploy-api', 'deploy-live', 'deploy-sweep']);
    for (const id of ['schema-apply', ...deploys])
      expect([...stepsBefore(id)], id).toEqual(expect.arrayContaining(['install', 'typecheck', 'test']));
    for (const id of deploys) expect([...stepsBefore(id)], id).toContain('schema-apply');
    expect([...stepsBefore('smoke-test')]).toEqual(expect.arrayContaining(deploys));
    // What the older release cannot run beside waits until after the rollout (schema/rollout.ts),
    // and the build's timeout leaves room for that wait.
    const finish = steps[ids.indexOf('schema-finish')];
    expect([...stepsBefore('schema-finish')]).toContain('smoke-test');
    const wait = Number(finish.args[finish.args.indexOf('--wait-older-release') + 1]);
    expect(wait).toBeGreaterThanOrEqual(3600); // Cloud Run's request timeout: the longest an old WebSocket lives
    expect(Number.parseInt(build.timeout, 10)).toBeGreaterThan(wait + 1800);
    expect(steps[ids.indexOf('test')].name).toMatch(/google-cloud-cli:emulators$/);
  });

  it('runs the tests on native PostgreSQL as CI does, and the guards', () => {
    const script = steps[ids.indexOf('test')].args.join('\n');
    const ci = readFileSync(join(root, '.ci/run'), 'utf8');
    for (const line of ['bash schema/install-native.sh', 'TEST_DATABASE=native npm test', 'npm run test:guards']) {
      expect(ci).toContain(line);
      expect(script).toContain(line);
    }
  });

  it('runs the same lint step as CI before the database is touched', () => {
    expect(readFileSync(join(root, '.ci/run'), 'utf8')).toMatch(/^npm run lint$/m);
    expect(steps[ids.indexOf('lint')].args).toEqual(['run', 'lint']);
    expect([...stepsBefore('schema-apply')]).toContain('lint');
  });

  it('uses exactly the substitutions it defines or Terraform provides', () => {
    const text = readFileSync(join(root, 'cloudbuild.yaml'), 'utf8').replace(/^\s*#.*$/gm, '');
    const used = new Set([...text.matchAll(/\$\{(_[A-Z0-9_]+)\}/g)].map((m) => m[1]));
    const fromTerraform = [
      ...String(mod('envs/dev').output.cloudbuild_substitutions[0].value).matchAll(/(_[A-Z0-9_]+)\s*=/g),
    ].map((m) => m[1]);
    const provided = new Set([...Object.keys(build.substitutions ?? {}), ...fromTerraform]);
    // Cloud Build rejects a build given a substitution it does not use, and one it uses but lacks.
    expect([...used].sort()).toEqual([...provided].sort());
  });
});

describe('live service Dockerfile', () => {
  const path = join(root, 'run-services/live/Dockerfile');
  const lines = existsSync(path)
    ? readFileSync(path, 'utf8')
        .split('\n')
        .filter((l) => l && !l.startsWith('#'))
    : [];

  it("runs the bundle as a non-root user from the deployed Node major's slim image with production deps only", () => {
    const froms = lines.filter((l) => l.startsWith('FROM '));
    expect(froms.length).toBeGreaterThan(0);
    for (const l of froms) expect(l).toMatch(new RegExp(`^FROM node:${deployedNodeMajor()}-slim\\b`));
    expect(lines.some((l) => /^RUN .*npm ci --omit=dev/.test(l))).toBe(true);
    const user = [...lines].reverse().find((l) => l.startsWith('USER '));
    expect(user).toMatch(/^USER (?!root|0\b)\S+/);
    expect(lines.indexOf(user!)).toBeLessThan(lines.findIndex((l) => l.startsWith('CMD ')));
    // The telemetry preload first (test/deploy/targets.test.ts runs this command and sees its spans).
    expect(lines.at(-1)).toBe(`CMD ["node", "--import", "./dist/${PRELOAD}", "dist/server.js"]`);
  });
});

// Node 20 reached end of life on 2026-04-30. Every deploy target runs one LTS major (Terraform's
// functions runtime is the reference), while the code stays runnable on the Node 20.19 of local
// machines: engines and @types/node stay on 20, so the typecheck refuses APIs Node 20 lacks.
describe('Node runtime', () => {
  const build = parseYaml(readFileSync(join(root, 'cloudbuild.yaml'), 'utf8'));
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));

  it('deploys on an active LTS line (even major, 24 or later)', () => {
    const major = deployedNodeMajor();
    expect(major).toBeGreaterThanOrEqual(24);
    expect(major % 2).toBe(0);
  });

  it('cloudbuild.yaml builds, tests and deploys on that major', () => {
    const major = deployedNodeMajor();
    const nodeImages = (build.steps as Obj[]).map((s) => s.name as string).filter((n) => /^node:/.test(n));
    expect(nodeImages.length).toBeGreaterThan(0);
    for (const n of nodeImages) expect(n).toBe(`node:${major}`);
    expect(String(build.substitutions._NODE_VERSION)).toMatch(new RegExp(`^${major}\\.\\d+\\.\\d+$`));
    const deploys = (build.steps as Obj[]).filter((s) => /^deploy-(api|sweep)$/.test(s.id));
    expect(deploys).toHaveLength(2);
    for (const s of deploys) expect(s.args.join(' ')).toContain(`--runtime=nodejs${major} `);
    const text = readFileSync(join(root, 'cloudbuild.yaml'), 'utf8');
    for (const m of text.matchAll(/--runtime=(\S+)/g)) expect(m[1]).toBe(`nodejs${major}`);
    for (const m of text.matchAll(/\bnode:(\d+)/g)) expect(Number(m[1])).toBe(major);
  });

  it('CI also runs on that major, and the docs name it', () => {
    const major = deployedNodeMajor();
    expect(readFileSync(join(root, '.ci/run'), 'utf8')).toMatch(/\.ci\/node-lts/);
    expect(readFileSync(join(root, '.ci/node-lts'), 'utf8')).toMatch(new RegExp(`node@${major}\\b`));
    const docs = readFileSync(join(root, 'docs/deployment.md'), 'utf8');
    expect(docs).toContain(`nodejs${major}`);
    for (const m of docs.matchAll(/--runtime=(\S+)/g)) expect(m[1]).toBe(`nodejs${major}`);
  });

  it('keeps the code runnable on Node 20.19 locally', () => {
    expect(pkg.engines.node).toBe('>=20.19');
    expect(pkg.devDependencies['@types/node']).toMatch(/^\^20\./);
    // The bundles ship to the LTS but test/deploy runs them on the local Node too.
    expect(readFileSync(join(root, 'scripts/build.ts'), 'utf8')).toMatch(/target: 'node20'/);
  });
});

// Issue #17 item 6: per-client rate limits at the edge (Cloud Armor on the load balancer), and a
// 429 that tells clients when to come back.
describe('edge rate limits', () => {
  const m = 'modules/gateway';
  const policy = () => res(m, 'google_compute_security_policy', 'edge');
  const rules = () => policy().rule as Obj[];
  const rule = (action: string) => rules().find((r) => r.action === action) ?? expect.fail(`no ${action} rule`);
  const byPriority = (priority: number) =>
    rules().find((r) => r.priority === priority) ?? expect.fail(`no rule ${priority}`);
  const limits = (name: string) => varDefault(m, name) as Obj;
  // Cloud Armor accepts only these intervals.
  const INTERVALS = [10, 30, 60, 120, 180, 240, 300, 600, 900, 1200, 1800, 2700, 3600];

  it('puts the policy in front of both backends', () => {
    for (const b of ['api', 'live'])
      expect(res(m, 'google_compute_backend_service', b).security_policy, b).toBe(
        '${google_compute_security_policy.edge.id}',
      );
    expect(policy().type).toBe('CLOUD_ARMOR');
  });

  it('throttles each Authorization header value, before any per-IP rule sees the request', () => {
    const t = byPriority(1000);
    expect(block(t, 'match', 'expr').expression).toBe("has(request.headers['authorization'])");
    const o = block(t, 'rate_limit_options');
    expect(o).toMatchObject({
      conform_action: 'allow',
      exceed_action: 'deny(429)',
      enforce_on_key: 'HTTP_HEADER',
      enforce_on_key_name: 'Authorization',
    });
    expect(block(o, 'rate_limit_threshold')).toEqual({
      count: '${var.rate_limit_per_token.count}',
      interval_sec: '${var.rate_limit_per_token.interval_seconds}',
    });
    const { count, interval_seconds } = limits('rate_limit_per_token');
    expect(count).toBeGreaterThanOrEqual(1);
    expect(count).toBeLessThanOrEqual(1_000_000);
    expect(INTERVALS).toContain(interval_seconds);
    // The first matching rule decides: the token rule must come before the catch-all IP rule.
    expect(t.priority).toBeLessThan(rule('rate_based_ban').priority);
  });

  it('bans a client IP over its limit for requests without a token', () => {
    const b = rule('rate_based_ban');
    expect(block(b, 'match')).toMatchObject({ versioned_expr: 'SRC_IPS_V1' });
    expect(block(b, 'match', 'config').src_ip_ranges).toEqual(['*']);
    const o = block(b, 'rate_limit_options');
    expect(o).toMatchObject({
      conform_action: 'allow',
      exceed_action: 'deny(429)',
      enforce_on_key: 'IP',
      ban_duration_sec: '${var.rate_limit_per_ip.ban_seconds}',
    });
    expect(block(o, 'rate_limit_threshold')).toEqual({
      count: '${var.rate_limit_per_ip.count}',
      interval_sec: '${var.rate_limit_per_ip.interval_seconds}',
    });
    const { count, interval_seconds, ban_seconds } = limits('rate_limit_per_ip');
    expect(count).toBeGreaterThanOrEqual(1);
    expect(count).toBeLessThanOrEqual(10_000); // a rate-based ban's maximum
    expect(INTERVALS).toContain(interval_seconds);
    expect(ban_seconds).toBeGreaterThanOrEqual(interval_seconds);
  });

  it("gives the ML service's writes a per-token limit sized by recordings, and no operation a user may call", async () => {
    const ml = byPriority(900);
    expect(ml.action).toBe('throttle');
    expect(ml.priority).toBeLessThan(byPriority(1000).priority); // met first: never the per-token rule
    expect(block(ml, 'match', 'expr').expression).toBe(
      "request.method != 'GET' && request.path.matches('${local.ml_write_paths}')",
    );
    const o = block(ml, 'rate_limit_options');
    expect(o).toMatchObject({ enforce_on_key: 'HTTP_HEADER', enforce_on_key_name: 'Authorization' });
    expect(block(o, 'rate_limit_threshold')).toEqual({
      count: '${var.ml_rate_limit.recordings * var.ml_rate_limit.requests_per_recording_minute * 2}',
      interval_sec: 60,
    });
    // docs/deployment.md's arithmetic: 40 requests per recording-minute, 1,000 recordings unthrottled.
    const { recordings, requests_per_recording_minute: perMinute } = limits('ml_rate_limit');
    expect(perMinute).toBeGreaterThanOrEqual(40);
    expect(recordings * perMinute * 2).toBeGreaterThanOrEqual(1000 * 40);
    // The paths, against the API's own document: a write only the service may call matches, and
    // nothing a user may call does (users keep their own budget).
    const paths = new RegExp(locals(m).ml_write_paths);
    const doc = await buildDocument();
    const seen: string[] = [];
    for (const [path, ops] of Object.entries<Obj>(doc.paths))
      for (const [method, op] of Object.entries<Obj>(ops)) {
        const schemes = (op.security ?? []).flatMap((s: Obj) => Object.keys(s));
        const serviceOnly = schemes.includes('serviceAuth') && !schemes.includes('bearerAuth');
        const limited = method !== 'get' && paths.test(path.replace(/\{[^}]+\}/g, randomUUID()));
        expect(limited, `${method.toUpperCase()} ${path}`).toBe(serviceOnly && method !== 'get');
        if (limited) seen.push(`${method.toUpperCase()} ${path}`);
      }
    expect(seen).toContain('POST /transcriptions/{id}/segments');
  });

  it('allows the rest by default, exempts only configured ranges, never previews by default', () => {
    const last = rules().find((r) => r.priority === 2147483647) ?? expect.fail('no default rule');
    expect(last.action).toBe('allow');
    expect(block(last, 'match', 'config').src_ip_ranges).toEqual(['*']);
    const exempt = policy().dynamic.rule[0];
    expect(exempt.for_each).toBe('${length(var.rate_limit_exempt_ip_ranges) > 0 ? [1] : []}');
    expect(block(exempt.content[0], 'match', 'config').src_ip_ranges).toBe('${var.rate_limit_exempt_ip_ranges}');
    expect(exempt.content[0].priority).toBeLessThan(rule('throttle').priority);
    expect(varDefault(m, 'rate_limit_exempt_ip_ranges')).toEqual([]);
    expect(varDefault(m, 'rate_limit_preview')).toBe(false);
    expect(mod('envs/dev').module.gateway[0].rate_limit_exempt_ip_ranges).toBe('${var.rate_limit_exempt_ip_ranges}');
  });

  it('answers the edge 429 as problem+json with Retry-After', () => {
    const policy = block(res(m, 'google_compute_url_map', 'https'), 'default_custom_error_response_policy');
    expect(policy.error_service).toBe('${google_compute_backend_bucket.errors.id}');
    expect(block(policy, 'error_response_rule')).toEqual({
      match_response_codes: ['429'],
      path: '/${google_storage_bucket_object.too_many_requests.name}',
      override_response_code: 429,
    });
    const bucket = res(m, 'google_compute_backend_bucket', 'errors');
    expect(bucket.bucket_name).toBe('${google_storage_bucket.errors.name}');
    expect(bucket.custom_response_headers).toEqual(['Retry-After: ${local.retry_after_seconds}']);
    expect(locals(m).retry_after_seconds).toBe(
      '${max(var.rate_limit_per_token.interval_seconds, var.rate_limit_per_ip.ban_seconds)}',
    );
    const body = res(m, 'google_storage_bucket_object', 'too_many_requests');
    expect(body).toMatchObject({ content_type: 'application/problem+json', cache_control: 'no-store' });
    expect(body.content).toMatch(/\btype\s*=\s*"https:\/\/meeting-intelligence\.dev\/problems\/too_many_requests"/);
    expect(body.content).toMatch(/\bstatus\s*=\s*429\b/);
  });

  it("documents the limits and the Retry-After clients get, with Terraform's values", () => {
    const token = limits('rate_limit_per_token');
    const ip = limits('rate_limit_per_ip');
    const retryAfter = Math.max(token.interval_seconds, ip.ban_seconds);
    const docs = readFileSync(join(root, 'docs/deployment.md'), 'utf8');
    expect(docs).toContain(`${token.count} requests per ${token.interval_seconds} s`);
    expect(docs).toContain(`${ip.count} requests per ${ip.interval_seconds} s`);
    expect(docs).toContain(`banned for ${ip.ban_seconds} s`);
    expect(docs).toContain(`Retry-After: ${retryAfter}`);
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    expect(readme).toMatch(/429.*Retry-After/s);
    expect(readFileSync(join(root, 'functions/api/docs.ts'), 'utf8')).toMatch(/429[^']*Retry-After/);
  });
});
