# Calls the sweep every RECORDING_GAP_SWEEP_INTERVAL_SECONDS, as closely as cron allows.
#
# Cloud Scheduler's finest granularity is one minute, the spec's default interval is 30 s.
# Two jobs cannot be offset by 30 s, and sub-minute cron does not exist, so: one job per
# minute (or every N minutes when the interval is longer), and the request body tells the
# sweep how long the period is ({"period_seconds": 60}); the sweep runs one pass at once and
# further passes every RECORDING_GAP_SWEEP_INTERVAL_SECONDS until the period is over
# (passes at 0 s and 30 s by default). Passes are idempotent (finalize-once), so an overrun
# overlapping the next invocation is harmless.

locals {
  period_minutes = max(1, ceil(var.interval_seconds / 60))
  schedule       = local.period_minutes == 1 ? "* * * * *" : "*/${local.period_minutes} * * * *"
}

resource "google_cloud_scheduler_job" "sweep" {
  project          = var.project_id
  region           = var.region
  name             = var.name
  description      = "Gap-deadline sweep: finalize recordings, republish unpublished outbox rows."
  schedule         = local.schedule
  time_zone        = "Etc/UTC"
  attempt_deadline = "${var.attempt_deadline_seconds}s"

  # The next tick retries anyway.
  retry_config {
    retry_count = 0
  }

  http_target {
    http_method = "POST"
    uri         = var.sweep_url
    headers     = { "Content-Type" = "application/json" }
    body        = base64encode(jsonencode({ period_seconds = local.period_minutes * 60 }))

    oidc_token {
      service_account_email = var.invoker_email
      audience              = var.sweep_url
    }
  }
}
