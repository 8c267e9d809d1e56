# The dev environment: every module wired together. Apply order and first deploy are in
# docs/deployment.md.

data "google_project" "this" {
  project_id = var.project_id
}

locals {
  # What every core unit mounts; each is its own secret with its own value. While a rotation of the
  # service token lasts, the previous value is mounted too, so both are accepted (docs/deployment.md).
  # No database credential: each unit logs in to Cloud SQL as its service account.
  core_secrets = concat(
    ["IDENTITY_SECRET_KEY", "SERVICE_AUTH_TOKEN", "AUDIO_URL_SIGNING_KEY"],
    var.service_auth_token_rotation ? ["SERVICE_AUTH_TOKEN_PREVIOUS"] : [],
  )
}

module "apis" {
  source     = "../../modules/apis"
  project_id = var.project_id
}

module "iam" {
  source     = "../../modules/iam"
  project_id = var.project_id
  name       = var.name
  depends_on = [module.apis]
}

module "network" {
  source         = "../../modules/network"
  project_id     = var.project_id
  region         = var.region
  name           = var.name
  connector_name = "${var.name}-conn"
  depends_on     = [module.apis]
}

module "secrets" {
  source     = "../../modules/secrets"
  project_id = var.project_id
  accessors = merge(
    {
      api      = { member = module.iam.members.api, secrets = local.core_secrets }
      sweep    = { member = module.iam.members.sweep, secrets = local.core_secrets }
      live     = { member = module.iam.members.live, secrets = local.core_secrets }
      deployer = { member = module.iam.members.deployer, secrets = ["DATABASE_OWNER_URL"] }
    },
    # The ML service account gets exactly: these secrets, the ml-batch subscription (pubsub module)
    # and no bucket access: it reads a take's audio through the signed URL of GET
    # /meetings/{id}/audio-url (short-lived, one object, access checked by the core), not bucket IAM,
    # which would open every user's audio to it.
    var.ml_service_account_email == "" ? {} : {
      ml = {
        member  = "serviceAccount:${var.ml_service_account_email}"
        secrets = ["SERVICE_AUTH_TOKEN", "SERVICE_AUTH_TOKEN_PREVIOUS", "PROVIDER_A_API_KEY", "PROVIDER_B_API_KEY"]
      }
    },
  )
  depends_on = [module.apis]
}

# The database connection budget, in one place: each unit's instance limit, processes and pool
# go to the services from here, max_connections and pooling to the database, and the module
# refuses a plan whose worst case does not fit (docs/capacity.md, Connections).
module "connections" {
  source          = "../../modules/connections"
  tier            = var.db_tier
  max_connections = var.db_max_connections
  pooling         = var.db_pooling
  units = {
    api   = { max_instances = var.api_max_instances, processes = 1, pool = var.db_pool_max.api }
    sweep = { max_instances = 2, processes = 1, pool = var.db_pool_max.sweep }
    live  = { max_instances = var.live_max_instances, processes = var.live_cpu, pool = var.db_pool_max.live }
  }
}

module "database" {
  source              = "../../modules/database"
  project_id          = var.project_id
  region              = var.region
  instance_name       = "${var.name}-core"
  tier                = var.db_tier
  availability_type   = var.db_availability_type
  max_connections     = module.connections.max_connections
  pooling             = module.connections.pooling
  network_id          = module.network.network_id
  owner_url_secret_id = module.secrets.resource_ids["DATABASE_OWNER_URL"]
  deletion_protection = var.deletion_protection
  runtime_accounts = {
    api   = module.iam.emails.api
    sweep = module.iam.emails.sweep
    live  = module.iam.emails.live
  }
}

module "storage" {
  source      = "../../modules/storage"
  project_id  = var.project_id
  bucket_name = "${var.project_id}-${var.name}-audio"
  location    = var.region
  app_origins = var.app_origins
  object_users = {
    api   = module.iam.members.api
    sweep = module.iam.members.sweep
    live  = module.iam.members.live
  }
  depends_on = [module.apis]
}

