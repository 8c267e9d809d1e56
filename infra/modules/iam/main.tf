# One service account per unit, each with only what it uses. Resource-level grants (secrets,
# bucket, topics, invokers, repository) live with their resources; this module holds the
# accounts, the few project-level roles, and the grants on the accounts themselves.

locals {
  accounts = {
    api       = "REST API function"
    sweep     = "Gap-deadline sweep function"
    live      = "Live WebSocket service (Cloud Run)"
    scheduler = "Cloud Scheduler caller of the sweep (OIDC)"
    deployer  = "Cloud Build: schema apply and deploys"
    builder   = "Cloud Functions source builds"
  }

  telemetry = ["roles/logging.logWriter", "roles/monitoring.metricWriter", "roles/cloudtrace.agent"]

  # The functions export OTLP to the Telemetry API (telemetry.googleapis.com) themselves; the
  # live service's collector writes through the Monitoring and Trace APIs (the roles above).
  otlp_writers = ["roles/telemetry.metricsWriter", "roles/telemetry.tracesWriter"]

  # instanceUser: log in with a token; client: reach the instance (connect, instances.get).
  database_login = ["roles/cloudsql.instanceUser", "roles/cloudsql.client"]

  project_roles = concat(
    flatten([for unit in ["api", "sweep", "live"] : [for role in local.telemetry : { unit = unit, role = role }]]),
    flatten([for unit in ["api", "sweep"] : [for role in local.otlp_writers : { unit = unit, role = role }]]),
    # Each runtime unit logs in to Cloud SQL as itself (IAM database authentication).
    flatten([for unit in ["api", "sweep", "live"] : [for role in local.database_login : { unit = unit, role = role }]]),
    [
      { unit = "live", role = "roles/datastore.user" }, # Firestore leases and presence
      # Events go to the topic of each live instance holding the user (created at run time, so
      # granted on the project), found by reading presence.
      { unit = "api", role = "roles/pubsub.publisher" },
      { unit = "sweep", role = "roles/pubsub.publisher" },
      { unit = "api", role = "roles/datastore.viewer" },
      { unit = "sweep", role = "roles/datastore.viewer" },
      { unit = "deployer", role = "roles/run.developer" },
      { unit = "deployer", role = "roles/cloudfunctions.developer" },
      { unit = "deployer", role = "roles/cloudsql.client" }, # Auth Proxy for the schema step
      { unit = "deployer", role = "roles/logging.logWriter" },
      # npm run ops -- sweep: run the sweep job now and read its outcome (no per-job IAM exists).
      { unit = "deployer", role = "roles/cloudscheduler.jobRunner" },
      { unit = "deployer", role = "roles/cloudscheduler.viewer" },
      { unit = "builder", role = "roles/logging.logWriter" },
    ],
  )

  # Deploying a unit that runs as an account needs actAs on that account.
  deployer_acts_as = ["api", "sweep", "live", "builder"]

  # Units that produce signed storage URLs sign through IAM signBlob as themselves.
  signers = ["api", "live"]
}

resource "google_service_account" "this" {
  for_each = local.accounts

  project      = var.project_id
  account_id   = "${var.name}-${each.key}"
  display_name = "${var.name}: ${each.value}"
}

# Each live instance creates (and on shutdown deletes) a topic of its own and its subscription
# (targeted event fan-out), and publishes to the topics of the other instances holding a user.
resource "google_project_iam_custom_role" "live_subscriptions" {
  project     = var.project_id
  role_id     = "${replace(var.name, "-", "_")}_live_subscriptions"
  title       = "${var.name} live instance subscriptions"
  description = "Create, read, consume and delete per-instance Pub/Sub topics and subscriptions; publish to them."
  permissions = [
    "pubsub.topics.attachSubscription",
    "pubsub.topics.create",
    "pubsub.topics.delete",
    "pubsub.topics.listSubscriptions",
    "pubsub.topics.publish",
    "pubsub.subscriptions.consume",
    "pubsub.subscriptions.create",
    "pubsub.subscriptions.delete",
    "pubsub.subscriptions.get",
  ]
}

# for_each keys must be known at plan time, so the custom role (id known after apply) is
# granted on its own.
resource "google_project_iam_member" "live_subscriptions" {
  project = var.project_id
  role    = google_project_iam_custom_role.live_subscriptions.id
  member  = google_service_account.this["live"].member
}

# The sweep deletes the topic and subscription of a live instance that died without shutting
# down (its Firestore mark lapsed; datastore.viewer above reads the marks).
resource "google_project_iam_custom_role" "sweep_instance_topics" {
  project     = var.project_id
  role_id     = "${replace(var.name, "-", "_")}_sweep_instance_topics"
  title       = "${var.name} sweep of dead live instances' topics"
  description = "List Pub/Sub topics; delete a dead live instance's topic and subscriptions."
  permissions = [
    "pubsub.topics.list",
    "pubsub.topics.listSubscriptions",
    "pubsub.topics.delete",
    "pubsub.subscriptions.delete",
  ]
}

resource "google_project_iam_member" "sweep_instance_topics" {
  project = var.project_id
  role    = google_project_iam_custom_role.sweep_instance_topics.id
  member  = google_service_account.this["sweep"].member
}

resource "google_project_iam_member" "this" {
  for_each = { for g in local.project_roles : "${g.unit}/${g.role}" => g }

  project = var.project_id
  role    = each.value.role
  member  = google_service_account.this[each.value.unit].member
}

resource "google_service_account_iam_member" "self_signer" {
  for_each = toset(local.signers)

  service_account_id = google_service_account.this[each.key].name
  role               = "roles/iam.serviceAccountTokenCreator"
  member             = google_service_account.this[each.key].member
}

resource "google_service_account_iam_member" "deployer_acts_as" {
  for_each = toset(local.deployer_acts_as)

  service_account_id = google_service_account.this[each.key].name
  role               = "roles/iam.serviceAccountUser"
  member             = google_service_account.this["deployer"].member
}
