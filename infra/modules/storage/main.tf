# The audio bucket: segments, composed meeting audio, gap uploads. Never public: objects are
# read through V4 signed URLs, which the runtime service accounts sign through IAM signBlob.

resource "google_storage_bucket" "audio" {
  project                     = var.project_id
  name                        = var.bucket_name
  location                    = var.location
  storage_class               = "STANDARD"
  uniform_bucket_level_access = true
  public_access_prevention    = "enforced"
  force_destroy               = false

  # Objects are written once (create-only preconditions); old generations would only cost.
  versioning {
    enabled = false
  }

  lifecycle_rule {
    condition {
      age = 1
    }
    action {
      type = "AbortIncompleteMultipartUpload"
    }
  }

  # Segments are composed into one object when a recording is finalized (at the latest
  # RECORDING_GAP_UPLOAD_DEADLINE_SECONDS after stop); the pieces are kept a while for
  # investigation, then dropped.
  dynamic "lifecycle_rule" {
    for_each = var.segment_retention_days > 0 ? [1] : []
    content {
      condition {
        age            = var.segment_retention_days
        matches_prefix = [var.segment_prefix]
      }
      action {
        type = "Delete"
      }
    }
  }

  # Browser playback of signed URLs from the app's origins (range requests for seeking).
  cors {
    origin          = var.app_origins
    method          = ["GET", "HEAD"]
    response_header = ["Content-Type", "Content-Length", "Content-Range", "Accept-Ranges"]
    max_age_seconds = 3600
  }
}

# Read, write and delete objects; no control over the bucket or its IAM.
resource "google_storage_bucket_iam_member" "object_user" {
  for_each = var.object_users

  bucket = google_storage_bucket.audio.name
  role   = "roles/storage.objectUser"
  member = each.value
}
