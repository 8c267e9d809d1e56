# Topics: each live instance creates a topic of its own, `events.<instance>`, at start and
# deletes it on shutdown (infra/modules/iam grants that; lib/fanout/topics.ts); `events` is
# their name prefix and no longer carries traffic itself (the broadcast design that used it left
# the deployable; dropping it is a separate, destructive change). `recording.finalized` carries
# finalized recordings to the ML batch worker, whose subscription dead-letters poison
# messages instead of retrying them forever.

resource "google_pubsub_topic" "events" {
  project = var.project_id
  name    = var.events_topic

  # A broadcast is worthless once its clients moved on; a day allows seeking for diagnosis.
  message_retention_duration = "86400s"
}

resource "google_pubsub_topic" "recording_finalized" {
  project                    = var.project_id
  name                       = var.recording_finalized_topic
  message_retention_duration = "604800s"
}

resource "google_pubsub_topic" "recording_finalized_dead_letter" {
  project                    = var.project_id
  name                       = "${var.recording_finalized_topic}.dead-letter"
  message_retention_duration = "604800s"
}

resource "google_pubsub_subscription" "ml_batch" {
  project                    = var.project_id
  name                       = "${var.recording_finalized_topic}.ml-batch"
  topic                      = google_pubsub_topic.recording_finalized.id
  ack_deadline_seconds       = 600
  message_retention_duration = "604800s"

  expiration_policy {
    ttl = "" # never expires, even while the worker is down
  }

  retry_policy {
    minimum_backoff = "10s"
    maximum_backoff = "600s"
  }

  dead_letter_policy {
    dead_letter_topic     = google_pubsub_topic.recording_finalized_dead_letter.id
    max_delivery_attempts = var.max_delivery_attempts
  }
}

# Holds dead letters until someone looks at them (a topic alone keeps nothing).
resource "google_pubsub_subscription" "dead_letter_hold" {
  project                    = var.project_id
  name                       = "${var.recording_finalized_topic}.dead-letter.hold"
  topic                      = google_pubsub_topic.recording_finalized_dead_letter.id
  message_retention_duration = "604800s"

  expiration_policy {
    ttl = ""
  }
}

# Dead-lettering is done by the Pub/Sub service agent, which must publish to the dead-letter
# topic and acknowledge on the source subscription.
locals {
  pubsub_agent = "serviceAccount:service-${var.project_number}@gcp-sa-pubsub.iam.gserviceaccount.com"
}

resource "google_pubsub_topic_iam_member" "dead_letter_publisher" {
  project = var.project_id
  topic   = google_pubsub_topic.recording_finalized_dead_letter.name
  role    = "roles/pubsub.publisher"
  member  = local.pubsub_agent
}

resource "google_pubsub_subscription_iam_member" "dead_letter_subscriber" {
  project      = var.project_id
  subscription = google_pubsub_subscription.ml_batch.name
  role         = "roles/pubsub.subscriber"
  member       = local.pubsub_agent
}

resource "google_pubsub_topic_iam_member" "events_publisher" {
  for_each = var.events_publishers

  project = var.project_id
  topic   = google_pubsub_topic.events.name
  role    = "roles/pubsub.publisher"
  member  = each.value
}

# Includes pubsub.topics.attachSubscription: live instances attach their own subscriptions.
resource "google_pubsub_topic_iam_member" "events_subscriber" {
  for_each = var.events_subscribers

  project = var.project_id
  topic   = google_pubsub_topic.events.name
  role    = "roles/pubsub.subscriber"
  member  = each.value
}

resource "google_pubsub_topic_iam_member" "finalized_publisher" {
  for_each = var.finalized_publishers

  project = var.project_id
  topic   = google_pubsub_topic.recording_finalized.name
  role    = "roles/pubsub.publisher"
  member  = each.value
}

resource "google_pubsub_subscription_iam_member" "ml_batch_subscriber" {
  for_each = var.ml_subscribers

  project      = var.project_id
  subscription = google_pubsub_subscription.ml_batch.name
  role         = "roles/pubsub.subscriber"
  member       = each.value
}