module "pubsub" {
  source         = "../../modules/pubsub"
  project_id     = var.project_id
  project_number = data.google_project.this.number
  events_publishers = {
    api   = module.iam.members.api
    sweep = module.iam.members.sweep
    live  = module.iam.members.live
  }
  events_subscribers = { live = module.iam.members.live }
  # Finalize runs in the function bundle (sweep, and api when a gap upload completes it).
  finalized_publishers = {
    api   = module.iam.members.api
    sweep = module.iam.members.sweep
  }
  ml_subscribers = var.ml_service_account_email == "" ? {} : { ml = "serviceAccount:${var.ml_service_account_email}" }
  depends_on     = [module.apis]
}

module "firestore" {
  source            = "../../modules/firestore"
  project_id        = var.project_id
  location_id       = coalesce(var.firestore_location, var.region)
  delete_protection = var.deletion_protection
  depends_on        = [module.apis]
}

module "artifacts" {
  source        = "../../modules/artifacts"
  project_id    = var.project_id
  region        = var.region
  repository_id = "${var.name}-core"
  bucket_name   = "${var.project_id}-${var.name}-sources"
  image_writers = {
    deployer = module.iam.members.deployer
    builder  = module.iam.members.builder
  }
  source_writers = { deployer = module.iam.members.deployer }
  source_readers = { builder = module.iam.members.builder }
  depends_on     = [module.apis]
}

module "services" {
  source     = "../../modules/services"
  project_id = var.project_id
  region     = var.region

  service_accounts = {
    api   = module.iam.emails.api
    sweep = module.iam.emails.sweep
    live  = module.iam.emails.live
  }
  builder_service_account_id = module.iam.ids.builder
  scheduler_member           = module.iam.members.scheduler

  vpc_connector_id     = module.network.connector_id
  docker_repository_id = module.artifacts.repository_id
  source_bucket        = module.artifacts.bucket_name

  secret_ids    = { for name in local.core_secrets : name => module.secrets.ids[name] }
  database_urls = module.database.runtime_urls

  app_env                     = var.app_env
  log_level                   = var.log_level
  otel_enabled                = var.otel_enabled
  otel_endpoint               = var.otel_endpoint
  alert_notification_channels = var.alert_notification_channels
  storage_bucket              = module.storage.bucket_name
  events_topic                = module.pubsub.events_topic
  recording_finalized_topic   = module.pubsub.recording_finalized_topic
  ml_service_url              = var.ml_service_url
  ml_service_account_email    = var.ml_service_account_email
  public_base_url             = "https://${var.domain}"
  identity_jwks_url           = var.identity_jwks_url
  identity_issuer             = var.identity_issuer
  identity_audience           = var.identity_audience
  recording_settings          = var.recording_settings
  app_origins                 = var.app_origins

  connections           = module.connections.units
  live_cpu              = var.live_cpu
  sweep_timeout_seconds = var.sweep_timeout_seconds
  live_min_instances    = var.live_min_instances
  deletion_protection   = var.deletion_protection

  # A revision starts only when its database user exists (the database module) and its roles on
  # bucket, topics and Firestore are in place.
  depends_on = [module.secrets, module.database, module.iam, module.storage, module.pubsub, module.firestore]
}

module "scheduler" {
  source                   = "../../modules/scheduler"
  project_id               = var.project_id
  region                   = var.region
  name                     = "${var.name}-sweep"
  sweep_url                = module.services.sweep_url
  invoker_email            = module.iam.emails.scheduler
  interval_seconds         = module.services.sweep_interval_seconds
  attempt_deadline_seconds = var.sweep_timeout_seconds + 20
}

module "gateway" {
  source            = "../../modules/gateway"
  project_id        = var.project_id
  region            = var.region
  name              = "${var.name}-lb"
  domains           = [var.domain]
  api_function_name = module.services.api_function_name
  live_service_name = module.services.live_service_name

  rate_limit_exempt_ip_ranges = var.rate_limit_exempt_ip_ranges
  ml_rate_limit               = var.ml_rate_limit
}
