output "events_topic" {
  value = google_pubsub_topic.events.name
}

output "recording_finalized_topic" {
  value = google_pubsub_topic.recording_finalized.name
}

output "ml_subscription" {
  value = google_pubsub_subscription.ml_batch.name
}
