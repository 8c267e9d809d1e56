output "repository_id" {
  description = "projects/P/locations/R/repositories/NAME, as Cloud Functions' docker_repository wants it."
  value       = google_artifact_registry_repository.images.id
}

output "repository_url" {
  description = "REGION-docker.pkg.dev/PROJECT/NAME, the prefix of image names."
  value       = "${var.region}-docker.pkg.dev/${var.project_id}/${google_artifact_registry_repository.images.repository_id}"
}

output "bucket_name" {
  value = google_storage_bucket.sources.name
}
