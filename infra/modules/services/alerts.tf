# Alerts on the live service's metrics (lib/telemetry/metrics.ts), as Managed Service for Prometheus
# stores them (otel-collector.yaml): OTLP names with dots as underscores and unit suffixes.

resource "google_monitoring_alert_policy" "outbox_lag" {
  count                 = var.otel_enabled ? 1 : 0
  project               = var.project_id
  display_name          = "Outbox lag: unpublished events older than ${var.outbox_lag_alert_seconds} s"
  combiner              = "OR"
  notification_channels = var.alert_notification_channels

  conditions {
    display_name = "oldest unpublished outbox event"
    condition_prometheus_query_language {
      # Every live worker reads the same outbox: the max is the reading.
      query               = "max(outbox_oldest_unpublished_age_seconds) > ${var.outbox_lag_alert_seconds}"
      duration            = "300s"
      evaluation_interval = "60s"
    }
  }

  documentation {
    content   = "Events are not reaching Pub/Sub: check the sweep (it republishes every minute) and Pub/Sub. Clients catch up from the outbox meanwhile, but other instances' connections see events late."
    mime_type = "text/markdown"
  }
}

resource "google_monitoring_alert_policy" "ack_latency" {
  count                 = var.otel_enabled ? 1 : 0
  project               = var.project_id
  display_name          = "Live ack latency p99 above ${var.ack_latency_p99_alert_ms} ms"
  combiner              = "OR"
  notification_channels = var.alert_notification_channels

  conditions {
    display_name = "p99 of frame arrival to covering progress event"
    condition_prometheus_query_language {
      query               = "histogram_quantile(0.99, sum by (le) (rate(live_ack_latency_milliseconds_bucket[5m]))) > ${var.ack_latency_p99_alert_ms}"
      duration            = "300s"
      evaluation_interval = "60s"
    }
  }

  documentation {
    content   = "Frames take long to be stored and acknowledged: check object storage and database latency (db_client_connection_wait_time, db_client_connection_pending_requests) and live instance CPU."
    mime_type = "text/markdown"
  }
}
