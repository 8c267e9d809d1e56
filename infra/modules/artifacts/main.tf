# Where builds put what they deploy: the live service's images and the function source
# bundles (one zip per build), plus the images Cloud Functions builds from those bundles.

resource "google_artifact_registry_repository" "images" {
  project       = var.project_id
  location      = var.region
  repository_id = var.repository_id
  format        = "DOCKER"

  # Rollback needs recent images; older ones only cost. KEEP wins over DELETE.
  cleanup_policies {
    id     = "keep-recent"
    action = "KEEP"
    most_recent_versions {
      keep_count = var.keep_images
    }
  }

  cleanup_policies {
    id     = "delete-old"
    action = "DELETE"
    condition {
      older_than = "2592000s" # 30 days
    }
  }
}

resource "google_storage_bucket" "sources" {
  project                     = var.project_id
  name                        = var.bucket_name
  location                    = var.region
  uniform_bucket_level_access = true
  public_access_prevention    = "enforced"

  lifecycle_rule {
    condition {
      age            = var.source_retention_days
      matches_prefix = ["functions/"]
    }
    action {
      type = "Delete"
    }
  }
}

resource "google_artifact_registry_repository_iam_member" "writer" {
  for_each = var.image_writers

  project    = var.project_id
  location   = google_artifact_registry_repository.images.location
  repository = google_artifact_registry_repository.images.name
  role       = "roles/artifactregistry.writer"
  member     = each.value
}

resource "google_storage_bucket_iam_member" "source_writer" {
  for_each = var.source_writers

  bucket = google_storage_bucket.sources.name
  role   = "roles/storage.objectUser"
  member = each.value
}

resource "google_storage_bucket_iam_member" "source_reader" {
  for_each = var.source_readers

  bucket = google_storage_bucket.sources.name
  role   = "roles/storage.objectViewer"
  member = each.value
}
