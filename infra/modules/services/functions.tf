# Cloud Functions gen2: one source bundle (functions/dist), two functions-framework targets.

locals {
  functions = {
    api = {
      name            = var.api_function_name
      entry_point     = "api"
      service_account = var.service_accounts.api
      # Only the load balancer (and the VPC) may call it; the app authenticates users itself.
      ingress         = "ALLOW_INTERNAL_AND_GCLB"
      timeout_seconds = var.api_timeout_seconds
      min_instances   = var.api_min_instances
      concurrency     = var.api_concurrency
    }
    sweep = {
      name            = var.sweep_function_name
      entry_point     = "sweep"
      service_account = var.service_accounts.sweep
      # Cloud Scheduler calls from outside the VPC; IAM admits only its account (OIDC).
      ingress         = "ALLOW_ALL"
      timeout_seconds = var.sweep_timeout_seconds
      min_instances   = 0
      concurrency     = 4 # an overrunning pass may overlap the next invocation
    }
  }

  # A function runs one container, so no collector sidecar: its spans and metrics go over OTLP
  # straight to Google's Telemetry API, carrying the service account's token (lib/telemetry/otlp.ts), and
  # every instance starts with the telemetry preload, which the functions framework's process
  # (run from the source directory) loads through NODE_OPTIONS (docs/deployment.md, Observability).
  # The apps make each request's server span; the preload's http instrumentation makes none.
  function_telemetry_env = {
    NODE_OPTIONS                = "--import=./telemetry-register.js"
    OTEL_HTTP_SERVER_SPANS      = "app"
    OTEL_EXPORTER_OTLP_ENDPOINT = "https://telemetry.googleapis.com"
    OTEL_EXPORTER_OTLP_AUTH     = "google"
  }
}

resource "google_cloudfunctions2_function" "this" {
  for_each = local.functions

  project  = var.project_id
  name     = each.value.name
  location = var.region

  build_config {
    # The Node LTS; cloudbuild.yaml deploys with the same --runtime and builds on the same major.
    runtime           = "nodejs24"
    entry_point       = each.value.entry_point
    service_account   = var.builder_service_account_id
    docker_repository = var.docker_repository_id

    source {
      storage_source {
        bucket = var.source_bucket
        object = google_storage_bucket_object.placeholder.name
      }
    }
  }

  service_config {
    service_account_email            = each.value.service_account
    ingress_settings                 = each.value.ingress
    timeout_seconds                  = each.value.timeout_seconds
    min_instance_count               = each.value.min_instances
    max_instance_count               = var.connections[each.key].max_instances
    max_instance_request_concurrency = each.value.concurrency
    available_cpu                    = "1" # concurrency above 1 needs a whole CPU
    available_memory                 = var.function_memory
    all_traffic_on_latest_revision   = true
    vpc_connector                    = var.vpc_connector_id
    vpc_connector_egress_settings    = "PRIVATE_RANGES_ONLY"
    # Both targets share one bundle: the resource names the function (service.name: job in Cloud Monitoring).
    # Each logs in to the database as its own service account (DB_IAM_AUTH: a token, no password).
    environment_variables = merge(local.env, local.function_telemetry_env, {
      DATABASE_URL             = var.database_urls[each.key]
      DB_IAM_AUTH              = "true"
      DB_POOL_MAX              = tostring(var.connections[each.key].pool)
      OTEL_RESOURCE_ATTRIBUTES = "service.name=${each.key},cloud.region=${var.region}"
    })

    dynamic "secret_environment_variables" {
      for_each = var.secret_ids
      content {
        key        = secret_environment_variables.key
        project_id = var.project_id
        secret     = secret_environment_variables.value
        version    = "latest"
      }
    }
  }

  lifecycle {
    # Cloud Build deploys new code (gcloud functions deploy --source=gs://...).
    ignore_changes = [build_config[0].source]
  }
}

# Gen2 functions are Cloud Run services; invocation is governed by run.invoker on them.
# allUsers is safe for api: ingress admits the load balancer only, which carries no identity.
resource "google_cloud_run_v2_service_iam_member" "api_invoker" {
  project  = var.project_id
  location = var.region
  name     = google_cloudfunctions2_function.this["api"].name
  role     = "roles/run.invoker"
  member   = "allUsers"
}

resource "google_cloud_run_v2_service_iam_member" "sweep_invoker" {
  project  = var.project_id
  location = var.region
  name     = google_cloudfunctions2_function.this["sweep"].name
  role     = "roles/run.invoker"
  member   = var.scheduler_member
}
