// The Terraform against the Google provider's own schema (test/support/terraform-schema.ts):
// `terraform init` cannot download the provider here, so `terraform validate` cannot run.
import { parse as parseHcl } from '@cdktf/hcl2json';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { checkModule, loadProviderSchema, type ProviderSchema } from './support/terraform-schema';

const infra = join(resolve(dirname(fileURLToPath(import.meta.url)), '..'), 'infra');
const tfFiles = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory()
      ? e.name === '.terraform'
        ? []
        : tfFiles(join(dir, e.name))
      : e.name.endsWith('.tf')
        ? [join(dir, e.name)]
        : [],
  );

let schema: ProviderSchema;
beforeAll(() => {
  schema = loadProviderSchema();
});

const problemsOf = async (src: string) => checkModule('t.tf', await parseHcl('t.tf', src), schema);

describe('the Terraform against the Google provider schema', () => {
  it('should be checked against the provider major the Terraform requires', () => {
    const required = /source\s*=\s*"hashicorp\/google"\s*\n\s*version\s*=\s*"~> (\d+)\.0"/.exec(
      readFileSync(join(infra, 'envs/dev/versions.tf'), 'utf8'),
    );
    expect(required, 'envs/dev/versions.tf pins hashicorp/google').not.toBeNull();
    expect(schema.version.split('.')[0]).toBe(required![1]);
    expect(schema.resources.size).toBeGreaterThan(500);
  });

  it('should use only resource types, arguments and blocks the provider has, with every required argument', async () => {
    const problems: string[] = [];
    let checked = 0;
    for (const file of tfFiles(infra)) {
      const hcl = await parseHcl(file, readFileSync(file, 'utf8'));
      checked += Object.keys(hcl.resource ?? {}).filter((t) => t.startsWith('google_')).length;
      problems.push(...checkModule(relative(infra, file), hcl, schema));
    }
    expect(checked).toBeGreaterThan(20);
    expect(problems).toEqual([]);
  });

  // The check itself: each kind of mistake is found.
  it.each([
    [
      'an unknown resource type',
      'resource "google_cloud_run_v3_service" "s" {}',
      'has no resource type google_cloud_run_v3_service',
    ],
    [
      'a misspelt argument',
      'resource "google_pubsub_topic" "t" {\n name = "t"\n labelz = {}\n}',
      'unknown argument or block "labelz"',
    ],
    [
      'a missing required argument',
      'resource "google_pubsub_subscription" "s" {\n name = "s"\n}',
      'missing required argument "topic"',
    ],
    [
      'a misspelt argument in a nested block',
      'resource "google_cloud_run_v2_service" "s" {\n name = "s"\n location = "l"\n template {\n containers {\n imag = "x"\n }\n }\n}',
      'template.containers: unknown argument or block "imag"',
    ],
    [
      'a dynamic block the schema does not have',
      'resource "google_pubsub_topic" "t" {\n name = "t"\n dynamic "nope" {\n for_each = []\n content {}\n }\n}',
      'dynamic "nope" is not a block',
    ],
    ['an unknown data source', 'data "google_no_such_thing" "x" {}', 'has no data type google_no_such_thing'],
  ])('should report %s', async (_kind, src, expected) => {
    const problems = await problemsOf(src);
    expect(problems.join('\n')).toContain(expected);
  });

  it('should accept meta-arguments, dynamic blocks and other providers', async () => {
    const src = `
resource "google_pubsub_topic" "t" {
  count = 1
  name  = "t"
  dynamic "message_storage_policy" {
    for_each = ["x"]
    content { allowed_persistence_regions = ["europe-west1"] }
  }
  lifecycle { prevent_destroy = true }
  depends_on = [random_id.r]
}
resource "random_id" "r" { byte_length = 4 }`;
    expect(await problemsOf(src)).toEqual([]);
  });
});
