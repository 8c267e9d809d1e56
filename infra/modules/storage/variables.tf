variable "project_id" {
  type = string
}

variable "bucket_name" {
  type = string
}

variable "location" {
  description = "Bucket location; the services' region keeps traffic regional."
  type        = string
}

variable "app_origins" {
  description = "Origins of the app allowed to play audio from signed URLs (CORS)."
  type        = list(string)
}

variable "segment_prefix" {
  description = "Object name prefix of live recording segments."
  type        = string
  default     = "segments/"
}

variable "segment_retention_days" {
  description = "Days after which segment objects are deleted; 0 keeps them."
  type        = number
  default     = 30
}

variable "object_users" {
  description = "Members that read and write objects, keyed by a static label (for_each keys must be known at plan)."
  type        = map(string)
  default     = {}
}
