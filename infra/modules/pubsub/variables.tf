variable "project_id" {
  type = string
}

variable "project_number" {
  description = "Names the Pub/Sub service agent that moves dead letters."
  type        = string
}

variable "events_topic" {
  description = "PUBSUB_TOPIC_EVENTS."
  type        = string
  default     = "events"
}

variable "recording_finalized_topic" {
  description = "PUBSUB_TOPIC_RECORDING_FINALIZED."
  type        = string
  default     = "recording.finalized"
}

variable "max_delivery_attempts" {
  type    = number
  default = 10
}

# Member maps are keyed by static labels: for_each keys must be known at plan time.
variable "events_publishers" {
  type    = map(string)
  default = {}
}

variable "events_subscribers" {
  type    = map(string)
  default = {}
}

variable "finalized_publishers" {
  type    = map(string)
  default = {}
}

variable "ml_subscribers" {
  type    = map(string)
  default = {}
}
