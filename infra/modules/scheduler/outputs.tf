output "schedule" {
  value = google_cloud_scheduler_job.sweep.schedule
}

output "job_name" {
  description = "The sweep job's short name (npm run ops -- sweep --job)."
  value       = google_cloud_scheduler_job.sweep.name
}
