output "api_function_name" {
  value = google_cloudfunctions2_function.this["api"].name
}

output "sweep_url" {
  value = google_cloudfunctions2_function.this["sweep"].url
}

output "live_service_name" {
  value = google_cloud_run_v2_service.live.name
}

output "sweep_interval_seconds" {
  description = "The effective RECORDING_GAP_SWEEP_INTERVAL_SECONDS."
  value       = tonumber(local.recording["RECORDING_GAP_SWEEP_INTERVAL_SECONDS"])
}

output "sweep_function_name" {
  value = google_cloudfunctions2_function.this["sweep"].name
}
