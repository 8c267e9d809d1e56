# The collector path: the live service runs the OpenTelemetry Collector as a Cloud Run sidecar
# (live.tf), its configuration (otel-collector.yaml) mounted from Secret Manager as Cloud Run
# requires for sidecar files. The Cloud Functions (api, sweep) cannot have sidecars: see
# docs/deployment.md, "Observability".

resource "google_secret_manager_secret" "otel_collector_config" {
  count     = var.otel_enabled ? 1 : 0
  project   = var.project_id
  secret_id = "otel-collector-config"

  replication {
    auto {}
  }
}

resource "google_secret_manager_secret_version" "otel_collector_config" {
  count       = var.otel_enabled ? 1 : 0
  secret      = google_secret_manager_secret.otel_collector_config[0].id
  secret_data = file("${path.module}/otel-collector.yaml")
}

resource "google_secret_manager_secret_iam_member" "otel_collector_config_live" {
  count     = var.otel_enabled ? 1 : 0
  project   = var.project_id
  secret_id = google_secret_manager_secret.otel_collector_config[0].secret_id
  role      = "roles/secretmanager.secretAccessor"
  member    = "serviceAccount:${var.service_accounts.live}"
}
