output "schedule" {
  value = google_cloud_scheduler_job.sweep.schedule
}
