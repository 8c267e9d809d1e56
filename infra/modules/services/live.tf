# The live WebSocket service. A WebSocket is one request for its whole life, so: the longest
# request timeout Cloud Run allows (the server advises reconnecting at
# LIVE_CONNECTION_LIFETIME_SECONDS, before the platform cuts), concurrency sized for many
# mostly idle connections, session affinity so a reconnect tends to find its instance, and
# instance-based billing (cpu_idle = false) because the Pub/Sub subscriber, lease heartbeats
# and segment flush timers run outside requests. At least one instance stays up so broadcasts
# always have a subscriber. The same always-on instances deliver webhooks (docs/webhooks.md):
# their dispatchers lease work in Postgres and send over the default internet egress; private
# ranges go to the VPC connector, which is why a webhook URL resolving to one is refused.
#
# Node runs JavaScript on one core per process, so the server forks one worker per vCPU
# (LIVE_WORKERS = live_cpu), each a full live instance; concurrency and the database pool are
# per worker times the workers.

locals {
  # Cloud Run allows at most 1000 concurrent requests per instance.
  live_concurrency = min(1000, var.live_connections_per_cpu * var.live_cpu)
}

resource "google_cloud_run_v2_service" "live" {
  project             = var.project_id
  name                = var.live_service_name
  location            = var.region
  ingress             = "INGRESS_TRAFFIC_INTERNAL_LOAD_BALANCER"
  deletion_protection = var.deletion_protection

  template {
    service_account                  = var.service_accounts.live
    timeout                          = "3600s"
    session_affinity                 = true
    max_instance_request_concurrency = local.live_concurrency
    execution_environment            = "EXECUTION_ENVIRONMENT_GEN2"

    scaling {
      min_instance_count = var.live_min_instances
      max_instance_count = var.connections.live.max_instances
    }

    vpc_access {
      connector = var.vpc_connector_id
      egress    = "PRIVATE_RANGES_ONLY"
    }

    containers {
      name  = "live"
      image = var.live_image
      # Its OTLP exports go to the collector sidecar (otel.tf) on localhost:4318.
      depends_on = var.otel_enabled ? ["otel-collector"] : []

      ports {
        container_port = 8080
      }

      resources {
        limits = {
          cpu    = tostring(var.live_cpu)
          memory = var.live_memory
        }
        cpu_idle          = false
        startup_cpu_boost = true
      }

      dynamic "env" {
        for_each = local.env
        content {
          name  = env.key
          value = env.value
        }
      }

      env {
        name  = "LIVE_WORKERS"
        value = tostring(var.live_cpu)
      }

      # Per worker process.
      env {
        name  = "DB_POOL_MAX"
        value = tostring(var.connections.live.pool)
      }

      # Its own IAM database user (a token, no password).
      env {
        name  = "DATABASE_URL"
        value = var.database_urls.live
      }

      env {
        name  = "DB_IAM_AUTH"
        value = "true"
      }

      dynamic "env" {
        for_each = var.secret_ids
        content {
          name = env.key
          value_source {
            secret_key_ref {
              secret  = env.value
              version = "latest"
            }
          }
        }
      }

      # Readiness (google provider 6 has no readiness_probe for Cloud Run v2): a new instance
      # takes traffic once /readyz answers 200, i.e. it accepts connections and its database
      # answers within 1 s. Liveness stays /healthz: a database outage must not restart the
      # instances that hold live recordings (they buffer and answer 503 meanwhile).
      startup_probe {
        http_get {
          path = "/readyz"
        }
        period_seconds    = 2
        timeout_seconds   = 2
        failure_threshold = 30
      }

      liveness_probe {
        http_get {
          path = "/healthz"
        }
        period_seconds    = 30
        timeout_seconds   = 5
        failure_threshold = 3
      }
    }

    # The OpenTelemetry Collector sidecar (otel.tf, otel-collector.yaml): metrics to Managed
    # Service for Prometheus, spans to Cloud Trace. CPU is always allocated (cpu_idle above), so
    # its batches leave between requests too.
    dynamic "containers" {
      for_each = var.otel_enabled ? [1] : []
      content {
        name  = "otel-collector"
        image = var.otel_collector_image
        args  = ["--config=/etc/otelcol-google/config.yaml"]

        resources {
          limits = {
            cpu    = "1"
            memory = "512Mi"
          }
        }

        volume_mounts {
          name       = "otel-collector-config"
          mount_path = "/etc/otelcol-google/"
        }

        startup_probe {
          http_get {
            port = 13133
          }
          period_seconds    = 2
          failure_threshold = 30
        }
      }
    }

    dynamic "volumes" {
      for_each = var.otel_enabled ? [1] : []
      content {
        name = "otel-collector-config"
        secret {
          secret = google_secret_manager_secret.otel_collector_config[0].secret_id
          items {
            version = "latest"
            path    = "config.yaml"
          }
        }
      }
    }
  }

  depends_on = [google_secret_manager_secret_version.otel_collector_config, google_secret_manager_secret_iam_member.otel_collector_config_live]

  lifecycle {
    # Cloud Build deploys new images (gcloud run deploy), which also sets client fields.
    ignore_changes = [client, client_version, template[0].containers[0].image]
  }
}

# Ingress admits the load balancer only, which carries no identity; users authenticate
# in the WebSocket handshake.
resource "google_cloud_run_v2_service_iam_member" "live_invoker" {
  project  = var.project_id
  location = var.region
  name     = google_cloud_run_v2_service.live.name
  role     = "roles/run.invoker"
  member   = "allUsers"
}
